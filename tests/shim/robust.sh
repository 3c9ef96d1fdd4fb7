#!/usr/bin/env bash
# libtlsan.so must never break a correct program: prog_robust's modes (threads, fork,
# dlopen, realloc chains, libc's limits) run under the shim with its defaults and with its
# cheapest options, each asserting its own results; a forked child writes its own trace;
# the limits' output matches a native run; a program that fits in a small address space
# natively still does under the shim; under Valgrind and under AddressSanitizer the shim
# prints one line and passes through.
# Usage: robust.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
bin=${1:?usage: robust.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR}
src=${3:?usage: robust.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR}
progs=${4:?usage: robust.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR}
shim="$(dirname "$bin")/libtlsan.so"
prog="$progs/prog_robust"
export LC_ALL=C
# Absolute paths: the test runs in a temporary directory.
src=$(cd "$src" && pwd)
shim=$(cd "$(dirname "$shim")" && pwd)/libtlsan.so
prog=$(cd "$(dirname "$prog")" && pwd)/$(basename "$prog")
[ -f "$shim" ] || { echo "SKIP: no $shim"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

passed=0
failed=0
ok() { passed=$((passed + 1)); }
bad() {
    failed=$((failed + 1))
    echo "FAIL: $*"
}
# run OPTIONS CMD...: runs CMD under the shim; sets rc, out, err.
run() {
    local opts=$1
    shift
    TLSAN_OPTIONS="$opts" LD_PRELOAD="$shim" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
expect_rc() {
    if [ "$rc" = "$1" ]; then ok; else bad "$2: exit status $rc, want $1 (stdout: $out; stderr: $err)"; fi
}
expect_eq() {
    if [ "$1" = "$2" ]; then ok; else bad "$3: got '$1', want '$2'"; fi
}
expect_in() {
    case "$1" in
        *"$2"*) ok ;;
        *) bad "$3: '$2' not in: $1" ;;
    esac
}

cheap="trace=0:fill=0:quarantine_mb=0:redzone=0:stack_depth=0"
for opts in "trace=0" "$cheap" "trace=0:quarantine_mb=1:redzone=64:stack_depth=4"; do
    run "$opts" "$prog" threads
    expect_rc 0 "threads ($opts)"
    expect_eq "$out" "threads ok 8 x 100000" "threads ($opts)"
    expect_eq "$err" "" "threads ($opts): no report"
    run "$opts" "$prog" realloc
    expect_rc 0 "realloc ($opts)"
    expect_eq "$out" "realloc ok 20 chains" "realloc ($opts)"
    expect_eq "$err" "" "realloc ($opts): no report"
    run "$opts" "$prog" dlopen
    expect_rc 0 "dlopen ($opts)"
    expect_eq "$out" "dlopen ok 200 rounds" "dlopen ($opts)"
    expect_eq "$err" "" "dlopen ($opts): no report"
done

# libc's contracts: the same results as without the shim (and exact sizes with it).
native=$("$prog" limits 2>&1)
expect_eq "$(printf '%s\n' "$native" | tail -n 1)" "limits ok (shim not active)" "limits natively"
for opts in "trace=0" "$cheap"; do
    run "$opts" "$prog" limits
    expect_rc 0 "limits ($opts)"
    expect_eq "$(printf '%s\n' "$out" | tail -n 1)" "limits ok (shim active)" "limits ($opts)"
    expect_eq "$(printf '%s\n' "$out" | head -n -1)" "$(printf '%s\n' "$native" | head -n -1)" \
        "limits ($opts) prints what a native run prints"
    expect_eq "$err" "" "limits ($opts): no report"
done

# Little address space (ulimit -v): the shim's own mappings are small and grow as needed,
# and when the real allocator fails the quarantine is emptied and the request retried, so a
# program that fits natively still fits.
for kb in 60000 100000; do
    if (ulimit -v "$kb" && "$prog" realloc >/dev/null 2>&1); then
        (ulimit -v "$kb" && TLSAN_OPTIONS=trace=0 LD_PRELOAD="$shim" "$prog" realloc) \
            >"$tmp/out" 2>"$tmp/err"
        rc=$?
        out=$(cat "$tmp/out")
        err=$(cat "$tmp/err")
        expect_rc 0 "realloc with ulimit -v $kb"
        expect_eq "$out" "realloc ok 20 chains" "realloc with ulimit -v $kb"
    else
        echo "note: realloc does not run natively with ulimit -v $kb; skipped"
    fi
done

# fork from a threaded program, tracing: every child writes FILE.PID, a complete trace.
run "trace_path=$tmp/t.trace" "$prog" fork
expect_rc 0 "fork"
expect_eq "$out" "fork ok 20 children" "fork"
expect_eq "$err" "" "fork: no report"
children=$(ls "$tmp" | grep -cE '^t\.trace\.[0-9]+$')
expect_eq "$children" 20 "fork: one trace per child"
for f in "$tmp"/t.trace "$tmp"/t.trace.*; do
    [ -f "$f" ] || continue
    if [ "$(head -c 8 "$f")" = "TLSANTRC" ]; then ok; else bad "fork: $f is not a trace"; fi
done
run "trace=0:$cheap" "$prog" fork
expect_rc 0 "fork ($cheap)"

# Valgrind: the shim steps aside (one line), memcheck finds nothing, the program succeeds.
if command -v valgrind >/dev/null 2>&1; then
    TLSAN_OPTIONS=trace=0 LD_PRELOAD="$shim" valgrind -q --error-exitcode=99 "$prog" quick \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    expect_rc 0 "valgrind"
    expect_eq "$out" "quick ok" "valgrind: output"
    expect_eq "$(grep -c 'tlsan' "$tmp/err")" 1 "valgrind: one tlsan line"
    expect_in "$err" "tlsan: running under Valgrind; the shim passes through (no checks, no trace)" \
        "valgrind: the line"
else
    echo "note: no valgrind, its run is skipped"
fi

# AddressSanitizer: a program built with it, the shim preloaded first (ASan tolerates that
# with verify_asan_link_order=0) or after libasan.
cc=${CC:-gcc}
if "$cc" -fsanitize=address -g -o "$tmp/robust_asan" "$src/tests/shim/prog_robust.c" -lpthread \
    -ldl 2>"$tmp/cc_err" && "$tmp/robust_asan" quick >/dev/null 2>&1; then
    ASAN_OPTIONS=verify_asan_link_order=0 run "trace=0" "$tmp/robust_asan" quick
    expect_rc 0 "asan (shim first)"
    expect_eq "$out" "quick ok" "asan (shim first): output"
    expect_eq "$err" "==${err#==}" "asan: the line starts with ==PID=="
    expect_eq "$(printf '%s\n' "$err" | grep -c .)" 1 "asan (shim first): one line"
    expect_in "$err" "tlsan: running under AddressSanitizer; the shim passes through" "asan line"
    libasan=$("$cc" -print-file-name=libasan.so)
    if [ -f "$libasan" ]; then
        TLSAN_OPTIONS=trace=0 LD_PRELOAD="$libasan $shim" "$tmp/robust_asan" quick \
            >"$tmp/out" 2>"$tmp/err"
        rc=$?
        out=$(cat "$tmp/out")
        err=$(cat "$tmp/err")
        expect_rc 0 "asan (libasan first)"
        expect_eq "$out" "quick ok" "asan (libasan first): output"
        expect_in "$err" "tlsan: running under AddressSanitizer; the shim passes through" \
            "asan (libasan first): line"
    fi
else
    echo "note: no AddressSanitizer build here, its run is skipped"
fi

echo "robust.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
