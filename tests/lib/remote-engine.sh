#!/usr/bin/env bash
# remote-engine.sh - a second dockerd on loopback for the remote-engine tests.
#
#   remote-engine.sh start DIR PORT   certificates (made here with openssl),
#                                     then dockerd on tcp://127.0.0.1:PORT with
#                                     --tlsverify, and on unix://DIR/sock
#   remote-engine.sh restart DIR PORT dockerd again with DIR's certificates and data
#                                     (after it was killed: an engine coming back)
#   remote-engine.sh stop DIR         stops that dockerd, removes DIR
#
# REMOTE_ENGINE_DATA=PATH (start) keeps the engine's data root there instead of
# in DIR, and stop leaves it: images loaded once stay for the next run (one run
# at a time may use a PATH).
#
# DIR gets: ca.pem (the engine's CA), client/{ca,cert,key}.pem (a DOCKER_CERT_PATH),
# other/{ca,cert,key}.pem (a CA and client cert the engine does not know),
# noclient/ca.pem (the right CA, no client certificate), sock, dockerd.log.
# The dockerd shares the system containerd under its own namespace, so it sees
# none of the system engine's containers and they none of its.
set -euo pipefail

cmd=$1 dir=$2

mkcert() { # name cn ext ca-prefix
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1-key.pem" \
		-out "$1.csr" -subj "/CN=$2" 2>/dev/null
	openssl x509 -req -in "$1.csr" -CA "$4.pem" -CAkey "$4-key.pem" -CAcreateserial -out "$1-cert.pem" \
		-days 2 -extfile <(printf '%s\n' "$3") 2>/dev/null
}

mkca() { # prefix cn
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$1-key.pem" \
		-out "$1.pem" -days 2 -subj "/CN=$2" 2>/dev/null
}

# dockerd on DIR's certificates and data root; waits until it answers
launch() { # port
	local port=$1 data ns=sandbox-mcp-remote-$1
	data=$(cat "$dir/data-root")
	setsid dockerd --data-root "$data" --exec-root "$dir/exec" --pidfile "$dir/pid" \
		--containerd /run/docker/containerd/containerd.sock --containerd-namespace "$ns" \
		--containerd-plugins-namespace "$ns-plugins" \
		-H "tcp://127.0.0.1:$port" -H "unix://$dir/sock" \
		--tlsverify --tlscacert "$dir/pki/ca.pem" --tlscert "$dir/pki/server-cert.pem" \
		--tlskey "$dir/pki/server-key.pem" --bridge=none --iptables=false --ip-masq=false \
		--storage-driver overlay2 >>"$dir/dockerd.log" 2>&1 </dev/null &
	for _ in $(seq 1 120); do
		if docker -H "unix://$dir/sock" version >/dev/null 2>&1; then return 0; fi
		sleep 0.5
	done
	echo "the second dockerd did not start; its log:" >&2
	tail -20 "$dir/dockerd.log" >&2
	return 1
}

case $cmd in
restart)
	launch "$3"
	;;
start)
	port=$3
	mkdir -p "$dir"/{pki,client,other,noclient,data,exec}
	if [ -n "${REMOTE_ENGINE_DATA:-}" ]; then
		mkdir -p "$REMOTE_ENGINE_DATA"
		echo "$REMOTE_ENGINE_DATA" >"$dir/data-root"
	else
		echo "$dir/data" >"$dir/data-root"
	fi
	cd "$dir/pki"
	mkca ca sandbox-mcp-test-ca
	mkca otherca sandbox-mcp-other-ca
	mkcert server 127.0.0.1 $'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth' ca
	mkcert client client $'extendedKeyUsage=clientAuth' ca
	mkcert otherclient client $'extendedKeyUsage=clientAuth' otherca
	cp ca.pem "$dir/ca.pem"
	cp ca.pem ../client/ca.pem; cp client-cert.pem ../client/cert.pem; cp client-key.pem ../client/key.pem
	cp otherca.pem ../other/ca.pem; cp otherclient-cert.pem ../other/cert.pem; cp otherclient-key.pem ../other/key.pem
	cp ca.pem ../noclient/ca.pem
	cd "$dir"
	launch "$port"
	;;
stop)
	if [ -f "$dir/pid" ]; then
		pid=$(cat "$dir/pid")
		if [ -S "$dir/sock" ]; then
			ids=$(docker -H "unix://$dir/sock" ps -aq 2>/dev/null || true)
			[ -z "$ids" ] || docker -H "unix://$dir/sock" rm -f $ids >/dev/null 2>&1 || true
		fi
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
	fi
	# a kept data root (REMOTE_ENGINE_DATA) is left for the next run; dockerd unmounted its layers
	umount -R "$dir/data" 2>/dev/null || true
	umount -R "$dir/exec" 2>/dev/null || true
	rm -rf "$dir"
	;;
*)
	echo "usage: $0 start DIR PORT | restart DIR PORT | stop DIR" >&2
	exit 2
	;;
esac
