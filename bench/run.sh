#!/usr/bin/env bash
# bench/run.sh [BUILD_DIR]: the checker benchmark (docs/performance.md).
#
# Builds nothing: BUILD_DIR (default "build") must hold tlsan and bench/tlsan_gen_plan,
# bench/tlsan_naive_check (cmake -S . -B build && cmake --build build -j2).
# For each plan shape and size it generates a plan with a few injected bugs (tlsan_gen_plan
# --shape: current, seq, streams, dataflow, branchy, cache, views; see its --help), times the
# WHOLE `tlsan check --format json` process (JSON parse included; best and median of
# TLSAN_BENCH_REPEAT runs, peak RSS the largest), checks that the findings are exactly the generator's expected
# ones (PLAN.json.expected), and for the current shape at the sizes the naive all-pairs
# baseline finishes (<= 10^5 roots) reports the ratio. A run over TLSAN_BENCH_TIMEOUT seconds
# is stopped and counts as failed. Prints one markdown table and the targets; exits 1 when
# any run's findings are wrong, tlsan fails or a run is stopped, 2 when a tool is missing.
#
# Environment: TLSAN_BENCH_SHAPES ("current seq streams dataflow branchy cache views"),
# TLSAN_BENCH_SIZES ("10000 100000 1000000"), TLSAN_BENCH_SEED (1), TLSAN_BENCH_INJECT (5),
# TLSAN_BENCH_REPEAT (3), TLSAN_BENCH_TIMEOUT (60), TLSAN_BENCH_NAIVE_MAX (100000),
# TLSAN_BENCH_DIR (a temporary directory, removed afterwards unless given), TLSAN_BENCH_TLSAN
# (the tlsan binary to time, default BUILD_DIR/tlsan: an older build for a before/after),
# TLSAN_BENCH_GEN_FLAGS (extra tlsan_gen_plan flags, e.g. "--no-shapes" or "--lifetimes").
set -euo pipefail

build=${1:-build}
shapes=${TLSAN_BENCH_SHAPES:-"current seq streams dataflow branchy cache views"}
sizes=${TLSAN_BENCH_SIZES:-"10000 100000 1000000"}
seed=${TLSAN_BENCH_SEED:-1}
inject=${TLSAN_BENCH_INJECT:-5}
repeat=${TLSAN_BENCH_REPEAT:-3}
limit=${TLSAN_BENCH_TIMEOUT:-60}
naive_max=${TLSAN_BENCH_NAIVE_MAX:-100000}
read -r -a gen_flags <<<"${TLSAN_BENCH_GEN_FLAGS:-}"

tlsan=${TLSAN_BENCH_TLSAN:-$build/tlsan}
gen=$build/bench/tlsan_gen_plan
naive=$build/bench/tlsan_naive_check
for tool in "$tlsan" "$gen" "$naive"; do
    if [[ ! -x $tool ]]; then
        echo "bench/run.sh: $tool not found; build first: cmake -S . -B $build && cmake --build $build -j2" >&2
        exit 2
    fi
done
if [[ ! -x /usr/bin/time ]]; then
    echo "bench/run.sh: /usr/bin/time is missing (peak memory): apt-get install time" >&2
    exit 2
fi
if ! command -v jq >/dev/null; then
    echo "bench/run.sh: jq is missing (reads the findings): apt-get install jq" >&2
    exit 2
fi

if [[ -n ${TLSAN_BENCH_DIR:-} ]]; then
    work=$TLSAN_BENCH_DIR
    mkdir -p "$work"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/tlsan-bench.XXXXXX")
    trap 'rm -rf "$work"' EXIT
fi

# Wall seconds between two $EPOCHREALTIME readings (microsecond resolution; /usr/bin/time's
# %e has only 10 ms, too coarse for the small plans).
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3g", a / b; else print "-" }'; }

cpu=$(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || true)
echo "# tlsan check benchmark"
echo
echo "machine: $(nproc) cores, ${cpu:-unknown CPU}, load average $(cut -d' ' -f1-3 /proc/loadavg);" \
    "seed $seed, $inject injected bugs per plan, generator flags: ${TLSAN_BENCH_GEN_FLAGS:-none};" \
    "check time = best of $repeat whole-process runs of \`tlsan check --format json\`" \
    "(tlsan: $tlsan)"
echo

failed=0
rows=()
summary=()
for shape in $shapes; do
    prev_n="" prev_t=""
    max_growth=0 stopped=0
    t_1e6="" bpr_1e6=""
    for n in $sizes; do
        plan=$work/$shape-$n.json
        g0=$EPOCHREALTIME
        "$gen" --shape "$shape" --roots "$n" --seed "$seed" --inject "$inject" \
            ${gen_flags[@]+"${gen_flags[@]}"} -o "$plan" 2>"$work/gen-$shape-$n.log"
        g1=$EPOCHREALTIME
        gen_s=$(elapsed "$g0" "$g1")
        n_ops=$(grep -o '[0-9]* ops' "$work/gen-$shape-$n.log" | head -1 | cut -d' ' -f1 || true)
        plan_mb=$(awk -v b="$(stat -c %s "$plan")" 'BEGIN { printf "%.1f", b / 1048576 }')
        expected=$work/expected-$shape-$n.txt
        LC_ALL=C sort "$plan.expected" >"$expected"
        want_status=0
        [[ -s $expected ]] && want_status=1

        best="" best_cpu="-" peak_kb=0 status_ok=1
        times=()
        for ((r = 0; r < repeat; r++)); do
            t0=$EPOCHREALTIME
            set +e
            /usr/bin/time -f '%e %M %U %S' -o "$work/time-$shape-$n.txt" \
                timeout "$limit" "$tlsan" check --format json "$plan" \
                >"$work/out-$shape-$n.json" 2>"$work/err-$shape-$n.txt"
            status=$?
            set -e
            t1=$EPOCHREALTIME
            s=$(elapsed "$t0" "$t1")
            # the last line: a failing command's status line comes first
            kb=$(tail -1 "$work/time-$shape-$n.txt" | awk '{ print $2 }')
            cpu_s=$(tail -1 "$work/time-$shape-$n.txt" | awk '{ printf "%.2f", $3 + $4 }')
            if ((status == 124)); then
                echo "FAIL: $shape, $n roots: stopped after $limit s" >&2
                best="> $limit" best_cpu="-" status_ok=0
                break
            fi
            times+=("$s")
            if [[ -z $best ]] || awk -v a="$s" -v b="$best" 'BEGIN { exit !(a < b) }'; then
                best=$s best_cpu=$cpu_s
            fi
            ((kb > peak_kb)) && peak_kb=$kb
            if ((status != want_status)); then
                echo "FAIL: $shape, $n roots: tlsan exited $status, expected $want_status:" >&2
                head -5 "$work/err-$shape-$n.txt" >&2
                status_ok=0
                break
            fi
        done

        # the median run: steadier than the best one when other work loads the machine
        median="-"
        if ((status_ok)) && ((${#times[@]} > 0)); then
            median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
        fi

        got=$work/got-$shape-$n.txt
        verdict="ok"
        # a cache's findings carry the plan they are in
        line='"\(.kind) \(.tensors | sort | join(" "))"'
        [[ $shape == cache ]] && line='"\(.plan) \(.kind) \(.tensors | sort | join(" "))"'
        if ((status_ok)) && jq -r ".findings[] | $line" "$work/out-$shape-$n.json" 2>/dev/null |
            LC_ALL=C sort >"$got"; then
            if ! diff -q "$expected" "$got" >/dev/null; then
                verdict="WRONG"
                echo "FAIL: $shape, $n roots: findings differ from the expected ones (< expected, > got):" >&2
                diff "$expected" "$got" | head -20 >&2 || true
            fi
        else
            verdict="FAILED"
        fi
        [[ $verdict == ok ]] || failed=1
        n_expected=$(wc -l <"$expected")
        n_got=$([[ -f $got ]] && wc -l <"$got" || echo 0)

        growth="-"
        if ((status_ok)) && [[ -n $prev_t ]]; then
            growth=$(ratio "$best" "$prev_t")
            # growth is per 10x only between sizes 10x apart
            if [[ $n == $((prev_n * 10)) ]]; then
                max_growth=$(awk -v a="$growth" -v b="$max_growth" 'BEGIN { print (a > b) ? a : b }')
            fi
        fi
        bpr=$(awk -v k="$peak_kb" -v n="$n" 'BEGIN { printf "%.0f", k * 1024 / n }')
        rss_mb=$(awk -v k="$peak_kb" 'BEGIN { printf "%.1f", k / 1024 }')
        ((status_ok)) || bpr="-" rss_mb="-"

        naive_s="-" speedup="-"
        if [[ $shape == current ]] && ((n <= naive_max)); then
            line=$("$naive" --max-roots "$naive_max" "$plan")
            naive_s=$(awk '{ printf "%.4f", $8 }' <<<"$line")
            naive_conf=$(awk '{ print $6 }' <<<"$line")
            if [[ $naive_conf != "$n_expected" ]]; then
                echo "FAIL: $n roots: the naive check found $naive_conf conflicts, the generator $n_expected" >&2
                failed=1
            fi
            ((status_ok)) && speedup=$(ratio "$naive_s" "$best")
        fi
        rows+=("| $shape | $n | $n_ops | $plan_mb | $gen_s | $best | $median | $best_cpu | $growth | $rss_mb | $bpr | $n_got/$n_expected $verdict | $naive_s | $speedup |")
        if [[ $n == 1000000 ]]; then t_1e6=$best bpr_1e6=$bpr; fi
        if ((status_ok)); then prev_n=$n prev_t=$best; else prev_n="" prev_t="" stopped=1; fi
    done
    met() { if awk "BEGIN { exit !($1) }" 2>/dev/null; then echo "met"; else echo "NOT met"; fi; }
    line="- $shape:"
    if [[ -n $t_1e6 ]]; then
        if [[ $t_1e6 == ">"* ]]; then
            line+=" 10^6 roots ${t_1e6} s, NOT met;"
        else
            line+=" 10^6 roots in ${t_1e6} s (<= 2.5 s: $(met "$t_1e6 <= 2.5")),"
            line+=" ${bpr_1e6} B/root (<= 300: $(met "$bpr_1e6 <= 300")),"
        fi
    fi
    if ((stopped)); then
        line+=" growth per 10x not measured (a run failed or was stopped), NOT met"
    else
        line+=" largest growth per 10x ${max_growth}x (<= 11: $(met "$max_growth <= 11"))"
    fi
    summary+=("$line")
done

echo "| shape | roots | ops | plan MB | generate s | tlsan check s | median s | its CPU s | growth | peak RSS MB | bytes/root | findings (got/expected) | naive pair loop s | naive / tlsan |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |"
printf '%s\n' "${rows[@]}"
echo
echo "tlsan check s: wall time of the whole process, best run; median s: the median run's;" \
    "its CPU s: user+sys of the best run" \
    "(less disturbed by other load on the machine). growth: check time over the previous size's." \
    "naive: all pairs with the seed rule (current shape), only its pair loop timed."
echo
printf '%s\n' "${summary[@]}"
if ((failed)); then
    echo
    echo "FAILED: some findings were wrong or runs were stopped (see above)"
    exit 1
fi
