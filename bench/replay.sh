#!/usr/bin/env bash
# bench/replay.sh BUILD [BEFORE_BUILD]: long recorded runs (issue 12, docs/performance.md).
#
# Builds nothing. BUILD must hold tlsan, libtlsan.so, examples/engine/engine and
# bench/tlsan_trace_events. Its shim records the example engine on two streams
# (`engine --exec pool --repeat N`, correct and with `--inject missing-event`) once per size;
# then each build's tlsan (BUILD's, "after", and BEFORE_BUILD's, "before", when given)
# replays the same trace: the WHOLE `tlsan replay --format json` process, wall time
# ($EPOCHREALTIME), its user+sys CPU and peak RSS (/usr/bin/time), the findings of the run
# and the bytes of the report. Then plans of that shape (`tlsan export` of the correct run,
# about 69 tensors per run) at TLSAN_BENCH_TENSORS tensors: the whole `tlsan check --format
# json` process the same way; and the benchmark's generated plans of that shape
# (`tlsan_gen_plan --shape streams`: three streams handing tensors on by events, many tenants
# per byte, 5 waits dropped) at TLSAN_BENCH_ROOTS roots, whose findings must be exactly the
# generator's. Growth is the CPU time against the row before, beside the size's.
# A process over TLSAN_BENCH_TIMEOUT seconds is stopped ("stopped"). Prints markdown tables.
# Exits 2 when a tool is missing, 1 when the after build's findings differ from what the
# runs hold (none for the correct engine; some for the injected bug) or one of its runs
# fails or is stopped.
#
# Environment: TLSAN_BENCH_RUNS ("100 1000 10000"), TLSAN_BENCH_TENSORS ("25000 100000"),
# TLSAN_BENCH_ROOTS ("100000 1000000"),
# TLSAN_BENCH_TIMEOUT (300), TLSAN_BENCH_DIR (a temporary directory, removed afterwards
# unless given).
set -euo pipefail

build=${1:?usage: bash bench/replay.sh BUILD [BEFORE_BUILD]}
before=${2:-}
runs=${TLSAN_BENCH_RUNS:-"100 1000 10000"}
tensors=${TLSAN_BENCH_TENSORS:-"25000 100000"}
roots=${TLSAN_BENCH_ROOTS:-"100000 1000000"}
limit=${TLSAN_BENCH_TIMEOUT:-300}
per_run=69 # tensors of one run of the example engine in its exported plan

for tool in "$build/tlsan" "$build/libtlsan.so" "$build/examples/engine/engine" \
    "$build/bench/tlsan_trace_events" "$build/bench/tlsan_gen_plan" ${before:+"$before/tlsan"}; do
    if [[ ! -e $tool ]]; then
        echo "bench/replay.sh: $tool not found; build first: cmake --build $build -j2" >&2
        exit 2
    fi
done
for tool in jq /usr/bin/time timeout; do
    command -v "$tool" >/dev/null || {
        echo "bench/replay.sh: $tool is needed" >&2
        exit 2
    }
done
if [[ -n ${TLSAN_BENCH_DIR:-} ]]; then
    dir=$TLSAN_BENCH_DIR
    mkdir -p "$dir"
else
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
fi
builds=("$build")
labels=(after)
if [[ -n $before ]]; then
    builds=("$before" "$build")
    labels=(before after)
fi
status=0

# measure LABEL OUT -- CMD...: runs CMD (output to OUT) once; sets wall, cpu, rss, ok
measure() {
    local out=$2
    shift 3
    local t0 t1 rc=0
    t0=$EPOCHREALTIME
    timeout "$limit" /usr/bin/time -o "$dir/time" -f "%U %S %M" "$@" >"$out" 2>"$dir/stderr" || rc=$?
    t1=$EPOCHREALTIME
    ok=1
    if ((rc == 124)) || ((rc > 1)); then
        ok=0
    fi
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
    read -r u s m < <(tail -1 "$dir/time") || true
    cpu=$(awk -v u="${u:-0}" -v s="${s:-0}" 'BEGIN { printf "%.2f", u + s }')
    rss=$(awk -v m="${m:-0}" 'BEGIN { printf "%.0f", m / 1024 }')
    if ((rc == 124)); then # stopped: no figure to grow from
        wall="stopped" cpu="-" rss="-"
    fi
    return 0
}

growth() { # growth NOW PREV: NOW/PREV with one decimal, "-" when either is not a figure
    awk -v a="$1" -v b="$2" 'BEGIN { if (b !~ /^[0-9.]+$/ || b + 0 == 0 || a !~ /^[0-9.]+$/) print "-"; else printf "%.1fx", a / b }'
}

echo "## tlsan replay of long runs, $(date -u +%Y-%m-%d), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "examples/engine --exec pool --repeat N (two streams), recorded once by $build's shim;"
echo "whole \`tlsan replay --format json\` process, one run each."
echo
echo "| engine | runs | trace events | trace MB | build | replay s | its CPU s | growth (size growth) | peak RSS MB | findings | report KB |"
echo "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for bug in none missing-event; do
    declare -A prev=()
    prev_n=""
    for n in $runs; do
        trace=$dir/run-$bug-$n.trace
        "$build/tlsan" run --trace "$trace" -- "$build/examples/engine/engine" --exec pool \
            --inject "$bug" --repeat "$n" >/dev/null 2>&1 || true
        if [[ ! -s $trace ]]; then
            echo "bench/replay.sh: recording $bug at $n runs failed" >&2
            exit 1
        fi
        events=$("$build/bench/tlsan_trace_events" "$trace")
        mb=$(awk -v b="$(stat -c %s "$trace")" 'BEGIN { printf "%.1f", b / 1e6 }')
        for i in "${!builds[@]}"; do
            b=${builds[$i]} l=${labels[$i]}
            measure "$l" "$dir/report.json" -- "$b/tlsan" replay --format json --no-symbolize "$trace"
            findings=-
            if ((ok)); then
                findings=$(head -1 "$dir/report.json" | jq '.findings | length')
            fi
            kb=$(awk -v b="$(stat -c %s "$dir/report.json")" 'BEGIN { printf "%.0f", b / 1024 }')
            g=$(growth "$cpu" "${prev[$l]:-}")
            sg=-
            [[ -n $prev_n ]] && sg=$(growth "$n" "$prev_n")
            echo "| $bug | $n | $events | $mb | $l | $wall | $cpu | $g ($sg) | $rss | $findings | $kb |"
            prev[$l]=$cpu
            if [[ $l == after ]]; then
                if ((!ok)); then
                    status=1
                elif [[ $bug == none && $findings != 0 ]] || [[ $bug != none && $findings == 0 ]]; then
                    echo "bench/replay.sh: $bug at $n runs: $findings findings" >&2
                    status=1
                fi
            fi
        done
        prev_n=$n
    done
    unset prev
done

echo
echo "Plans of that shape: \`tlsan export\` of the correct engine at N runs ($per_run tensors per"
echo "run, two streams, host records and waits, one 9.7 KB arena); whole \`tlsan check --format json\`."
echo
echo "| tensors | runs | ops | plan MB | build | check s | its CPU s | growth (size growth) | peak RSS MB | findings |"
echo "| ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |"
# check_rows CELLS PLAN WANT SIZE PREV_SIZE SUFFIX: one table row per build of
# `tlsan check --format json PLAN`: the row's leading CELLS, the build, its times, its growth
# against its own previous row (prev[build]) and the size's (SIZE against PREV_SIZE), peak
# RSS, and the findings count followed by SUFFIX. The run fails when the 'after' build did not
# finish or found other than WANT findings.
check_rows() {
    local cells=$1 plan=$2 want=$3 size=$4 prev_size=$5 suffix=$6 i b l findings g sg
    for i in "${!builds[@]}"; do
        b=${builds[$i]} l=${labels[$i]}
        measure "$l" "$dir/report.json" -- "$b/tlsan" check --format json "$plan"
        findings=-
        ((ok)) && findings=$(jq '.findings | length' "$dir/report.json")
        g=$(growth "$cpu" "${prev[$l]:-}")
        sg=-
        [[ -n $prev_size ]] && sg=$(growth "$size" "$prev_size")
        echo "| $cells | $l | $wall | $cpu | $g ($sg) | $rss | $findings$suffix |"
        prev[$l]=$cpu
        if [[ $l == after ]] && { ((!ok)) || [[ $findings != "$want" ]]; }; then
            status=1
        fi
    done
}

declare -A prev=()
prev_t=""
for t in $tensors; do
    n=$(((t + per_run - 1) / per_run))
    trace=$dir/plan-$n.trace
    plan=$dir/plan-$n.json
    "$build/tlsan" run --trace "$trace" -- "$build/examples/engine/engine" --exec pool \
        --repeat "$n" >/dev/null 2>&1 || true
    "$build/tlsan" export "$trace" -o "$plan"
    rm -f "$trace"
    nt=$(jq '.tensors | length' "$plan")
    no=$(jq '.ops | length' "$plan")
    mb=$(awk -v b="$(stat -c %s "$plan")" 'BEGIN { printf "%.1f", b / 1e6 }')
    check_rows "$nt | $n | $no | $mb" "$plan" 0 "$nt" "$prev_t" ""
    prev_t=$nt
done

echo
echo "Generated plans of that shape: \`tlsan_gen_plan --shape streams --inject 5 --seed 1\`;"
echo "whole \`tlsan check --format json\`; findings got/expected."
echo
echo "| roots | ops | plan MB | build | check s | its CPU s | growth (size growth) | peak RSS MB | findings |"
echo "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |"
unset prev
declare -A prev=()
prev_r=""
for r in $roots; do
    plan=$dir/streams-$r.json
    "$build/bench/tlsan_gen_plan" --shape streams --roots "$r" --seed 1 --inject 5 -o "$plan" 2>/dev/null
    want=$(wc -l <"$plan.expected")
    no=$(jq '.ops | length' "$plan")
    mb=$(awk -v b="$(stat -c %s "$plan")" 'BEGIN { printf "%.1f", b / 1e6 }')
    check_rows "$r | $no | $mb" "$plan" "$want" "$r" "$prev_r" "/$want"
    prev_r=$r
    rm -f "$plan"*
done
exit $status
