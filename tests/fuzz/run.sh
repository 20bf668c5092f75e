#!/bin/sh
# run.sh [SECONDS] [TARGET...] - run the libFuzzer targets for SECONDS each
# (default 20), all of them (the fuzz_targets list of meson.build beside this
# file) unless targets are named.
#
# Builds build-fuzz (clang, ASan+UBSan, -Dfuzzing=true) at the top of the
# source tree if it is not there; FUZZ_BUILDDIR picks another directory.
# Each target starts from a copy of tests/fuzz/corpus/<target>, so nothing
# is written to the source tree: the grown corpus, the log and any crash
# input stay in $FUZZ_BUILDDIR/fuzz-run/<target>/.  Exits 1 if any target
# crashed, leaked, timed out or failed a check.
set -eu

secs=${1:-20}
[ $# -gt 0 ] && shift
case $secs in
'' | *[!0-9]*)
	echo "usage: $0 [SECONDS] [TARGET...]" >&2
	exit 2
	;;
esac

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
builddir=${FUZZ_BUILDDIR:-$src/build-fuzz}
# every target meson.build lists, unless some are named (one list, so none is forgotten)
all=$(sed -n "s/^fuzz_targets = \[\(.*\)\]/\1/p" "$here/meson.build" | sed "s/[',]/ /g")
[ -n "$all" ] || { echo "run.sh: no fuzz_targets list in $here/meson.build" >&2; exit 2; }
targets=${*:-$all}

if [ ! -f "$builddir/build.ninja" ]; then
	CC=clang meson setup "$builddir" "$src" -Dfuzzing=true -Db_sanitize=address,undefined \
		-Db_lundef=false -Dnode_tests=disabled
fi
ninja -C "$builddir" $(for t in $targets; do printf 'tests/fuzz/fuzz-%s ' "$t"; done)

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

# One target: its summary (or its failure) printed as one block; 1 if it failed.
fuzz_one() {
	t=$1
	work=$builddir/fuzz-run/$t
	rm -rf "$work"
	mkdir -p "$work/corpus" "$work/artifacts"
	cp "$here/corpus/$t"/* "$work/corpus/"
	if "$builddir/tests/fuzz/fuzz-$t" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10 \
		-dict="$here/fuzz-$t.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
		"$work/corpus" >"$work/log" 2>&1; then
		out=$(printf '== fuzz-%s: %s s (log: %s/log)\n' "$t" "$secs" "$work"
			grep -E '^#[0-9]+[[:space:]]+DONE' "$work/log" | tail -n 1 || true
			grep -E '^stat::(number_of_executed_units|average_exec_per_sec)' "$work/log" || true)
		printf '%s\n' "$out"
		return 0
	fi
	out=$(printf '== fuzz-%s: %s s (log: %s/log)\n' "$t" "$secs" "$work"
		tail -n 40 "$work/log"
		echo "!! fuzz-$t FAILED; reproduce with: $builddir/tests/fuzz/fuzz-$t $work/artifacts/<file>"
		ls -1 "$work/artifacts")
	printf '%s\n' "$out"
	return 1
}

# FUZZ_JOBS lanes (default: one per CPU), each running every FUZZ_JOBS-th
# target in turn: a target is single-threaded, so two cores take half the time.
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in '' | *[!0-9]* | 0) jobs=1 ;; esac
status=$builddir/fuzz-run/status
mkdir -p "$status"
rm -f "$status"/*
lane=0
while [ "$lane" -lt "$jobs" ]; do
	(
		i=0
		for t in $targets; do
			[ $((i % jobs)) -eq "$lane" ] && { fuzz_one "$t" || : >"$status/$t"; }
			i=$((i + 1))
		done
	) &
	lane=$((lane + 1))
done
wait

failed=$(ls "$status")
if [ -n "$failed" ]; then
	echo "failed:" $failed
	exit 1
fi
echo "all targets ran $secs s without a failure"
