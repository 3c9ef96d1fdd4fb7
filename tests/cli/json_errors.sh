#!/usr/bin/env bash
# One rule for JSON syntax errors, whichever reader meets them (core/text_pos.h,
# core/json_error.h): `tlsan check` (the plan reader) and `tlsan check --from tvm` (the TVM
# importer) give the same line, the same column (in characters, not bytes) and the same
# words for the same bad text. Before the rule was shared, the TVM importer counted bytes
# (column 46 where the plan reader said 42, after four Greek letters) and kept yajl's
# "lexical error: " prefix.
# Usage: json_errors.sh TLSAN_BIN
set -u -o pipefail
bin=${1:?usage: json_errors.sh TLSAN_BIN}
export LC_ALL=C
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# expect NAME WANT: both readers on $tmp/NAME.json must print WANT (after the file name) and
# exit 2.
expect() {
    local name=$1 want=$2 from out rc
    for from in "" "--from tvm"; do
        # shellcheck disable=SC2086
        out=$("$bin" check $from "$tmp/$name.json" 2>&1 >/dev/null)
        rc=$?
        if [ "$rc" = 2 ] && [ "$out" = "tlsan: error: $tmp/$name.json:$want" ]; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            echo "FAIL: $name${from:+ ($from)}: exit $rc, got '$out', want '...:$want'"
        fi
    done
}

# A bad character after a name of four two-byte characters: column 42 counts characters.
printf '{"tensors": [{"name": "\xce\xb1\xce\xb2\xce\xb3\xce\xb4", "bytes": 4 x}]}\n' >"$tmp/greek.json"
expect greek "1:42: malformed JSON: invalid char in json text"
# The same on a later line, after a CJK comment-like string of three-byte characters.
printf '{\n  "note": "\xe6\xbc\xa2\xe5\xad\x97",\n  "nodes": [1 2]\n}\n' >"$tmp/cjk.json"
expect cjk "3:15: malformed JSON: after array element, I expect ',' or ']'"
# The text ends too early: the position just after its last character.
printf '{"a": [1,' >"$tmp/short.json"
expect short "1:10: malformed JSON: the text ends before the JSON value is complete"

echo "json_errors.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
