#!/usr/bin/env bash
# remote-sshd.sh - an sshd on loopback for the ssh:// engine tests.
#
#   remote-sshd.sh start DIR PORT   host key, client key and authorized_keys made
#                                   here; sshd on 127.0.0.1:PORT; DIR/bin/ssh, a
#                                   wrapper that runs ssh with DIR's config and
#                                   logs each start to DIR/spawns
#   remote-sshd.sh stop DIR         stops that sshd, removes DIR
#
# The wrapper's config is $SBX_SSH_CONFIG if set (the tests point it at
# DIR/ssh_config.nohostkey or DIR/ssh_config.wrongkey to provoke failures).
# The remote side is this machine: `docker system dial-stdio` there reaches
# the system engine.
set -euo pipefail

cmd=$1 dir=$2

case $cmd in
start)
	port=$3
	mkdir -p "$dir/bin"
	chmod 700 "$dir"
	ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
	ssh-keygen -q -t ed25519 -N '' -f "$dir/client_key"
	ssh-keygen -q -t ed25519 -N '' -f "$dir/other_key"
	cp "$dir/client_key.pub" "$dir/authorized_keys"
	printf '[127.0.0.1]:%s %s\n' "$port" "$(cat "$dir/host_key.pub")" >"$dir/known_hosts"
	: >"$dir/known_hosts.empty"
	cat >"$dir/sshd_config" <<CFG
Port $port
ListenAddress 127.0.0.1
HostKey $dir/host_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
MaxStartups 100
MaxSessions 100
CFG
	client_cfg() { # known_hosts identity
		printf 'Host *\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n' "$2" "$1"
	}
	client_cfg "$dir/known_hosts" "$dir/client_key" >"$dir/ssh_config"
	client_cfg "$dir/known_hosts.empty" "$dir/client_key" >"$dir/ssh_config.nohostkey"
	client_cfg "$dir/known_hosts" "$dir/other_key" >"$dir/ssh_config.wrongkey"
	cat >"$dir/bin/ssh" <<WRAP
#!/bin/sh
echo "\$\$" >>"$dir/spawns"
exec /usr/bin/ssh -F "\${SBX_SSH_CONFIG:-$dir/ssh_config}" "\$@"
WRAP
	chmod +x "$dir/bin/ssh"
	: >"$dir/spawns"
	mkdir -p /run/sshd # privilege separation directory (the ssh service makes it at boot)
	/usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log"
	for _ in $(seq 1 40); do
		if [ -s "$dir/sshd.pid" ]; then exit 0; fi
		sleep 0.25
	done
	echo "sshd did not start; its log:" >&2
	tail -20 "$dir/sshd.log" >&2
	exit 1
	;;
stop)
	if [ -s "$dir/sshd.pid" ]; then
		pid=$(cat "$dir/sshd.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
	fi
	rm -rf "$dir"
	;;
*)
	echo "usage: $0 start DIR PORT | stop DIR" >&2
	exit 2
	;;
esac
