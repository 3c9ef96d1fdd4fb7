#!/usr/bin/env bash
# `tlsan check --from executorch`, `tlsan import executorch` and `tlsan view --from executorch`
# end to end. Our own programs (tests/executorch/*.json, written as .pte by flatc at build
# time) need nothing else; with the shared corpus, every real program of
# ../shared/real/executorch must check clean, the damaged one and truncations of real ones
# must be refused with a clear message, and planted placements (tests/executorch/overlap.py,
# which computes its expectation itself) must give exactly the expected findings.
# Usage: executorch.sh TLSAN_BIN SHARED_DIR SOURCE_DIR (env TLSAN_FLATC, TLSAN_TEST_PTE_DIR)
set -u -o pipefail
bin=${1:?usage: executorch.sh TLSAN_BIN SHARED_DIR SOURCE_DIR}
shared=${2:?usage: executorch.sh TLSAN_BIN SHARED_DIR SOURCE_DIR}
src=${3:?usage: executorch.sh TLSAN_BIN SHARED_DIR SOURCE_DIR}
flatc=${TLSAN_FLATC:-flatc}
own=${TLSAN_TEST_PTE_DIR:?TLSAN_TEST_PTE_DIR: where the build wrote tests/executorch/*.pte}
export LC_ALL=C
tmp=$(mktemp -d) || exit 1
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT

passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() {
    failed=$((failed + 1))
    echo "FAIL: $*"
}
run() {
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
expect_rc() {
    if [ "$rc" = "$1" ]; then ok; else bad "$2: exit status $rc, want $1 (stderr: $err)"; fi
}
expect_eq() {
    if [ "$1" = "$2" ]; then ok; else bad "$3: got '$1', want '$2'"; fi
}

# ---- our own programs ----
run check --from executorch "$own/tiny.pte"
expect_rc 0 "check tiny.pte"
expect_eq "$(tail -n 1 "$tmp/out")" "SUMMARY: tlsan: no findings in $own/tiny.pte" "tiny summary"

run check --from executorch --format json "$own/multi.pte"
expect_rc 1 "check multi.pte (decode places its output on its input)"
expect_eq "$(jq -c '[.findings[] | [.kind, .plan, .tensors, .bytes]]' <"$tmp/out" | tr '\n' ' ')" \
    '[] [["live-overlap","multi:decode",["v0","v2"],[8,16]]] ' "one JSON object per method"
run check --from executorch "$own/multi.pte"
expect_eq "$(grep -c '^SUMMARY' "$tmp/out")" 2 "one summary per method"
grep -q "^SUMMARY: tlsan: 1 finding (live-overlap x1) in $own/multi.pte (method decode)\$" \
    "$tmp/out" && ok || bad "the decode summary names the method: $out"
run check --from executorch --method encode "$own/multi.pte"
expect_rc 0 "--method encode"
run check --from executorch --method forward "$own/multi.pte"
expect_rc 2 "--method forward (none)"
expect_eq "$err" "tlsan: error: $own/multi.pte: the program has no method 'forward' (it has: encode, decode)" \
    "unknown method"
run check --method encode "$own/multi.pte"
expect_rc 2 "--method without --from executorch"
expect_eq "$err" "tlsan: error: check: --method needs --from executorch (see 'tlsan --help')" \
    "--method alone"

# import: a plan for one method, a plan cache keyed by method for several; both check alike.
run import executorch "$own/tiny.pte" -o "$tmp/tiny.json"
expect_rc 0 "import tiny.pte"
cmp -s "$tmp/tiny.json" "$src/tests/executorch/tiny.plan.json" && ok ||
    bad "import tiny.pte differs from tests/executorch/tiny.plan.json"
run check "$tmp/tiny.json"
expect_rc 0 "check of the imported tiny plan"
run import executorch "$own/multi.pte" -o "$tmp/multi.json"
expect_rc 0 "import multi.pte"
expect_eq "$(jq -c '[.tlsan_plan_cache, [.plans[] | .key.method, .name]]' "$tmp/multi.json")" \
    '[1,["encode","multi:encode","decode","multi:decode"]]' "a cache keyed by method"
run check --format json "$tmp/multi.json"
expect_rc 1 "check of the imported cache"
expect_eq "$(jq -c '[.findings[] | [.kind, .tensors]]' <"$tmp/out")" '[["live-overlap",["v0","v2"]]]' \
    "the cache has decode's finding"
run import executorch --method decode "$own/multi.pte"
expect_rc 0 "import --method decode"
expect_eq "$(jq -r .name <"$tmp/out")" "multi:decode" "import --method gives one plan"
run import onnx "$own/multi.pte"
expect_rc 2 "import of an unknown format"
expect_eq "$err" "tlsan: error: cannot import 'onnx': 'tvm' and 'executorch' are known (see 'tlsan --help')" \
    "unknown import format"

# view draws every method.
run view --from executorch "$own/multi.pte" -o "$tmp/multi.html"
expect_rc 0 "view --from executorch"
expect_eq "$(grep -o '"label":"[^"]*multi.pte (method [a-z]*)' "$tmp/multi.html" | sort -u | wc -l)" 2 \
    "one section per method"
run view --from executorch "$own/nonexistent.pte" -o "$tmp/none.html"
expect_rc 2 "view of a missing program"

# Not a program: our own plan JSON given as a .pte.
run check --from executorch "$src/tests/executorch/tiny.plan.json"
expect_rc 2 "a JSON file as a program"
expect_eq "$err" "tlsan: error: $src/tests/executorch/tiny.plan.json: not an ExecuTorch program: the FlatBuffer file identifier (bytes 4-7) is not \"ET12\"" \
    "a JSON file as a program"

# ---- the real programs ----
real=$shared/real/executorch
if [ ! -d "$real" ]; then
    echo "executorch.sh: skipped: the real programs: $real is absent"
else
    n=0
    for f in "$real"/*.pte; do
        case "$f" in *corrupt*) continue ;; esac
        n=$((n + 1))
        run check --from executorch "$f"
        expect_rc 0 "real program $(basename "$f")"
    done
    expect_eq "$n" 16 "real programs checked"
    run check --from executorch "$real/corey-cole_src_test_resources_models_corrupt.pte"
    expect_rc 2 "the damaged program"
    expect_eq "$err" "tlsan: error: $real/corey-cole_src_test_resources_models_corrupt.pte: not an ExecuTorch program: the FlatBuffer file identifier (bytes 4-7) is not \"ET12\"" \
        "the damaged program's message"
    # Truncations: inside the extended header, inside the FlatBuffer, inside a segment.
    p=$real/corey-cole_native_spike_add.pte
    for cut in 20 600 1200; do
        head -c $cut "$p" >"$tmp/cut.pte"
        run check --from executorch "$tmp/cut.pte"
        expect_rc 2 "spike_add cut to $cut bytes"
        case $cut in
            20) want="extended header: truncated: the file ends inside the extended header (20 bytes)" ;;
            600) want="extended header: truncated: the program's FlatBuffer is 1088 bytes, the file has 600" ;;
            1200) want="segments: truncated: data segment 1 ends at byte 1584 (segment base 1152 + 432), past the end of the file (1200 bytes)" ;;
        esac
        expect_eq "$err" "tlsan: error: $tmp/cut.pte: $want" "spike_add cut to $cut bytes"
    done
    head -c 3000 "$real/Arm-Examples_ai_layer_engine_model_ethos_u_minimal_example.pte" >"$tmp/cut.pte"
    run check --from executorch "$tmp/cut.pte"
    expect_rc 2 "a program without extended header, cut"
    expect_eq "$err" "tlsan: error: $tmp/cut.pte: the FlatBuffer does not verify against ExecuTorch's schema (an offset, length or string outside the file, misaligned, or nested too deep)" \
        "a cut FlatBuffer"
    # Our schema (src/import/executorch_schema.fbs) against ExecuTorch's own (program.fbs of the
    # corpus): our programs written by flatc with the full schema, every field of their JSON
    # kept, import to exactly the plans of the ones the build wrote with ours.
    mkdir -p "$tmp/full"
    for j in "$src"/tests/executorch/*.json; do
        case "$j" in *.plan.json) continue ;; esac
        b=$(basename "$j" .json)
        if ! "$flatc" -b -o "$tmp/full" "$real/program.fbs" "$j" 2>"$tmp/err"; then
            bad "flatc with ExecuTorch's schema on $b.json: $(cat "$tmp/err")"
            continue
        fi
        run import executorch "$tmp/full/$b.pte"
        full=$out
        run import executorch "$own/$b.pte"
        expect_eq "$full" "$out" "$b.pte written with ExecuTorch's schema imports alike"
    done
    # Planted placements, expectation computed by overlap.py from the imported plans. flatc
    # reads and rewrites the programs with ExecuTorch's own schema, so that nothing of them is
    # lost and the cross-check does not share our schema's mistakes.
    mkdir -p "$tmp/overlap"
    if python3 "$src/tests/executorch/overlap.py" "$bin" "$flatc" "$real" \
        "$tmp/overlap" $(ls "$real"/*.pte | grep -v corrupt) >"$tmp/overlap.log" 2>&1; then
        ok
    else
        bad "planted placements (overlap.py):"
    fi
    sed 's/^/  /' "$tmp/overlap.log"
fi

echo "executorch.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
