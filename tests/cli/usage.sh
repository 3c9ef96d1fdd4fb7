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

# --- each subcommand's --help lists every option it takes, and the overview (tlsan --help)
# holds each command's usage lines exactly as the command's --help prints them ---
run --help
overview=$out
expect_help() { # COMMAND... -- OPTION...
    local cmd=() o usage
    while [ "$1" != -- ]; do cmd+=("$1"); shift; done
    shift
    run "${cmd[@]}" --help
    expect_rc 0 "${cmd[*]} --help"
    expect_in "$out" "usage: tlsan ${cmd[0]}" "${cmd[*]} --help: its usage line"
    printf '%s\n' "$out" | grep -qx 'Options:' && ok || bad "${cmd[*]} --help: no 'Options:' line"
    for o in "$@" "-h, --help"; do
        expect_in "$out" "  $o" "${cmd[*]} --help lists $o"
    done
    # its usage lines: from "usage: " to the first empty line (the overview puts "usage: " or
    # as many spaces before the first)
    usage=$(printf '%s\n' "$out" | sed -n '1,/^$/p' | sed '/^$/d; 1s/^usage: //')
    expect_in "$overview" "$usage" "tlsan --help holds the usage lines of ${cmd[*]}"
}
expect_help check -- "-f, --format" "-o, --output" --svg --from --max-paths
expect_help replay -- "-f, --format" "-o, --output" --svg --max-paths --no-symbolize
expect_help view -- "-o, --output" --from
expect_help import -- "-o, --output"
expect_help import tvm -- "-o, --output"
expect_help export -- "-o, --output"
expect_help run -- --trace --options
[ "$(printf '%s\n' "$out" | grep -c '^  ')" -ge 5 ] && ok || bad "run --help: one line per option"

# --- view refuses to write HTML to a terminal (stdout a pseudo-terminal, no -o) ---
if command -v python3 >/dev/null 2>&1; then
    got=$(python3 - "$bin" "$tmp/overlap.json" <<'PY'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "view", sys.argv[2]])
data = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    data += chunk
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), len(data), data.decode(errors="replace").strip())
PY
    )
    case "$got" in
        "2 "*"tlsan: error: view writes an HTML page: give -o OUT.html"*) ok ;;
        *) bad "view on a terminal: want exit 2 and the error, got: $got" ;;
    esac
    case "$got" in *"<html"*|*"<!DOCTYPE"*) bad "view wrote HTML to the terminal" ;; *) ok ;; esac
    run view "$tmp/overlap.json"
    expect_rc 0 "view to a pipe (not a terminal) writes the page"
    expect_in "$out" "</html>" "view to a pipe: the page"
else
    echo "note: python3 not installed, the terminal check of view skipped"
fi

# --- SARIF regions and one severity per kind in text, JSON and SARIF ---
# y is declared live over [0, 0] but the output step 1 reads it; z reuses its bytes at
# step 1 (x is 'f''s input, so the line of each object is known: 'x' line 3, 'y' line 4).
cat >"$tmp/sev.json" <<'JSON'
{"tlsan_plan": 1, "name": "sev",
 "arenas": [{"name": "a0", "bytes": 8192}],
 "tensors": [{"name": "x", "bytes": 4096, "arena": "a0", "offset": 0, "input": true},
    {"name": "y", "bytes": 4096, "arena": "a0", "offset": 4096, "output": true, "lifetime": [0, 0]},
  {"name": "z", "bytes": 4096, "arena": "a0", "offset": 4096}],
 "ops": [{"name": "f", "reads": ["x"], "writes": ["y"]},
         {"name": "g", "reads": ["x"], "writes": ["z"]}]}
JSON
if command -v jq >/dev/null 2>&1; then
    run check --format sarif "$tmp/sev.json"
    expect_rc 1 "sarif of sev.json"
    got=$(printf '%s' "$out" | jq -c '[.runs[0].results[] | [.ruleId, .level, .locations[0].physicalLocation.region.startLine, .locations[0].physicalLocation.region.startColumn]]')
    want='[["live-overlap","error",4,5],["lifetime-too-short","warning",4,5]]'
    [ "$got" = "$want" ] && ok || bad "sarif regions: got $got, want $want"
    got=$(printf '%s' "$out" | jq -c '[.runs[0].results[0].relatedLocations[] | [.physicalLocation.region.startLine, .message.text]]')
    want='[[5,"tensor '"'z'"'"],[4,"follows from lifetime-too-short on '"'y'"': the planner probably missed that '"'y'"' is a graph output (flag '"'output'"' on '"'y'"'), live at step 2; it freed the bytes after its declared lifetime [0, 0] and reused them"]]'
    [ "$got" = "$want" ] && ok || bad "sarif related locations: got $got, want $want"
    sarif_levels=$(printf '%s' "$out" | jq -r '.runs[0].results[] | "\(.ruleId) \(.level)"')
    rule_levels=$(printf '%s' "$out" | jq -r '.runs[0].tool.driver.rules[] | "\(.id) \(.defaultConfiguration.level)"')
    run check --format json "$tmp/sev.json"
    json_levels=$(printf '%s' "$out" | jq -r '.findings[] | "\(.kind) \(.severity)"')
    run check "$tmp/sev.json"
    text_levels=$(printf '%s\n' "$out" | sed -n 's/^\(ERROR\|WARNING\): tlsan: \([a-z-]*\) .*/\2 \1/p' |
        tr 'A-Z' 'a-z')
    [ "$sarif_levels" = "$json_levels" ] && ok || bad "severity: sarif '$sarif_levels' json '$json_levels'"
    # text groups a finding under its cause: compare as sets
    [ "$(sort <<<"$text_levels")" = "$(sort <<<"$json_levels")" ] && ok ||
        bad "severity: text '$text_levels' json '$json_levels'"
    [ "$json_levels" = "live-overlap error
lifetime-too-short warning" ] && ok || bad "severity per kind: $json_levels"
    # every rule's level is the one the table gives its kind
    while read -r kind level; do
        case "$rule_levels" in *"$kind $level"*) ok ;; *) bad "rule of $kind is not $level" ;; esac
    done <<<"$json_levels"
    expect_in "$rule_levels" "lifetime-too-short warning" "the table: lifetime-too-short is a warning"
    expect_in "$rule_levels" "live-overlap error" "the table: live-overlap is an error"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
