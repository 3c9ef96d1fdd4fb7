#!/usr/bin/env bash
# `tlsan run`: the program's own status when nothing is found, `exitcode` (read as the shim
# reads it) when anything is, the trace found wherever the options put it, and findings of
# the program's descendants counted too.
# Usage: run.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
bin=${1:?usage: run.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR}
build=$(cd "$(dirname "$bin")" && pwd)
bin=$build/$(basename "$bin")
engine=$build/examples/engine/engine
progs=$(cd "${4:-.}" && pwd)
if [ ! -f "$build/libtlsan.so" ] || [ ! -x "$engine" ]; then
    echo "SKIP: needs libtlsan.so and the example engine in $build"
    exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
unset TLSAN_OPTIONS
failed=0
expect() { # WHAT WANT_RC GOT_RC [PATTERN-IN-STDERR]
    if [ "$2" != "$3" ]; then
        echo "FAIL $1: exit $3, want $2"; sed 's/^/    /' err; failed=1
    elif [ $# -gt 3 ] && ! grep -Eq -- "$4" err; then
        echo "FAIL $1: stderr lacks /$4/"; sed 's/^/    /' err; failed=1
    else
        echo "ok   $1"
    fi
}

"$bin" run -- "$engine" >/dev/null 2>err
expect "clean run" 0 $? "^tlsan: run: no findings; trace tlsan\.[0-9]+\.trace; exit status 0$"
ls tlsan.*.trace >/dev/null 2>&1
expect "default trace in the working directory" 0 $?

"$bin" run -- "$engine" --inject lifetime-short >/dev/null 2>err
expect "a bug" 1 $? "^tlsan: run: [0-9]+ findings \(.*live-overlap.*\); trace tlsan\.[0-9]+\.trace; exit status 1$"

"$bin" run --options exitcode=7 -- "$engine" --inject lifetime-short >/dev/null 2>err
expect "--options exitcode=7" 7 $? "exit status 7$"
"$bin" run --options "exitcode='5'" -- "$engine" --inject lifetime-short >/dev/null 2>err
expect "a quoted exitcode" 5 $? "exit status 5$"
"$bin" run --options exitcode=300 -- "$engine" --inject lifetime-short >/dev/null 2>err
expect "exitcode past 255 (as _exit keeps it)" 44 $? "exit status 44$"

TLSAN_OPTIONS=trace_path=$tmp/via-env.trace "$bin" run -- "$engine" --inject lifetime-short \
    >/dev/null 2>err
expect "trace_path from TLSAN_OPTIONS" 1 $? "trace $tmp/via-env\.trace"
"$bin" run --trace given.trace -- "$engine" >/dev/null 2>err
expect "--trace" 0 $? "trace given\.trace"
[ -s given.trace ]
expect "--trace wrote the file" 0 $?

"$bin" run --trace sh.trace -- sh -c "'$engine' --inject lifetime-short >/dev/null 2>&1; true" \
    2>err
expect "a descendant's findings count" 1 $? "findings .*; trace sh\.trace and its descendants"

"$bin" run -- sh -c "exit 3" 2>err
expect "the program's own status" 3 $? "no findings"
"$bin" run -- sh -c 'kill -TERM $$' 2>err
expect "killed by a signal: 128+N" 143 $? "killed by signal 15"
"$bin" run -- /nonexistent/prog 2>err
expect "a missing program" 127 $? "cannot run '/nonexistent/prog'"
"$bin" run --options -- "$engine" 2>err
expect "--options without a value" 2 $? "--options needs KEY=VALUE pairs"
"$bin" run 2>err
expect "no command" 2 $? "no command given"
"$bin" run --options trace=0 -- "$engine" >/dev/null 2>err
expect "trace=0" 0 $? "no trace at"
# A run that dies mid-run leaves a trace that still replays: the live-corruption was reported
# while it ran, and replay finds the overlap in the prefix.
crash=$progs/prog_crash
for mode in segv exit; do
    "$bin" run --trace "crash-$mode.trace" -- "$crash" "$mode" >/dev/null 2>err
    expect "crash ($mode): caught while running" 1 $? "SUMMARY: tlsan: live-corruption a \(last written by op 'make_a', read by 'use_both', overlapped by 'b'\)"
    "$bin" replay --format json "crash-$mode.trace" >replay.json 2>err
    rc=$?
    grep -q '"kind":"live-overlap"' replay.json && grep -q '"tensors":\["a","b"\]' replay.json
    expect "crash ($mode): replay finds the overlap" "0 1" "$? $rc" "the trace has no end record"
done
exit "$failed"
