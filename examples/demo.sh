#!/usr/bin/env bash
# examples/demo.sh — a short session piped through the binary as raw JSON-RPC,
# the way an MCP client talks to it: handshake, list the tools, run Python in a
# fresh default session, describe that session. The session is removed when stdin ends.
#
#   examples/demo.sh [path/to/sandbox-mcp]
set -euo pipefail
bin=${1:-$(dirname "$0")/../build/src/sandbox-mcp}
[ -x "$bin" ] || { echo "demo: build first (meson setup build && ninja -C build)" >&2; exit 1; }

{
	echo '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}'
	echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
	echo '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
	echo '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_command","arguments":{"command":"python3 -c \"import sys, numpy; print(sys.version.split()[0], numpy.arange(10).sum())\"; id -un; pwd"}}}'
	echo '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"env_info","arguments":{"session_id":"default"}}}'
} | SANDBOX_LOG_LEVEL=${SANDBOX_LOG_LEVEL:-warning} "$bin" | while IFS= read -r line; do
	case "$line" in
	*'"id":1,'*) echo "initialize -> ${line:0:160}..." ;;
	*'"id":2,'*) echo "tools/list -> $(printf '%s' "$line" | grep -o '"name":"[a-z_]*"' | cut -d'"' -f4 | sort -u | tr '\n' ' ')" ;;
	*) echo "$line" ;;
	esac
done
