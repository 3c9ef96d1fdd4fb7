#!/usr/bin/env bash
# Every case of the project's corpus (tests/cases) and, when present, of the shared corpus
# must give exactly its .expect: `tlsan check --format json CASE` prints one JSON object
# whose findings, as "kind tensor..." lines (names sorted), are the .expect's lines; an
# .expect reading `invalid` means exit status 2, with a message naming the file and, where a
# NAME.where file gives it, the JSON path or line:column of the fault. The exit status must
# also be 1 exactly when findings are expected, 0 when none.
# Usage: cases.sh TLSAN_BIN SHARED_DIR SOURCE_DIR (TLSAN_SHARED_DIR overrides SHARED_DIR)
set -u -o pipefail
usage="usage: cases.sh TLSAN_BIN SHARED_DIR SOURCE_DIR"
bin=${1:?$usage}
shared=${TLSAN_SHARED_DIR:-${2:?$usage}}
src=${3:?$usage}
export LC_ALL=C

# "kind a b" per finding, names sorted, one line each, sorted and unique.
if command -v jq >/dev/null 2>&1; then
    finding_lines() {
        jq -r '.findings[] | ([.kind] + (.tensors | map(tostring) | sort)) | join(" ")' |
            sort -u
    }
elif command -v python3 >/dev/null 2>&1; then
    finding_lines() {
        python3 -c '
import json, sys
d = json.load(sys.stdin)
for f in d["findings"]:
    print(" ".join([f["kind"]] + sorted(map(str, f["tensors"]))))' | sort -u
    }
else
    echo "SKIP: neither jq nor python3 is installed to read the JSON output"
    exit 77
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
# check_dir DIR: every case of DIR.
check_dir() {
local dir=$1 plan
for plan in "$dir"/*.json; do
    name=$(basename "$plan" .json)
    expect=${plan%.json}.expect
    if [ ! -f "$expect" ]; then
        echo "FAIL $name: no $expect"
        failed=$((failed + 1))
        continue
    fi
    out=$(timeout 20 "$bin" check --format json "$plan" 2>"$tmp/stderr")
    rc=$?
    err=$(cat "$tmp/stderr")
    want=$(sed '/^$/d' "$expect" | sort -u)
    problem=""
    if [ "$want" = invalid ]; then
        [ "$rc" = 2 ] || problem="exit status $rc, want 2 (invalid plan)"
        [ -n "$problem" ] || case "$err" in
            *"$plan"*) ;;
            *) problem="the error message does not name the file: $err" ;;
        esac
        if [ -z "$problem" ] && [ -f "${plan%.json}.where" ]; then
            where=$(head -n 1 "${plan%.json}.where")
            case "$err" in
                *"$plan: $where: "* | *"$plan:$where: "*) ;;
                *) problem="the error is not at $where: $err" ;;
            esac
        fi
    else
        if [ "$(printf '%s\n' "$out" | wc -l)" != 1 ]; then
            problem="want one line of JSON, got: $out"
        elif ! got=$(printf '%s\n' "$out" | finding_lines 2>/dev/null); then
            problem="output is not the findings JSON: $out"
        else
            want_rc=0
            [ -z "$want" ] || want_rc=1
            if [ "$got" != "$want" ]; then
                problem=$(printf 'findings differ\n--- want\n%s\n--- got\n%s' "$want" "$got")
            elif [ "$rc" != "$want_rc" ]; then
                problem="exit status $rc, want $want_rc"
            fi
        fi
    fi
    [ "$rc" -le 2 ] || problem="exit status $rc (a crash?): $err"
    if [ -z "$problem" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL $name: $problem"
    fi
done
}

own=$src/tests/cases
n_own=$(ls "$own"/*.json 2>/dev/null | wc -l)
# The corpus as of this writing; fewer means it was not found or lost files.
if [ "$n_own" -lt 87 ]; then
    echo "FAIL: $n_own cases in $own, want at least 87"
    failed=$((failed + 1))
fi
check_dir "$own"
echo "own corpus ($own): $passed passed, $failed failed"
if [ -d "$shared/cases" ]; then
    check_dir "$shared/cases"
else
    echo "note: no shared cases at $shared/cases; the additional check against them did not run"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
