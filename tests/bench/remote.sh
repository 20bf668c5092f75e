#!/usr/bin/env bash
# remote.sh - the bench's "remote" rows (run_command and 50 MiB transfers
# beside docker exec/cp) over each endpoint kind, in one run: the unix socket,
# a second dockerd on loopback with TLS, and ssh:// through an sshd on
# loopback. Reuses the integration tests' helpers
# (tests/lib/remote-engine.sh, remote-sshd.sh). Needs root.
#
#   tests/bench/remote.sh [BUILD_DIR] [ROUNDS]   (default build, 10)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${1:-$here/build}" && pwd)
rounds=${2:-10}
lib=$here/tests/lib
tls_port=$((27000 + $$ % 1000)) ssh_port=$((28000 + $$ % 1000))
tls_dir=/tmp/sandbox-mcp-bench-tls-$$ ssh_dir=/tmp/sandbox-mcp-bench-ssh-$$
image=debian:bookworm-slim # small: it is loaded into the TLS engine's store

cleanup() {
	"$lib/remote-engine.sh" stop "$tls_dir" >/dev/null 2>&1 || true
	"$lib/remote-sshd.sh" stop "$ssh_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$lib/remote-engine.sh" start "$tls_dir" "$tls_port"
docker save "$image" | docker -H "unix://$tls_dir/sock" load -q >/dev/null
"$lib/remote-sshd.sh" start "$ssh_dir" "$ssh_port"

bench() { env SANDBOX_IMAGE=$image "$@" "$build/tests/bench" "$build/src/sandbox-mcp" "$rounds" remote; }
bench DOCKER_HOST=unix:///var/run/docker.sock DOCKER_TLS_VERIFY= DOCKER_CERT_PATH=
bench DOCKER_HOST=tcp://127.0.0.1:$tls_port DOCKER_TLS_VERIFY=1 DOCKER_CERT_PATH=$tls_dir/client
bench DOCKER_HOST=ssh://root@127.0.0.1:$ssh_port DOCKER_TLS_VERIFY= DOCKER_CERT_PATH= PATH=$ssh_dir/bin:$PATH
