#!/usr/bin/env bash
# The shim's SIGSEGV handler is invisible to the program (shim/heap/segv.h): prog_segv's modes
# print what a program of its own SIGSEGV observes (the disposition sigaction and signal
# report, its handler's faults, SA_RESETHAND), natively and under the shim, with its defaults
# and with every block sampled, and must print the same bytes and end the same way. A write
# after free of a sampled block is still reported after the program installed a handler.
# Usage: segv.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup segv.sh "$@"
shim_prog prog_segv

for mode in query probe-early probe-late resethand die; do
    "$prog" "$mode" >"$tmp/native" 2>&1
    native_rc=$?
    for opts in "trace=0" "trace=0:sample_rate=1"; do
        run_prog "$opts" "$mode"
        expect_eq "$rc" "$native_rc" "$mode ($opts): the native exit status"
        expect_eq "$out" "$(cat "$tmp/native")" "$mode ($opts): the native output"
        expect_eq "$err" "" "$mode ($opts): no report"
    done
done
# What a native run prints, so that the comparison above cannot pass on two empty outputs.
expect_eq "$("$prog" query)" $'sigaction: SIG_DFL, flags 0\nsignal returned SIG_DFL\nnow: the program\'s\nsignal returned the program\'s' \
    "query natively"
expect_eq "$("$prog" probe-late)" "1010 3 faults, null 0" "probe-late natively"
expect_eq "$("$prog" resethand)" $'after one fault: SIG_DFL\nprobes 0 0, 2 faults' "resethand natively"
"$prog" die >/dev/null 2>&1
expect_eq "$?" 139 "die natively: SIGSEGV"

# The bug under a handler of the program's own: reported, with the access's line; the
# program goes on as natively (its handler never called).
expect_eq "$("$prog" late-handler-uaf)" "0 faults seen by the program" "late-handler-uaf natively"
run_prog "trace=0:sample_rate=1" late-handler-uaf
expect_eq "$out" "0 faults seen by the program" "late-handler-uaf: the program goes on"
expect_count "$err" "${pid_line}heap-use-after-free " 1 "late-handler-uaf: reported"
line=$(grep -n 'late-handler-uaf: written' "$src/tests/shim/prog_segv.c" | cut -d: -f1)
expect_in "$err" "prog_segv.c:$line" "late-handler-uaf: the write's line"
expect_eq "$rc" 1 "late-handler-uaf: exitcode"

echo "segv.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
