#!/bin/sh
# run.sh NODE TEST_FILE - runs the clients suite in a network namespace of its
# own that has only loopback, when the machine allows one (root, unshare and
# ip), so no client can reach anything beyond 127.0.0.1 whatever it tries
# (update checks, catalogs, telemetry): such a call fails at once instead of
# leaving the machine. The Docker engine's unix socket works across
# namespaces. Elsewhere it runs as is, with every client configured for
# loopback only.
node=$1
file=$2
if command -v unshare >/dev/null 2>&1 && command -v ip >/dev/null 2>&1 &&
	unshare -n ip link set lo up 2>/dev/null; then
	exec unshare -n sh -c 'ip link set lo up && exec "$0" --test --test-reporter=spec "$1"' "$node" "$file"
fi
echo "run.sh: no network namespace here; running with the host's network (clients are set to loopback)" >&2
exec "$node" --test --test-reporter=spec "$file"
