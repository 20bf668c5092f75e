#!/bin/sh
# http-bench.sh - sandbox-mcp over Streamable HTTP beside its anchor, the
# official TypeScript SDK's example server (http-anchor.mjs), in one run.
#
# For 1, 8 and 32 clients (tests/bench/httpload.c: one thread, keep-alive
# connections, each an MCP session that sends initialize once and then
# tools/call in a loop), interleaved so the machine's load drifts alike for all:
#   anchor     the SDK server's trivial tool (greet)
#   env_info   sandbox-mcp's env_info (engine facts reused for 1 s, see tool-env.c)
#   run_python sandbox-mcp's run_python 1+1, warm; every client uses the
#              principal's default sandbox, so the calls queue on one session
# and each server's RSS while the 32 clients are connected, and its VmHWM.
# The whole sequence runs ROUNDS times (default 3); every row is printed as
# measured, then each row's median round by req/s (the machine is shared:
# one round can meet someone else's build).
#
# Usage: [ROUNDS=N] tests/bench/http-bench.sh BUILD_DIR [SECONDS [OTHER_SANDBOX_MCP_BIN]]
#   OTHER_SANDBOX_MCP_BIN adds its env_info and run_python rows (e.g. a build
#   of an older commit), measured in the same run.
# Needs node and tests/node_modules (npm ci in tests), and dockerd.
set -eu

build=${1:?usage: http-bench.sh BUILD_DIR [SECONDS [OTHER_SANDBOX_MCP_BIN]]}
secs=${2:-5}
other=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
load=$build/tests/httpload
bin=$build/src/sandbox-mcp
warm=1
rounds=${ROUNDS:-3}
pids=
log=$(mktemp -d /tmp/sandbox-mcp-httpbench-XXXXXX)

cleanup() {
	for p in $pids; do
		kill -TERM "$p" 2>/dev/null || :
	done
	for p in $pids; do
		wait "$p" 2>/dev/null || :
	done
}
trap cleanup EXIT INT TERM

# A free loopback port: the kernel picks one, it is released and used at once.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Waits until $2 (a log file) says the server listens, or the process $1 died.
wait_listening() {
	i=0
	while ! grep -q "$3" "$2" 2>/dev/null; do
		kill -0 "$1" 2>/dev/null || { cat "$2" >&2; exit 1; }
		i=$((i + 1))
		[ $i -lt 200 ] || { echo "http-bench: no server after 20 s" >&2; exit 1; }
		sleep 0.1
	done
}

start_ours() { # NAME BIN -> sets port_NAME, pid_NAME
	p=$(free_port)
	"$2" serve --http "127.0.0.1:$p" </dev/null 2>"$log/$1.log" &
	eval "pid_$1=$! port_$1=$p"
	pids="$pids $!"
	wait_listening $! "$log/$1.log" "serving MCP on"
}

ap=$(free_port)
node "$here/http-anchor.mjs" "$ap" >"$log/anchor.log" 2>&1 &
anchor=$!
pids="$pids $anchor"
wait_listening $anchor "$log/anchor.log" "listening"
start_ours ours "$bin"
[ -z "$other" ] || start_ours other "$other"

# Fills each server's default sandbox and its warm interpreter before the rows.
"$load" "127.0.0.1:$port_ours" 1 3 1 run_python '{"code":"1+1"}' >/dev/null
[ -z "$other" ] || "$load" "127.0.0.1:$port_other" 1 3 1 run_python '{"code":"1+1"}' >/dev/null

row() { # LABEL PORT PID TOOL ARGS CLIENTS
	printf '%-22s ' "$1" | tee -a "$log/rows"
	"$load" "127.0.0.1:$2" "$6" "$warm" "$secs" "$4" "$5" "$3" | tee -a "$log/rows"
}

echo "# $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), ${rounds} rounds," \
	"${secs} s per row after ${warm} s of warm-up"
r=0
while [ $r -lt "$rounds" ]; do
	r=$((r + 1))
	for n in 1 8 32; do
		row "anchor greet" "$ap" "$anchor" greet '{"name":"bench"}' "$n"
		row "env_info" "$port_ours" "$pid_ours" env_info '{}' "$n"
		row "run_python 1+1" "$port_ours" "$pid_ours" run_python '{"code":"1+1"}' "$n"
		if [ -n "$other" ]; then
			row "other env_info" "$port_other" "$pid_other" env_info '{}' "$n"
			row "other run_python 1+1" "$port_other" "$pid_other" run_python '{"code":"1+1"}' "$n"
		fi
	done
done
echo "# median round of each row (by req/s)"
# a row: LABEL... clients N req/s X ...; group by label and N, keep the middle by X
awk '{ for (i = 1; i <= NF; i++) if ($i == "clients") { key = ""; for (j = 1; j < i; j++) key = key $j " "; key = key $(i + 1); rate[key, ++n[key]] = $(i + 3); line[key, n[key]] = $0; if (!(key in seen)) { seen[key] = 1; order[++k] = key } } }
END { for (o = 1; o <= k; o++) { key = order[o]; m = n[key]
	for (a = 1; a <= m; a++) idx[a] = a
	for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (rate[key, idx[b]] + 0 < rate[key, idx[a]] + 0) { t = idx[a]; idx[a] = idx[b]; idx[b] = t }
	print line[key, idx[int((m + 1) / 2)]] } }' "$log/rows" >"$log/median"
for n in 1 8 32; do
	grep " clients $n " "$log/median" | grep '^anchor' || :
	grep " clients $n " "$log/median" | grep -v '^anchor' | grep -v '^other' || :
	grep " clients $n " "$log/median" | grep '^other' || :
done
rm -rf "$log"
