#!/usr/bin/env bash
# bench/fork.sh [BUILD_DIR]: fork() latency from a multi-threaded program, natively and under
# the shim (issue 9, part 6); called by bench/shim.sh, or run alone.
#
# bench/tlsan_fork_threads forks 300 times while 8 threads allocate in bursts (and with no
# other thread); each row is the median of its 300 forks: the time fork() takes in the parent
# and fork() + waitpid() (the child's fork handler and exit included). The "native, holding
# 64 MiB" row is a native run holding 64 MiB in 256-byte blocks, the resident memory the
# shim's quarantine holds by default: fork copies the page tables of all resident memory.
# Every run's output must equal the native run's.
#
# Environment: TLSAN_BENCH_FORKS (300), TLSAN_BENCH_FORK_THREADS (8).
set -euo pipefail
build=${1:-build}
forks=${TLSAN_BENCH_FORKS:-300}
threads=${TLSAN_BENCH_FORK_THREADS:-8}
prog=$build/bench/tlsan_fork_threads
shim=$build/libtlsan.so
for f in "$prog" "$shim"; do
    [[ -e $f ]] || { echo "bench/fork.sh: $f not found; build first" >&2; exit 2; }
done
shim=$(cd "$(dirname "$shim")" && pwd)/libtlsan.so
prog=$(cd "$(dirname "$prog")" && pwd)/$(basename "$prog")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
off="fill=0:quarantine_mb=0:redzone=0:stack_depth=0:checksum=off:trace=0"

# row LABEL THREADS HOLD_MB ENV...: one run; prints the row.
row() {
    local label=$1 t=$2 hold=$3
    shift 3
    (cd "$tmp" && env "$@" "$prog" "$t" "$forks" "$hold") >"$tmp/out" 2>"$tmp/err" || {
        echo "bench/fork.sh: $label failed:" >&2; cat "$tmp/err" >&2; exit 1; }
    [[ $(cat "$tmp/out") == "forked $forks children from $t threads" ]] || {
        echo "bench/fork.sh: $label changed the program's output" >&2; exit 1; }
    rm -f "$tmp"/*.trace*
    read -r _ _ f _ _ _ _ w _ <"$tmp/err"
    [[ -n $base ]] || { base=$f; base_wait=$w; }
    awk -v l="$label" -v f="$f" -v w="$w" -v b="$base" -v bw="$base_wait" 'BEGIN {
        printf "| %s | %.0f | %.1fx | %.0f | %.1fx |\n", l, f, f / b, w, w / bw }'
}

for t in "$threads" 0; do
    echo
    echo "### fork from $t worker threads: \`$(basename "$prog") $t $forks\`, medians of $forks forks"
    echo
    echo "| configuration | fork µs | vs native | fork + wait µs | vs native |"
    echo "|---|---:|---:|---:|---:|"
    base="" base_wait=""
    row "native" "$t" 0 TLSAN_BENCH=1
    row "native, holding 64 MiB" "$t" 64 TLSAN_BENCH=1
    row "shim, interposition alone ($off)" "$t" 0 LD_PRELOAD="$shim" TLSAN_OPTIONS="$off"
    row "shim, no quarantine (quarantine_mb=0, trace=0)" "$t" 0 LD_PRELOAD="$shim" TLSAN_OPTIONS=quarantine_mb=0:trace=0
    row "shim, no trace (trace=0)" "$t" 0 LD_PRELOAD="$shim" TLSAN_OPTIONS=trace=0
    row "shim, defaults" "$t" 0 LD_PRELOAD="$shim" TLSAN_OPTIONS="trace_path=$tmp/f.trace"
done
