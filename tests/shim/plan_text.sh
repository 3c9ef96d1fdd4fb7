#!/usr/bin/env bash
# One text for a checker finding: `tlsan check PLAN` and the shim's reports of the same plan
# handed to tlsan_plan_load (prog_plan_load under LD_PRELOAD) must say the same.
#
# What is compared, per finding (matched by headline: the shim reports the findings in the
# checker's report order, tlsan check prints a cause's effects right after it):
#  - the headline from the severity on: "ERROR: tlsan: KIND between 'A' and 'B' in plan
#    'NAME'" or "WARNING: ..." for a warning kind (the shim's line starts with "==PID==");
#  - every body line, byte for byte: from the line after the headline up to, not including,
#    the first of: the rule of '=', an empty line or "SUMMARY:" (tlsan check), the shim's
#    "plan loaded at:" (its stack frames and SUMMARY follow). One rewrite: tensors' source
#    positions name the input, "plan_text.json:L:C" for tlsan check, "tlsan_plan_load:L:C" for
#    the shim, which has no file name.
# Usage: plan_text.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup plan_text.sh "$@"
prog=$progs/prog_plan_load
[ -x "$prog" ] || { echo "FAIL: no $prog"; exit 1; }
cp "$src/tests/shim/plans/plan_text.json" plan_text.json

"$bin" check plan_text.json >check.out 2>check.err
rc=$?
out=$(cat check.out)
err=$(cat check.err)
expect_rc 1 "tlsan check"
LD_PRELOAD="$shim" "$prog" plan_text.json >shim.out 2>shim.err
rc=$?
out=$(cat shim.out)
err=$(cat shim.err)
expect_rc 1 "prog_plan_load (exit status 1: findings were reported)"
expect_in "$out" "prog_plan_load: 7 findings" "tlsan_plan_load's count"

# findings FILE HEAD_REGEX END_REGEX: each finding as "HEAD <headline from the kind>" then
# its body lines, each line prefixed with its finding's headline and a tab, sorted by
# headline (stable: a body keeps its order).
findings() {
    awk -v head="$2" -v end="$3" '
        $0 ~ head { sub(/^==[0-9]+==/, ""); h = $0; print h "\tHEAD " h; inside = 1; next }
        inside && $0 ~ end { inside = 0; next }
        inside { print h "\t" $0 }' "$1" | sort -s -t "$(printf '\t')" -k1,1 | cut -f2-
}
findings check.out '^(ERROR|WARNING): tlsan: ' '^(=+|SUMMARY: .*|)$' |
    sed 's/ at plan_text\.json:\([0-9]*:[0-9]*\): / at tlsan_plan_load:\1: /' >check.findings
findings shim.err '^==[0-9]+==(ERROR|WARNING): tlsan: ' '^plan loaded at:$' >shim.findings

n=$(grep -c '^HEAD ' check.findings)
if [ "$n" = 7 ]; then ok; else bad "tlsan check: $n findings, want 7"; fi
n=$(grep -c '^HEAD ' shim.findings)
if [ "$n" = 7 ]; then ok; else bad "shim: $n findings, want 7"; fi
# The lines that differed before the renderer was one (sample of the whole comparison).
expect_in "$(cat shim.findings)" "  shared bytes: [196608, 393216) (196608 bytes)" "shim: shared bytes"
expect_in "$(cat shim.findings)" "  step 2: op 'norm' reads 'h1', reads 'h2'" "shim: colliding step"
if diff -u check.findings shim.findings >findings.diff; then
    ok
else
    bad "the shim's findings differ from tlsan check's:"$'\n'"$(cat findings.diff)"
fi

echo "plan_text.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
