#!/usr/bin/env bash
# bench/annotations.sh [BUILD_DIR]: the cost of tlsan.h's annotations when the shim is not
# loaded (the header's zero-cost promise; docs/performance.md).
#
# The example engine (examples/engine) is compiled three times from the same sources, as
# CMake builds it (-O2 -g, frame pointers): annotated as shipped (the wrappers test their
# weak symbol; Valgrind client requests where <valgrind/memcheck.h> is installed), annotated
# with -DTLSAN_NO_VALGRIND (the weak-symbol tests alone), and with -DTLSAN_DISABLE (every
# annotation compiled out: the unannotated engine). Each runs without the shim in two shapes:
# the small default model repeated (annotation-dense: about 70 annotated calls per graph of
# tiny kernels) and the larger model of bench/shim.sh. Wall and CPU time (user + system) are
# the medians of TLSAN_BENCH_REPEAT rounds (default 7), the three builds interleaved in each
# round; the outputs of the three builds must be identical.
#
# Environment: TLSAN_BENCH_REPEAT (7), TLSAN_BENCH_SMALL_ARGS ("--exec seq --repeat 3000"),
# TLSAN_BENCH_LARGE_ARGS ("--exec pool --repeat 40 --seq 64 --hidden 128"), TLSAN_BENCH_CFLAGS
# (more compiler flags for all three builds, e.g. "-falign-functions=64 -falign-loops=64" to
# take the placement of the kernels' loops out of the comparison).
set -euo pipefail

build=${1:-build}
repeat=${TLSAN_BENCH_REPEAT:-7}
read -r -a small_args <<<"${TLSAN_BENCH_SMALL_ARGS:---exec seq --repeat 3000}"
read -r -a large_args <<<"${TLSAN_BENCH_LARGE_ARGS:---exec pool --repeat 40 --seq 64 --hidden 128}"
src=$(cd "$(dirname "$0")/.." && pwd)
[[ -d $build ]] || { echo "bench/annotations.sh: no build directory $build" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

read -r -a extra_cflags <<<"${TLSAN_BENCH_CFLAGS:-}"
variants=(annotated no-valgrind disabled)
declare -A defines=([annotated]="" [no-valgrind]="-DTLSAN_NO_VALGRIND" [disabled]="-DTLSAN_DISABLE")
for v in "${variants[@]}"; do
    # shellcheck disable=SC2086
    cc -std=c11 -D_GNU_SOURCE -O2 -g -fno-omit-frame-pointer -rdynamic ${defines[$v]} "${extra_cflags[@]}" \
        -I"$src/include" -I"$src/examples/engine" "$src"/examples/engine/*.c -o "$tmp/engine-$v" \
        -lm -lpthread
done

# one VARIANT LABEL ARGS...: one run; appends "WALL CPU" to $tmp/times.LABEL.VARIANT.
one() {
    local v=$1 label=$2
    shift 2
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f "%U %S" -o "$tmp/time" "$tmp/engine-$v" "$@" >"$tmp/out.$v"
    t1=$(date +%s%N)
    awk -v ns=$((t1 - t0)) '{ printf "%.3f %.3f\n", ns / 1e9, $1 + $2 }' "$tmp/time" \
        >>"$tmp/times.$label.$v"
}

median() { # FILE COLUMN
    cut -d' ' -f"$2" "$1" | sort -n |
        awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

table() { # LABEL ARGS...
    local label=$1
    shift
    local load_before
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    for ((r = 0; r < repeat; r++)); do
        for v in "${variants[@]}"; do
            one "$v" "$label" "$@"
        done
        for v in "${variants[@]}"; do
            cmp -s "$tmp/out.$v" "$tmp/out.disabled" || {
                echo "bench/annotations.sh: the $v build's output differs" >&2; exit 1; }
        done
    done
    echo
    echo "### engine $*"
    echo
    echo "Medians of $repeat interleaved rounds; load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after."
    echo
    echo "| build | wall s | vs disabled | CPU s | vs disabled |"
    echo "|---|---:|---:|---:|---:|"
    local bw bc
    bw=$(median "$tmp/times.$label.disabled" 1)
    bc=$(median "$tmp/times.$label.disabled" 2)
    for v in "${variants[@]}"; do
        local w c
        w=$(median "$tmp/times.$label.$v" 1)
        c=$(median "$tmp/times.$label.$v" 2)
        awk -v v="$v ${defines[$v]}" -v w="$w" -v c="$c" -v bw="$bw" -v bc="$bc" '
            function ratio(a, b) { return b > 0 ? sprintf("%.3fx", a / b) : "-" }
            BEGIN { printf "| %s | %.3f | %s | %.3f | %s |\n", v, w, ratio(w, bw), c, ratio(c, bc) }'
    done
}

echo "## Annotations without the shim ($(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u +%F))${extra_cflags[*]:+, built with ${extra_cflags[*]}}"
table small "${small_args[@]}"
table large "${large_args[@]}"
