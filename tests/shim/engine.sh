#!/usr/bin/env bash
# The example engine (examples/engine): its plans and its runs.
#  1. The plan of the correct planner (both executors, both branch arms) checks clean:
#     `tlsan check` exits 0 with no finding.
#  2. The plan of every planted bug (--inject BUG --emit-plan) gives exactly the expected
#     findings, as "kind tensor..." lines (names sorted), and exit status 1.
#  3. Outputs are bit-identical between --exec seq and --exec pool (both arms, repeated runs,
#     a larger model) and --dump writes the same bytes.
#  4. When libtlsan.so is built next to tlsan: the correct run under the shim reports nothing,
#     prints the same outputs and its trace replays clean; every bug's run and replay report
#     at least one finding of the kinds that catch it, naming the right tensor.
# Usage: engine.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
bin=${1:?usage: engine.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR}
build=$(cd "$(dirname "$bin")" && pwd)
bin=$build/$(basename "$bin") # absolute: the shim runs start in a scratch directory
engine=$build/examples/engine/engine
shim=$build/libtlsan.so
export LC_ALL=C
if [ ! -x "$engine" ]; then
    echo "SKIP: no engine at $engine (TLSAN_BUILD_EXAMPLES off?)"
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP: python3 is needed to read the JSON output"
    exit 77
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0
passed=0
fail() {
    echo "FAIL $*"
    failed=$((failed + 1))
}
pass() {
    passed=$((passed + 1))
}

# "kind a b" per finding of every JSON object on stdin (names sorted, "#N" tenant suffixes
# kept), sorted and unique.
finding_lines() {
    python3 -c '
import json, sys
for line in sys.stdin:
    line = line.strip()
    if not line.startswith("{"):
        continue
    for f in json.loads(line).get("findings", []):
        print(" ".join([f["kind"]] + sorted(map(str, f["tensors"]))))' | sort -u
}

# ---- 1. correct plans ----
for exec in seq pool; do
    for arm in "" --use-bias; do
        what="none --exec $exec $arm"
        if ! "$engine" --exec "$exec" $arm --emit-plan "$tmp/plan.json"; then
            fail "$what: --emit-plan failed"
            continue
        fi
        out=$("$bin" check --format json "$tmp/plan.json")
        rc=$?
        got=$(printf '%s\n' "$out" | finding_lines)
        if [ "$rc" != 0 ] || [ -n "$got" ]; then
            fail "$what: exit $rc, findings: $got"
        else
            pass
        fi
    done
done

# ---- 2. every bug's plan ----
expect() { # BUG then the expected lines on stdin
    cat >"$tmp/expect.$1"
}
expect lifetime-short <<'EOF'
lifetime-too-short hm
live-overlap attn_cat hm
live-overlap hm qkv
EOF
expect view-untracked <<'EOF'
lifetime-too-short qkv
live-overlap ctx0 qkv
live-overlap ctx1 qkv
live-overlap pr0 qkv
live-overlap pr1 qkv
live-overlap qkv sc0
live-overlap qkv sc1
EOF
expect inplace-still-read <<'EOF'
bad-inplace h1 ln2_out
EOF
expect branch-one-arm <<'EOF'
lifetime-too-short hf
live-overlap hf y
EOF
expect loop-carried <<'EOF'
lifetime-too-short mem
live-overlap act mem
live-overlap attn_o mem
live-overlap fc1_out mem
live-overlap mem qkv
EOF
expect missing-event <<'EOF'
unordered-reuse act qkv
unordered-reuse attn_cat qkv
unordered-reuse attn_o qkv
unordered-reuse conf qkv
unordered-reuse fc1_out qkv
unordered-reuse fc2_out qkv
unordered-reuse gy qkv
unordered-reuse hf qkv
unordered-reuse ln2_out qkv
unordered-reuse logits qkv
unordered-reuse py qkv
unordered-reuse qkv y
EOF
expect output-reused <<'EOF'
lifetime-too-short y
live-overlap sy y
EOF
expect stale-async-write <<'EOF'
unordered-reuse ws0 ws1
EOF
bugs="lifetime-short view-untracked inplace-still-read branch-one-arm loop-carried missing-event
output-reused stale-async-write"
for bug in $bugs; do
    if ! "$engine" --inject "$bug" --emit-plan "$tmp/$bug.json"; then
        fail "$bug: --emit-plan failed"
        continue
    fi
    out=$("$bin" check --format json "$tmp/$bug.json")
    rc=$?
    got=$(printf '%s\n' "$out" | finding_lines)
    want=$(sort -u "$tmp/expect.$bug")
    if [ "$rc" != 1 ] || [ "$got" != "$want" ]; then
        fail "$bug: exit $rc (want 1); got:"$'\n'"$got"$'\n'"want:"$'\n'"$want"
    else
        pass
    fi
done

# ---- 3. seq and pool compute the same bits ----
same_outputs() { # WHAT ARGS...: seq and pool runs print and dump the same outputs
    local what=$1
    shift
    local a b
    a=$(timeout 120 "$engine" --exec seq --dump "$tmp/seq.bin" "$@" | grep -v '^engine:') &&
        b=$(timeout 120 "$engine" --exec pool --dump "$tmp/pool.bin" "$@" | grep -v '^engine:')
    if [ $? != 0 ] || [ -z "$a" ]; then
        fail "$what: a run failed"
    elif [ "$a" != "$b" ] || ! cmp -s "$tmp/seq.bin" "$tmp/pool.bin"; then
        fail "$what: seq and pool differ:"$'\n'"$a"$'\n'"$b"
    else
        pass
    fi
}
same_outputs "default"
same_outputs "--use-bias" --use-bias
same_outputs "--repeat 3" --repeat 3
same_outputs "--seq 16 --hidden 64" --seq 16 --hidden 64
# Every planner bug is deterministic too (the pool runs its streams in list order then).
for bug in lifetime-short inplace-still-read branch-one-arm loop-carried output-reused; do
    same_outputs "--inject $bug" --inject "$bug"
done

# ---- 4. under the shim ----
if [ ! -f "$shim" ]; then
    echo "SKIP part 4: no $shim"
else
    # accepted kinds (any of them) and the tensor they must name, per bug
    declare -A kinds=(
        [lifetime-short]="live-corruption live-overlap lifetime-too-short"
        [view-untracked]="live-corruption live-overlap"
        [inplace-still-read]="bad-inplace live-corruption"
        [branch-one-arm]="live-overlap live-corruption"
        [loop-carried]="live-overlap live-corruption"
        [missing-event]="unordered-reuse stale-write live-corruption"
        [output-reused]="live-overlap live-corruption"
        [stale-async-write]="stale-write live-corruption"
    )
    # what replay derives from the trace (the run's FINDING records are only counted there):
    # a stale write is, to the rebuilt plan, a reuse no event orders
    declare -A replay_kinds=([stale-async-write]="unordered-reuse stale-write live-corruption")
    declare -A victim=([lifetime-short]=hm [view-untracked]=qkv [inplace-still-read]=h1
        [branch-one-arm]=hf [loop-carried]=mem [missing-event]=qkv [output-reused]=y
        [stale-async-write]=ws1)
    plain=$("$engine" | grep -v '^engine:')
    # checksum=all verifies every live tensor at each op's end, while the other stream's ops
    # (in-place ones among them) are in flight: still clean.
    for run in "seq" "pool" "pool --options checksum=all"; do
        read -r exec options <<<"$run"
        out=$(cd "$tmp" && timeout 120 "$bin" run --trace "$tmp/none.trace" $options -- "$engine" \
            --exec "$exec" 2>"$tmp/none.err" | grep -v '^engine:')
        rc=$?
        rep=$("$bin" replay --format json "$tmp/none.trace" 2>/dev/null | finding_lines)
        if [ "$rc" != 0 ] || [ "$out" != "$plain" ] || [ -n "$rep" ] ||
            grep -Eq '(ERROR|WARNING): tlsan' "$tmp/none.err"; then
            fail "none --exec $run under the shim: exit $rc, replay: $rep"$'\n'"$(cat "$tmp/none.err")"
        else
            pass
        fi
    done
    for bug in $bugs; do
        (cd "$tmp" && timeout 120 "$bin" run --trace "$tmp/$bug.trace" -- "$engine" \
            --inject "$bug" >/dev/null 2>"$tmp/$bug.err")
        rc=$?
        rep=$("$bin" replay --format json "$tmp/$bug.trace" 2>/dev/null | finding_lines)
        want=${victim[$bug]}
        rt_ok=0
        replay_ok=0
        for k in ${kinds[$bug]}; do
            grep -Eq "SUMMARY: tlsan: $k .*\\b$want\\b" "$tmp/$bug.err" && rt_ok=1
        done
        for k in ${replay_kinds[$bug]:-${kinds[$bug]}}; do
            printf '%s\n' "$rep" | grep -Eq "^$k( .*)? $want(#[0-9]+)?( |\$)" && replay_ok=1
        done
        if [ "$rc" = 0 ] || [ "$rt_ok" = 0 ] || [ "$replay_ok" = 0 ]; then
            fail "$bug under the shim: exit $rc, run caught it: $rt_ok, replay: $replay_ok"
        else
            pass
        fi
    done
fi

echo "engine.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
