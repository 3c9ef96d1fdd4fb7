#!/usr/bin/env bash
# The annotation API under Valgrind without the shim (include/tlsan/tlsan.h's client
# requests): memcheck reports a read of a released tensor at the faulting instruction, and
# nothing for correct use, in-place handover included.
# Usage: valgrind.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
prog=${4:?usage: valgrind.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR}/prog_valgrind
if ! command -v valgrind >/dev/null 2>&1; then
    echo "SKIP: valgrind is not installed (apt-get install valgrind)"
    exit 77
fi
if [ ! -f /usr/include/valgrind/memcheck.h ]; then
    echo "SKIP: valgrind/memcheck.h is missing, so tlsan.h has no client requests"
    exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0
check() { # WHAT CONDITION-RESULT
    if [ "$2" = 0 ]; then echo "ok   $1"; else echo "FAIL $1"; failed=1; fi
}
vg() { valgrind -q --error-exitcode=99 "$prog" "$@" >"$tmp/out" 2>"$tmp/err"; }

vg clean
check "clean: exit 0" $?
grep -qx "clean 2016.0" "$tmp/out"
check "clean: output" $?
[ ! -s "$tmp/err" ]
check "clean: memcheck silent" $?

vg inplace
check "inplace: exit 0" $?
grep -qx "inplace 1961.0" "$tmp/out"
check "inplace: output" $?
[ ! -s "$tmp/err" ]
check "inplace: memcheck silent" $?

vg uar
rc=$?
check "uar: memcheck's error exit" "$([ "$rc" = 99 ]; echo $?)"
grep -q "Invalid read of size 4" "$tmp/err"
check "uar: an invalid read" $?
# the first frame of the error is the faulting read in the program (read_released, possibly
# inlined into main), not somewhere in tlsan
line=$(grep -n "return x\[3\];" "$(dirname "$0")/prog_valgrind.c" | cut -d: -f1)
call=$(grep -n "sum += read_released(x);" "$(dirname "$0")/prog_valgrind.c" | cut -d: -f1)
grep -A1 "Invalid read of size 4" "$tmp/err" | grep -Eq "at 0x[0-9A-F]+: (read_released|main) \(prog_valgrind.c:($line|$call)\)"
check "uar: at the faulting instruction" $?
[ "$(grep -c "Invalid read" "$tmp/err")" = 1 ]
check "uar: exactly one error" $?
[ "$failed" = 0 ] || { cat "$tmp/err"; exit 1; }
