#!/usr/bin/env bash
# The engine annotation API (tlsan.h) end to end: prog_api, a small multi-threaded engine,
# runs each planted bug under LD_PRELOAD and the report must name the kind, the tensors, the
# ops and their stacks, with the exact SUMMARY line and the exit status (exitcode); the clean
# run must be silent and exit 0 under every checksum/fill setting; without the shim every
# mode runs as a plain program; the trace starts with the magic and replays; a clean run
# that ends by _exit is as natively and its trace as at a normal exit, and an _exit from a
# signal handler that interrupted the shim ends at once.
# Usage: api.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup api.sh "$@"
shim_prog prog_api

# run OPTIONS MODE: runs prog_api MODE under the shim (run_prog), with no trace left from the
# last run; sets rc, out, err.
run() {
    rm -f "$tmp"/*.trace
    run_prog "$@"
}

# ---- clean runs: silent, exit 0 ----
for opts in "" checksum=all checksum=off fill=0 "fill=0:checksum=all" stack_depth=0 trace=0 \
    halt_on_error=1; do
    run "exitcode=23:$opts" clean
    expect_rc 0 "clean ($opts)"
    if [ -z "$err" ]; then ok; else bad "clean ($opts) is not silent: $err"; fi
    if [ -z "$out" ]; then ok; else bad "clean ($opts) printed: $out"; fi
done

# ---- each planted bug: one report, exact summary, stacks, exit status ----
for opts in "" checksum=all checksum=off; do
    what="clobber ($opts)"
    run "exitcode=23:$opts" clobber
    expect_rc 23 "$what"
    expect_count "$err" "$pid_line" 1 "$what"
    expect_count "$err" "${pid_line}live-corruption on tensor 'h1' in arena 'a0' bytes \[8192, 12192\)$" 1 "$what"
    expect_in "$err" "op 'scale_9' wrote 'tmp' (bytes [9216, 10240)) over 'h1' while 'h1' was still live; op 'add_3' reads it afterwards" "$what"
    expect_top_frame "$err" "last written by op 'mm_1' at" run_op "$what"
    expect_top_frame "$err" "read by op 'add_3' at" run_op "$what"
    expect_top_frame "$err" "overwritten by op 'scale_9' (writing 'tmp') at" run_op "$what"
    expect_top_frame "$err" "'tmp' (bytes [9216, 10240)) bound at" graph "$what"
    expect_count "$err" "^SUMMARY: tlsan: live-corruption h1 \(last written by op 'mm_1', read by 'add_3', overlapped by 'tmp'\)$" 1 "$what"
done

run exitcode=23 stale
expect_rc 23 stale
expect_count "$err" "$pid_line" 1 stale
expect_count "$err" "${pid_line}stale-write at arena 'a0' offset 8292 " 1 stale
expect_in "$err" "released bytes changed before their next tenant 'h4' was bound" stale
expect_in "$err" "expected the sentinel fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f fe 7f" stale
expect_in "$err" "found                 00 00 00 00 00 00 00 00 fe 7f fe 7f fe 7f fe 7f" stale
expect_top_frame "$err" "'h1' (bytes [8192, 12192)) previous tenant, released at" graph stale
expect_top_frame "$err" "'h4' (bytes [8192, 12192)) new tenant, bound at" graph stale
expect_count "$err" "^SUMMARY: tlsan: stale-write at a0\+8292 \(released by 'h1', rebound as 'h4'\)$" 1 stale
# Without fills there is no sentinel to break: the stale write goes unseen.
run exitcode=23:fill=0 stale
expect_rc 0 "stale (fill=0)"

run exitcode=23 uar
expect_rc 23 uar
expect_count "$err" "$pid_line" 1 uar
expect_count "$err" "${pid_line}use-after-release on tensor 'h1'$" 1 uar
expect_in "$err" "op 'relu_4' reads 'h1' (arena 'a0', bytes [8192, 12192)) after its release" uar
expect_top_frame "$err" "read by op 'relu_4' at" run_op uar
expect_top_frame "$err" "released at" graph uar
expect_count "$err" "^SUMMARY: tlsan: use-after-release h1 \(released, read by op 'relu_4'\)$" 1 uar

run exitcode=23 overflow
expect_rc 23 overflow
expect_count "$err" "$pid_line" 1 overflow
expect_count "$err" "${pid_line}slot-overflow on tensor 'h1' in arena 'a0'$" 1 overflow
expect_in "$err" "op 'mm_1' wrote past the end of 'h1' (bytes [8192, 12192), 4000 bytes planned)" overflow
expect_top_frame "$err" "written by op 'mm_1' at" run_op overflow
expect_count "$err" "^SUMMARY: tlsan: slot-overflow h1 \(4000 bytes planned, written by op 'mm_1'\)$" 1 overflow

run exitcode=23 plan-bad
expect_rc 23 plan-bad
expect_count "$err" "$pid_line" 1 plan-bad
expect_count "$err" "${pid_line}live-overlap between 'h1' and 'h2' in plan 'prog_bad'$" 1 plan-bad
expect_in "$err" "shared bytes: [10240, 12192) (1952 bytes)" plan-bad
expect_top_frame "$err" "plan loaded at" graph plan-bad
expect_count "$err" "^SUMMARY: tlsan: live-overlap 'h1' and 'h2' in plan 'prog_bad'$" 1 plan-bad
expect_in "$out" "prog_api: tlsan_plan_load found 1" plan-bad

# halt_on_error stops at the first finding with the exit status.
run exitcode=41:halt_on_error=1 clobber
expect_rc 41 "clobber (halt_on_error)"
expect_count "$err" "^SUMMARY: tlsan: live-corruption h1 " 1 "clobber (halt_on_error)"

# ---- misuse the shim must survive: bad arenas refused with a warning, an arena freed
# before its destroy dropped at the free (the read after it is a use-after-release) ----
hexp='0x[0-9a-f]+'
for opts in checksum=all "checksum=all:fill=0" ""; do
    what="misuse ($opts)"
    run "$opts" misuse
    expect_rc 1 "$what"
    expect_count "$out" "^prog_api: misuse done$" 1 "$what"
    expect_count "$err" "^tlsan: warning: tlsan_arena_create\('unmapped'\): \[0x1000, \+4096\) is not mapped readable( and writable)? memory; ignored$" 1 "$what"
    expect_count "$err" "^tlsan: warning: tlsan_arena_create\('wraps'\): \[0xfffffffffffff000, \+8192\) runs past the end of the address space; ignored$" 1 "$what"
    if [ "$opts" = "checksum=all:fill=0" ]; then n=0; else n=1; fi
    expect_count "$err" "^tlsan: warning: tlsan_arena_create\('read-only'\): \[$hexp, \+8192\) is not mapped readable and writable memory; ignored$" "$n" "$what: read-only"
    expect_count "$err" "^tlsan: warning: arena 'heap' \[$hexp, \+67108864\) freed before tlsan_arena_destroy; dropped \(its tensors are unbound and its memory no longer read\)$" 1 "$what"
    expect_count "$err" "^tlsan: warning: tlsan_tensor_bind\('u'\): $hexp is not the base of an arena$" 1 "$what"
    expect_count "$err" "^tlsan: warning: tlsan_arena_create\('overlap'\): \[$hexp, \+4096\) overlaps arena 'heap'; ignored$" 1 "$what: overlap"
    expect_count "$err" "^tlsan: warning: tlsan_arena_destroy\($hexp\)" 1 "$what: only the unmapped arena's destroy warns"
    expect_count "$err" "$pid_line" 1 "$what"
    expect_count "$err" "^SUMMARY: tlsan: use-after-release t \(released, read by op 'read_t'\)$" 1 "$what"
done

# ---- without the shim: the weak entry points are absent, every annotation a no-op ----
for mode in clean clobber stale uar overflow plan-bad fork-exec; do
    "$prog" "$mode" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    err=$(cat "$tmp/err")
    expect_rc 0 "$mode without the shim"
    if [ -z "$err" ]; then ok; else bad "$mode without the shim printed: $err"; fi
done

# ---- the trace ----
run exitcode=23:trace_path=run.trace clean
expect_rc 0 "trace_path"
if [ -f run.trace ] && [ "$(head -c 8 run.trace)" = TLSANTRC ]; then ok; else bad "run.trace missing or without the magic"; fi
# A program a traced process fork+exec'd writes FILE.PID, not over its ancestor's FILE.
run exitcode=23:trace_path=fe.trace fork-exec
expect_rc 0 "fork-exec"
child=$(printf '%s\n' "$out" | sed -n 's/^prog_api: child \([0-9]*\) exited 0$/\1/p')
if [ -n "$child" ] && [ -f "fe.trace.$child" ] && [ "$(head -c 8 "fe.trace.$child")" = TLSANTRC ]; then
    ok
else
    bad "fork-exec: no fe.trace.CHILD for child '$child' ($(ls))"
fi
if [ -n "$child" ] && [ "$(od -An -tu4 -j16 -N4 "fe.trace.$child" | tr -d ' ')" = "$child" ]; then
    ok
else
    bad "fork-exec: fe.trace.$child does not carry the child's pid"
fi
if [ -f fe.trace ] && [ "$(od -An -tu4 -j16 -N4 fe.trace | tr -d ' ')" != "$child" ]; then
    ok
else
    bad "fork-exec: fe.trace missing or overwritten by the child"
fi
# No trace unless asked for: a run with findings leaves nothing in its directory.
rm -f "$tmp"/*.trace*
run exitcode=23 clobber
expect_rc 23 "clobber without a trace option"
if [ -z "$(ls -A "$tmp" | grep -v '^out$\|^err$')" ]; then ok; else bad "untraced clobber left files: $(ls -A)"; fi
# trace=1: tlsan.PID.trace in the working directory.
run exitcode=23:trace=1 clobber
set -- tlsan.*.trace
if [ $# = 1 ] && [ -f "$1" ] && [ "$(head -c 8 "$1")" = TLSANTRC ]; then ok; else bad "no tlsan.PID.trace with the magic"; fi
if "$bin" replay --help >/dev/null 2>&1 || "$bin" --help 2>&1 | grep -q "replay"; then
    rep=$("$bin" replay --no-symbolize "$1" 2>&1)
    expect_in "$rep" "live-overlap between 'h1' and 'tmp'" "replay of the clobber trace"
    expect_in "$rep" "1 finding at run time (live-corruption)" "replay of the clobber trace"
    run exitcode=23:trace_path=clean.trace clean
    rep=$("$bin" replay --no-symbolize clean.trace 2>&1)
    expect_rc 0 "clean run for replay"
    expect_in "$rep" "no findings" "replay of the clean trace"
fi

# ---- _exit without a finding: as natively, the trace as at a normal exit ----
# prog_api _exit runs clean and ends by _exit(4): under the shim the same status and no
# output, no trace unless asked; asked, a trace with its end record (replay says nothing of
# a death), and tlsan run's summary that of a clean run.
"$prog" _exit >"$tmp/out" 2>"$tmp/err"
native="$?:$(cat "$tmp/out"):$(cat "$tmp/err")"
expect_eq "$native" "4::" "_exit natively"
rm -f "$tmp"/*.trace*
run exitcode=23 _exit
expect_eq "$rc:$out:$err" "$native" "_exit under the shim: as natively"
expect_eq "$(ls -A "$tmp" | grep -v '^out$\|^err$')" "" "_exit under the shim: no file left"
run exitcode=23:trace_path=exit.trace _exit
expect_eq "$rc:$out:$err" "$native" "_exit with a trace: as natively"
rep=$("$bin" replay --no-symbolize exit.trace 2>"$tmp/rep_err")
expect_eq "$?:$(cat "$tmp/rep_err"):$rep" \
    "0::SUMMARY: tlsan: no findings in exit.trace"$'\n'"SUMMARY: tlsan: no findings in exit.trace (plan 1 handed over)" \
    "_exit: replay of its trace (an end record)"
mkdir "$tmp/rd"
TMPDIR=$tmp/rd "$bin" run -- "$prog" _exit >"$tmp/out" 2>"$tmp/err"
rc=$?
rundir=$(find "$tmp/rd" -mindepth 1 -maxdepth 1 -name 'tlsan-run.*')
expect_eq "$rc:$(cat "$tmp/out"):$(cat "$tmp/err")" "4::tlsan: run: no findings; 1 trace in $rundir; exit status 4" \
    "_exit under tlsan run: a clean run's summary"
# _exit from a signal handler that interrupted the shim inside a locked section of its own
# thread (the trace's lock, held while an annotation is recorded): the process ends at once,
# as one that died, instead of waiting for ever for that lock at the trace's end (3 runs of
# 20 did, before the check). 40 runs, each traced; a hung one is killed after 10 s (137).
ends=""
for i in $(seq 40); do
    rm -f "$tmp"/*.trace*
    TLSAN_OPTIONS=trace_path=$tmp/h.trace timeout -s KILL 10 env LD_PRELOAD="$shim" \
        "$prog" _exit-in-handler >"$tmp/out" 2>"$tmp/err"
    ends="$ends$? $(cat "$tmp/out" "$tmp/err")"
done
expect_eq "$ends" "$(printf '0 %.0s' $(seq 40))" "_exit in a signal handler: 40 runs end at once, silent"

echo "api.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
