#!/usr/bin/env bash
# bench/shim.sh [BUILD_DIR]: the runtime shim's overhead (docs/performance.md, issue 3).
#
# Two programs, each timed natively and then under the shim in several configurations, under
# Valgrind memcheck and as an AddressSanitizer build, all in one run so the ratios compare
# like with like:
#   - bench/tlsan_malloc_heavy (allocator-bound: 4M allocations of mixed sizes, each written
#     and read);
#   - examples/engine/engine (the annotated example engine, thread-pool executor, repeated).
# Wall time (date, ns) and CPU time (/usr/bin/time, user + system of all threads, 10 ms
# resolution) are each the median of TLSAN_BENCH_REPEAT runs (default 5; Valgrind: 1 run), the
# runs of one program's configurations interleaved (round r runs every configuration once), so
# that a change in the machine's load (other builds in parallel) touches them all alike; the
# load average is printed with each table. Every run's output must equal the native run's
# (the shim must not change results); a mismatch fails.
#
# Then the memory rows (issue 9): realloc growth (bench/tlsan_realloc_grow: one buffer grown to
# 16 MiB in 4 KiB steps, 10 times), timed like the rest, and the peak resident set (the
# largest process of the run, /usr/bin/time %M) of sqlite3 on a generated workload and of
# gcc -O2 -c (cc1) on the preprocessed shim/engine/op.c (engine.c before its split), natively,
# under the shim's defaults and with quarantine_mb=64; their output (sqlite3's rows, the object
# file) must be the native one.
#
# Environment: TLSAN_BENCH_SECTIONS ("overhead memory": which parts to run),
# TLSAN_BENCH_REPEAT (5), TLSAN_BENCH_HEAVY_N (4000000),
# TLSAN_BENCH_ENGINE_ARGS ("--exec pool --repeat 40 --seq 64 --hidden 128"),
# TLSAN_BENCH_VALGRIND (1: include Valgrind; 0: skip it), TLSAN_BENCH_SAMPLING (the options of
# the guarded-sampling row; by default interposition alone with sample_rate=1000, the default
# rate: what the sampled blocks cost on their own; set but empty: no such row),
# TLSAN_BENCH_LLAMA (0: skip the llama.cpp decode and bench/fork.sh).
set -euo pipefail

build=${1:-build}
repeat=${TLSAN_BENCH_REPEAT:-5}
heavy_n=${TLSAN_BENCH_HEAVY_N:-4000000}
read -r -a engine_args <<<"${TLSAN_BENCH_ENGINE_ARGS:---exec pool --repeat 40 --seq 64 --hidden 128}"
with_valgrind=${TLSAN_BENCH_VALGRIND:-1}
src=$(cd "$(dirname "$0")/.." && pwd)

shim=$build/libtlsan.so
heavy=$build/bench/tlsan_malloc_heavy
grow=$build/bench/tlsan_realloc_grow
engine=$build/examples/engine/engine
sections=${TLSAN_BENCH_SECTIONS:-overhead memory}
for f in "$shim" "$heavy" "$grow" "$engine"; do
    if [[ ! -e $f ]]; then
        echo "bench/shim.sh: $f not found; build first: cmake -S . -B $build && cmake --build $build -j2" >&2
        exit 2
    fi
done
shim=$(cd "$(dirname "$shim")" && pwd)/libtlsan.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The AddressSanitizer builds of both programs, with the same optimisation as the plain ones.
[[ $sections == *overhead* ]] && cc -O2 -g -fsanitize=address -fno-omit-frame-pointer "$src/bench/malloc_heavy.c" -o "$tmp/heavy-asan"
[[ $sections == *overhead* ]] && cc -O2 -g -fsanitize=address -fno-omit-frame-pointer -std=c11 -D_GNU_SOURCE -I"$src/include" \
    "$src"/examples/engine/*.c -o "$tmp/engine-asan" -lm -lpthread


# run_once LABEL EXPECTED_OUTPUT_FILE ENV... -- CMD...: one run; appends "WALL CPU" (seconds;
# CPU = user + system, all threads) to $tmp/times.LABEL and checks the output.
run_once() {
    local label=$1 expect=$2
    shift 2
    local envs=()
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    local t0 t1
    t0=$(date +%s%N)
    /usr/bin/time -f "%U %S" -o "$tmp/time" env "${envs[@]}" "$@" >"$tmp/out" 2>"$tmp/err" || {
        echo "bench/shim.sh: $label failed:" >&2; cat "$tmp/err" >&2; exit 1; }
    t1=$(date +%s%N)
    if [[ -n $expect ]] && ! cmp -s "$tmp/out" "$expect"; then
        echo "bench/shim.sh: $label changed the program's output" >&2
        diff "$expect" "$tmp/out" | head >&2
        exit 1
    fi
    awk -v ns=$((t1 - t0)) '{ printf "%.3f %.3f\n", ns / 1e9, $1 + $2 }' "$tmp/time" \
        >>"$tmp/times.${label//[^A-Za-z0-9]/_}"
}

# median_of LABEL: "WALL CPU", each the median of the label's runs.
median_of() {
    local f=$tmp/times.${1//[^A-Za-z0-9]/_}
    local w c
    w=$(cut -d' ' -f1 "$f" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
    c=$(cut -d' ' -f2 "$f" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
    echo "$w $c"
}

off="fill=0:quarantine_mb=0:redzone=0:stack_depth=0:checksum=off:trace=0:sample_rate=0"
sampling=${TLSAN_BENCH_SAMPLING-${off%:sample_rate=0}:sample_rate=1000}
configs=(
    "native||"
    "shim, interposition alone ($off)|LD_PRELOAD=$shim|TLSAN_OPTIONS=$off"
    "shim, fills off (fill=0)|LD_PRELOAD=$shim|TLSAN_OPTIONS=fill=0:trace_path=$tmp/t.trace"
    "shim, fills on (defaults)|LD_PRELOAD=$shim|TLSAN_OPTIONS=trace_path=$tmp/t.trace"
    "shim, checksum=all|LD_PRELOAD=$shim|TLSAN_OPTIONS=checksum=all:trace_path=$tmp/t.trace"
)
if [[ -n $sampling ]]; then
    configs+=("shim, guarded sampling ($sampling)|LD_PRELOAD=$shim|TLSAN_OPTIONS=$sampling:trace_path=$tmp/t.trace")
fi

# row LABEL "WALL CPU" "BASE_WALL BASE_CPU"
row() {
    awk -v l="$1" -v t="$2" -v b="$3" 'BEGIN { split(t, x, " "); split(b, y, " ");
        printf "| %s | %.3f | %s | %.3f | %s |\n", l, x[1], ratio(x[1], y[1]), x[2], ratio(x[2], y[2]) }
        function ratio(a, b) { return b > 0 ? sprintf("%.2fx", a / b) : "-" }'
}

# bench_program NAME ASAN_BINARY CMD...: the table of one program, every configuration (and
# the ASan build) run once per round, TLSAN_BENCH_REPEAT rounds; Valgrind once after them.
bench_program() {
    local name=$1 asan=$2
    shift 2
    local native_out=$tmp/native-$name.out
    "$@" >"$native_out"
    rm -f "$tmp"/times.*
    local load_before
    load_before=$(cut -d' ' -f1-3 /proc/loadavg)
    for ((r = 0; r < repeat; r++)); do
        for c in "${configs[@]}"; do
            IFS='|' read -r label e1 e2 <<<"$c"
            local envs=(TLSAN_BENCH=1)
            [[ -n $e1 ]] && envs+=("$e1")
            [[ -n $e2 ]] && envs+=("$e2")
            run_once "$label" "$native_out" "${envs[@]}" -- "$@"
        done
        [[ -n $asan ]] && run_once asan "$native_out" ASAN_OPTIONS=detect_leaks=0 -- "$asan" "${@:2}"
    done
    local with_vg=0
    if [[ -n $asan && $with_valgrind == 1 ]] && command -v valgrind >/dev/null; then
        run_once valgrind "$native_out" TLSAN_BENCH=1 -- valgrind -q --tool=memcheck "$@"
        with_vg=1
    fi
    echo
    echo "### $name: \`$(basename "$1") ${*:2}\`"
    echo
    echo "Medians of $repeat interleaved rounds (Valgrind: 1 run); load average $load_before before, $(cut -d' ' -f1-3 /proc/loadavg) after."
    echo
    echo "| configuration | wall s | vs native | CPU s | vs native |"
    echo "|---|---:|---:|---:|---:|"
    local base=""
    for c in "${configs[@]}"; do
        IFS='|' read -r label e1 e2 <<<"$c"
        local t
        t=$(median_of "$label")
        [[ -z $base ]] && base=$t
        row "$label" "$t" "$base"
    done
    [[ -n $asan ]] && row "AddressSanitizer build (-O2)" "$(median_of asan)" "$base"
    [[ $with_vg == 1 ]] && row "Valgrind memcheck" "$(median_of valgrind)" "$base"
    return 0 # not the status of the test above (set -e would end the run after a table without Valgrind)
}

if [[ $sections == *overhead* ]]; then
echo "## Shim overhead, $(date -u +%Y-%m-%d), $(nproc) cores, medians of $repeat"
bench_program malloc_heavy "$tmp/heavy-asan" "$heavy" "$heavy_n"
bench_program engine "$tmp/engine-asan" "$engine" "${engine_args[@]}"

# The llama.cpp decode (issue 4): the prebuilt libllama on a tiny generated model, when
# .ci/fetch-ggml.sh fetched it. "checksum=off" is the static check of each graph only; the
# default (shared) and "all" also compute node by node with checksums. No ASan build or
# Valgrind run: libllama is prebuilt.
llama=$build/examples/llama/llama_decode_tiny
if [[ ${TLSAN_BENCH_LLAMA:-1} == 0 ]]; then
    echo
    echo "(llama.cpp decode and fork skipped: TLSAN_BENCH_LLAMA=0)"
elif [[ -x $llama ]]; then
    "$build/examples/llama/tiny_gguf" "$tmp/tiny.gguf" >/dev/null
    configs=(
        "native||"
        "shim, ggml static check only (checksum=off)|LD_PRELOAD=$shim|TLSAN_OPTIONS=checksum=off:trace_path=$tmp/t.trace"
        "shim, defaults (checksum=shared: per-node checksums)|LD_PRELOAD=$shim|TLSAN_OPTIONS=trace_path=$tmp/t.trace"
        "shim, checksum=all|LD_PRELOAD=$shim|TLSAN_OPTIONS=checksum=all:trace_path=$tmp/t.trace"
    )
    bench_program llama "" "$llama" "$tmp/tiny.gguf"
else
    echo
    echo "(no $llama: run .ci/fetch-ggml.sh and re-run cmake to include the llama.cpp decode)"
fi
# fork() from a multi-threaded program (issue 9, part 6).
[[ ${TLSAN_BENCH_LLAMA:-1} == 0 ]] || bash "$src/bench/fork.sh" "$build"
fi

if [[ $sections == *memory* ]]; then
    echo
    echo "## Memory, $(date -u +%Y-%m-%d), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    configs=(
        "native||"
        "shim, defaults|LD_PRELOAD=$shim|TLSAN_OPTIONS=trace_path=$tmp/t.trace"
        "shim, quarantine_mb=64|LD_PRELOAD=$shim|TLSAN_OPTIONS=quarantine_mb=64:trace_path=$tmp/t.trace"
    )
    bench_program realloc_grow "" "$grow" 16777216 4096 10

    # peak_rss LABEL EXPECTED ENV... -- CMD...: the largest resident set (kB) of the run's
    # processes; the run's stdout must be EXPECTED's (empty: not compared).
    peak_rss() {
        local label=$1 expect=$2
        shift 2
        local envs=()
        while [[ $1 != -- ]]; do envs+=("$1"); shift; done
        shift
        /usr/bin/time -f "%M %e" -o "$tmp/time" env "${envs[@]}" "$@" >"$tmp/out" 2>"$tmp/err" || {
            echo "bench/shim.sh: $label failed:" >&2; cat "$tmp/err" >&2; exit 1; }
        if [[ -n $expect ]] && ! cmp -s "$tmp/out" "$expect"; then
            echo "bench/shim.sh: $label changed the program's output" >&2
            exit 1
        fi
        cat "$tmp/time"
    }
    # A deterministic sqlite3 workload: 200,000 rows inserted, indexed, scanned and sorted.
    cat >"$tmp/work.sql" <<'SQL'
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);
WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i<200000)
  INSERT INTO t SELECT i, hex(i*2654435761 % 1000003)||hex(i), i*0.5 FROM r;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(length(b)), avg(c) FROM t WHERE b > '8';
SELECT b FROM t ORDER BY b LIMIT 3 OFFSET 1000;
SQL
    cc -E -std=c11 -D_GNU_SOURCE -DUNW_LOCAL_ONLY -I"$src/include" -I"$src/shim" -I"$src/src" \
        "$src/shim/engine/op.c" -o "$tmp/engine.i"
    echo
    echo "### peak resident set"
    echo
    echo "| program | configuration | peak RSS MB | vs native | wall s |"
    echo "|---|---|---:|---:|---:|"
    for prog in sqlite3 cc1; do
        if [[ $prog == sqlite3 ]] && ! command -v sqlite3 >/dev/null; then
            echo "| sqlite3 | (not installed: apt-get install sqlite3) | - | - | - |"
            continue
        fi
        base=""
        for c in "${configs[@]}"; do
            IFS='|' read -r label e1 e2 <<<"$c"
            envs=(TLSAN_BENCH=1)
            [[ -n $e1 ]] && envs+=("$e1")
            [[ -n $e2 ]] && envs+=("$e2")
            if [[ $prog == sqlite3 ]]; then
                [[ -z $base ]] && sqlite3 :memory: <"$tmp/work.sql" >"$tmp/sqlite.native"
                r=$(peak_rss "$label" "$tmp/sqlite.native" "${envs[@]}" -- sh -c "sqlite3 :memory: <'$tmp/work.sql'")
            else
                r=$(peak_rss "$label" "" "${envs[@]}" -- gcc -O2 -c "$tmp/engine.i" -o "$tmp/cc1.o")
                if [[ -z $base ]]; then cp "$tmp/cc1.o" "$tmp/cc1.native.o"
                elif ! cmp -s "$tmp/cc1.o" "$tmp/cc1.native.o"; then
                    echo "bench/shim.sh: cc1 ($label) wrote a different object file" >&2; exit 1
                fi
            fi
            [[ -z $base ]] && base=$r
            awk -v p="$prog" -v l="$label" -v r="$r" -v b="$base" 'BEGIN { split(r, x, " "); split(b, y, " ");
                printf "| %s | %s | %.1f | %+.1f MB | %.2f |\n", p, l, x[1] / 1024, (x[1] - y[1]) / 1024, x[2] }'
        done
    done
fi
echo
echo "Targets: interposition alone <= 1.3x native on malloc_heavy; checksum=all <= 2x native on the engine."
