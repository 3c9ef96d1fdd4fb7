#!/usr/bin/env bash
# The `tlsan` command line: help, version, usage errors, unreadable inputs and outputs,
# exit statuses over several inputs, -o, and the shape of each output format. The plans are
# written here, so this test needs no shared corpus.
# Usage: usage.sh TLSAN_BIN [SHARED_DIR] [SOURCE_DIR]
set -u -o pipefail
bin=${1:?usage: usage.sh TLSAN_BIN}
export LC_ALL=C
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() {
    failed=$((failed + 1))
    echo "FAIL: $*"
}

# run ARGS...: sets rc, out (stdout) and err (stderr).
run() {
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
# expect_rc WANT WHAT
expect_rc() {
    if [ "$rc" = "$1" ]; then ok; else bad "$2: exit status $rc, want $1 (stderr: $err)"; fi
}
# expect_in HAYSTACK NEEDLE WHAT
expect_in() {
    case "$1" in
        *"$2"*) ok ;;
        *) bad "$3: '$2' not in: $1" ;;
    esac
}
# expect_lines TEXT N WHAT
expect_lines() {
    local n
    n=$(printf '%s' "$1" | grep -c '')
    if [ "$n" = "$2" ]; then ok; else bad "$3: $n lines, want $2: $1"; fi
}

cat >"$tmp/clean.json" <<'JSON'
{"tlsan_plan": 1, "name": "clean",
 "arenas": [{"name": "a0", "bytes": 8192}],
 "tensors": [{"name": "x", "bytes": 4096, "arena": "a0", "offset": 0, "input": true},
             {"name": "y", "bytes": 4096, "arena": "a0", "offset": 4096, "output": true}],
 "ops": [{"name": "f", "reads": ["x"], "writes": ["y"]}]}
JSON
# y is written at step 0 while x is still read there: the two share [0, 4096).
cat >"$tmp/overlap.json" <<'JSON'
{"tlsan_plan": 1, "name": "overlap",
 "arenas": [{"name": "a0", "bytes": 8192}],
 "tensors": [{"name": "x", "bytes": 4096, "arena": "a0", "offset": 0, "input": true,
              "stack": ["load model.py:3"]},
             {"name": "y", "bytes": 4096, "arena": "a0", "offset": 0, "output": true}],
 "ops": [{"name": "f", "reads": ["x"], "writes": ["y"]}]}
JSON
cat >"$tmp/invalid.json" <<'JSON'
{"tlsan_plan": 1,
 "arenas": [{"name": "a0", "bytes": 8192}],
 "tensors": [{"name": "x", "bytes": 4096, "arena": "a9", "offset": 0}],
 "ops": []}
JSON

# --- help and version ---
run --help
expect_rc 0 "--help"
expect_in "$out" "usage: tlsan check" "--help prints the usage"
run help
expect_rc 0 "help"
expect_in "$out" "tlsan import tvm" "help lists import"
run check --help
expect_rc 0 "check --help"
run --version
expect_rc 0 "--version"
if printf '%s' "$out" | grep -Eq '^tlsan [0-9]+\.[0-9]+\.[0-9]+$'; then ok; else
    bad "--version prints 'tlsan X.Y.Z', got: $out"
fi

# --- usage errors: exit 2, one line on stderr with a hint ---
for args in "" "--bogus" "frobnicate" "check" "check --bogus $tmp/clean.json" \
    "check --format xml $tmp/clean.json" "check --format" "check -o" \
    "check --from onnx $tmp/clean.json" "check --from" "check --max-paths 0 $tmp/clean.json" \
    "import" "import onnx g.json" "import tvm" "import tvm a.json b.json"; do
    # shellcheck disable=SC2086
    run $args
    expect_rc 2 "usage error for 'tlsan $args'"
    expect_lines "$err" 1 "usage error for 'tlsan $args' is one line"
    expect_in "$err" "tlsan: error: " "usage error for 'tlsan $args' is prefixed"
    expect_in "$err" "tlsan --help" "usage error for 'tlsan $args' hints at --help"
    [ -z "$out" ] && ok || bad "usage error for 'tlsan $args' printed to stdout: $out"
done
run check --bogus "$tmp/clean.json"
expect_in "$err" "unknown option '--bogus'" "the unknown option is named"

# --- unreadable input, unwritable output ---
run check "$tmp/no-such-plan.json"
expect_rc 2 "missing file"
expect_in "$err" "tlsan: error: $tmp/no-such-plan.json" "missing file: message names it"
run check --format json "$tmp/no-such-plan.json"
expect_rc 2 "missing file, json"
expect_lines "$out" 1 "missing file, json: one error object"
expect_in "$out" "\"error\"" "missing file, json: an error object"
run check -o "$tmp/no-such-dir/report.txt" "$tmp/clean.json"
expect_rc 2 "-o to an unwritable path"
expect_in "$err" "$tmp/no-such-dir/report.txt" "-o failure names the path"
if [ -w /dev/full ]; then
    "$bin" check "$tmp/overlap.json" >/dev/full 2>"$tmp/err"
    rc=$?
    err=$(cat "$tmp/err")
    expect_rc 2 "a full output device"
fi

# --- statuses ---
run check "$tmp/clean.json"
expect_rc 0 "clean plan"
expect_in "$out" "SUMMARY: tlsan: no findings in $tmp/clean.json" "clean plan summary"
run check "$tmp/overlap.json"
expect_rc 1 "plan with a finding"
expect_in "$out" "ERROR: tlsan: live-overlap between 'x' and 'y'" "text headline"
expect_in "$out" "#0 load model.py:3" "text stack"
expect_in "$out" "SUMMARY: tlsan: 1 finding (live-overlap x1) in $tmp/overlap.json" "text summary"
run check "$tmp/invalid.json"
expect_rc 2 "invalid plan"
expect_in "$err" "tlsan: error: $tmp/invalid.json: tensors[0].arena" "invalid plan: file and where"
run check "$tmp/clean.json" "$tmp/clean.json"
expect_rc 0 "two clean plans"
expect_lines "$out" 2 "two clean plans: two SUMMARY lines"
run check "$tmp/clean.json" "$tmp/overlap.json" "$tmp/clean.json"
expect_rc 1 "clean, finding, clean: the highest status"
run check "$tmp/overlap.json" "$tmp/invalid.json" "$tmp/clean.json"
expect_rc 2 "finding, invalid, clean: the highest status"
expect_in "$out" "SUMMARY: tlsan: no findings in $tmp/clean.json" "inputs after an invalid one are checked"
run check "$tmp/no-such-plan.json" "$tmp/overlap.json"
expect_rc 2 "missing, finding: the highest status"

# --- -o ---
run check -o "$tmp/report.txt" "$tmp/overlap.json"
expect_rc 1 "-o with a finding"
[ -z "$out" ] && ok || bad "-o: stdout should be empty, got: $out"
expect_in "$(cat "$tmp/report.txt" 2>/dev/null)" "SUMMARY: tlsan: 1 finding" "-o writes the report"
run check --output="$tmp/report.json" --format=json "$tmp/clean.json"
expect_rc 0 "--output=FILE --format=json"
expect_lines "$(cat "$tmp/report.json" 2>/dev/null)" 1 "--output=FILE: one JSON line"

# --- JSON and SARIF shapes ---
if command -v jq >/dev/null 2>&1; then
    run check --format json "$tmp/overlap.json" "$tmp/invalid.json" "$tmp/clean.json"
    expect_rc 2 "json over three inputs"
    expect_lines "$out" 3 "json: one line per input"
    got=$(printf '%s\n' "$out" | jq -c '[.file, (.findings // [] | map(.kind)), .error.where]' |
        tr '\n' ' ')
    want="[\"$tmp/overlap.json\",[\"live-overlap\"],null] [\"$tmp/invalid.json\",[],\"tensors[0].arena\"] [\"$tmp/clean.json\",[],null] "
    [ "$got" = "$want" ] && ok || bad "json objects: got $got, want $want"
    got=$(printf '%s\n' "$out" | head -n 1 | jq -c '.findings[0] | [.tensors, .plan, .stacks.x]')
    [ "$got" = '[["x","y"],"overlap",["load model.py:3"]]' ] && ok ||
        bad "json finding fields: $got"

    run check --format sarif "$tmp/overlap.json" "$tmp/clean.json"
    expect_rc 1 "sarif"
    got=$(printf '%s' "$out" | jq -c '[.version, (.runs | length), (.runs[0].tool.driver.rules | length), [.runs[0].results[].ruleId], .runs[0].results[0].locations[0].physicalLocation.artifactLocation.uri]')
    want="[\"2.1.0\",1,10,[\"live-overlap\"],\"file://$tmp/overlap.json\"]"
    [ "$got" = "$want" ] && ok || bad "sarif: got $got, want $want"
    run check --format sarif "$tmp/invalid.json"
    expect_rc 2 "sarif with an invalid input"
    got=$(printf '%s' "$out" | jq -c '.runs[0].invocations[0].executionSuccessful')
    [ "$got" = false ] && ok || bad "sarif invalid input: executionSuccessful $got"
else
    echo "note: jq not installed, JSON and SARIF shape checks skipped"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
