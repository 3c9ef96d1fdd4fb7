#!/usr/bin/env bash
# `tlsan run` and where traces go. The program's own end (status, or the signal it died of),
# a status of 0 made `exitcode` (read as the shim reads it) when anything was found; every process's trace in one run
# directory (a new ${TMPDIR:-/tmp}/tlsan-run.XXXXXX, or --trace-dir), so the summary and the
# exit status count a descendant that ran in another directory or rewrote TLSAN_OPTIONS;
# nothing written in the program's directories (git add -A commits no trace file, an
# unwritable directory prints nothing); a process that records nothing leaves no file (1,000
# forks: none), one that dies after a finding a 4 KiB one; plain LD_PRELOAD records nothing
# unless asked. Every summary line is compared whole.
# Usage: run.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup run.sh "$@"
build=$(dirname "$bin")
engine=$build/examples/engine/engine
heap=$progs/prog_heap
forker=$progs/prog_fork
crash=$progs/prog_crash
[ -x "$engine" ] || { echo "SKIP: needs the example engine in $build"; exit 77; }
unset TLSAN_OPTIONS TLSAN_TRACE_DIR
export TMPDIR=$tmp/tmpdir
mkdir -p "$TMPDIR" "$tmp/work/sub"
work=$tmp/work
cd "$work" || exit 1

# runit ARGS...: `tlsan run ARGS` in $work; sets rc, out, err, last (the summary line) and
# rundir (the one run directory under $TMPDIR, or "" when none is left).
runit() {
    "$bin" run "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    last=$(tail -n 1 "$tmp/err")
    rundir=
    local n
    n=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 -name 'tlsan-run.*' | wc -l)
    [ "$n" -le 1 ] || bad "$n run directories in $TMPDIR, want at most 1"
    [ "$n" = 0 ] || rundir=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 -name 'tlsan-run.*')
}
# expect_eq GOT WANT WHAT
# expect_clean_work WHAT: the program's directories hold only what the test put there.
expect_clean_work() {
    expect_eq "$(cd "$work" && find . -mindepth 1 ! -path ./sub ! -path ./sub/keep | sort | tr '\n' ' ')" \
        "$2" "$1: files in the program's directories"
}
# traces DIR: the names of DIR's files, sorted, on one line.
traces() { (cd "$1" && ls -A | sort | tr '\n' ' '); }
clear_tmpdir() { rm -rf "${TMPDIR:?}"/* "$work"/*.trace* "$work"/sub/*; }

# ---- the default run directory ----
runit -- "$engine"
expect_rc 0 "clean run"
[ -n "$rundir" ] && ok || bad "clean run: no run directory in $TMPDIR"
expect_eq "$last" "tlsan: run: no findings; 1 trace in $rundir; exit status 0" "clean run"
expect_eq "$(traces "$rundir")" "$(cd "$rundir" && ls | grep -E '^tlsan\.[0-9]+\.trace$') " \
    "clean run: one tlsan.PID.trace"
expect_clean_work "clean run" ""
"$bin" replay --no-symbolize "$rundir" >"$tmp/rep" 2>&1
expect_eq "$?:$(grep -c '^SUMMARY: tlsan: no findings in' "$tmp/rep")" "0:2" "replay DIR of the clean run"
"$bin" export "$rundir" -o "$tmp/plan.json" 2>"$tmp/exp_err"
expect_eq "$?:$(head -c 1 "$tmp/plan.json")" "0:{" "export DIR with one trace"
clear_tmpdir

runit -- "$engine" --inject lifetime-short
expect_rc 1 "a bug"
expect_eq "$last" "tlsan: run: 5 findings (2 live-overlap, 1 lifetime-too-short, 2 use-after-release); 1 trace in $rundir; exit status 1" "a bug"
clear_tmpdir

runit --options exitcode=7 -- "$engine" --inject lifetime-short
expect_rc 7 "--options exitcode=7"
expect_in "$last" "; exit status 7" "--options exitcode=7"
clear_tmpdir
runit --options "exitcode='5'" -- "$engine" --inject lifetime-short
expect_rc 5 "a quoted exitcode"
clear_tmpdir
runit --options exitcode=300 -- "$engine" --inject lifetime-short
expect_rc 44 "exitcode past 255 (as _exit keeps it)"
clear_tmpdir

# ---- descendants, wherever they run ----
# A descendant in another directory: before, its double free went to stderr and the summary
# said "no findings; exit status 0".
runit -- sh -c "cd sub && '$heap' double; exit 0"
expect_rc 1 "a descendant in another directory"
expect_eq "$last" "tlsan: run: 1 finding (1 double-free); 1 trace in $rundir (1 truncated: a process died or called exec); exit status 1" \
    "a descendant in another directory"
expect_clean_work "a descendant in another directory" ""
clear_tmpdir
# One that rewrites TLSAN_OPTIONS (even to exit 0 itself): TLSAN_TRACE_DIR still holds.
runit -- sh -c "cd sub && TLSAN_OPTIONS=exitcode=0 '$heap' double; exit 0"
expect_rc 1 "a descendant with its own TLSAN_OPTIONS"
expect_eq "$last" "tlsan: run: 1 finding (1 double-free); 1 trace in $rundir (1 truncated: a process died or called exec); exit status 1" \
    "a descendant with its own TLSAN_OPTIONS"
clear_tmpdir
# Three processes: two engines (one buggy) and the double free, each its own trace.
runit -- sh -c "'$engine' --inject lifetime-short >/dev/null 2>&1; cd sub && '$engine' >/dev/null; '$heap' double 2>/dev/null; exit 0"
expect_rc 1 "three descendants"
expect_eq "$last" "tlsan: run: 6 findings (2 live-overlap, 1 lifetime-too-short, 2 use-after-release, 1 double-free); 3 traces in $rundir (1 truncated: a process died or called exec); exit status 1" "three descendants"
"$bin" replay --no-symbolize "$rundir" >"$tmp/rep" 2>"$tmp/rep_err"
expect_eq "$?:$(grep -c '^SUMMARY: tlsan:' "$tmp/rep"):$(grep -c 'reported [0-9]* findings\? at run time' "$tmp/rep_err")" \
    "1:5:2" "replay DIR: one report per process and plan, status the worst"
"$bin" export "$rundir" >/dev/null 2>"$tmp/exp_err"
expect_eq "$?:$(head -n 1 "$tmp/exp_err")" \
    "2:tlsan: error: export: $rundir holds 3 traces (one per process); export one of them:" \
    "export DIR with several traces"
clear_tmpdir

# ---- --trace-dir ----
runit --trace-dir given -- sh -c "cd sub && '$heap' double; exit 0"
expect_rc 1 "--trace-dir"
expect_eq "$last" "tlsan: run: 1 finding (1 double-free); 1 trace in $work/given (1 truncated: a process died or called exec); exit status 1" "--trace-dir"
expect_eq "$rundir" "" "--trace-dir: no default run directory"
runit --trace-dir given -- "$engine"
expect_rc 2 "--trace-dir that already holds traces"
expect_eq "$last" "tlsan: error: run: the trace directory given already holds 1 trace ($(echo "$work"/given/tlsan.*.trace)): give an empty or new directory, so the summary counts this run only" "--trace-dir that already holds traces"
rm -rf given
runit --options trace_dir=given2 -- "$heap" double
expect_eq "$rc:$last" "134:tlsan: run: 1 finding (1 double-free); 1 trace in $work/given2 (1 truncated: a process died or called exec); killed by signal 6 (Aborted)" \
    "trace_dir in the options is the run directory"
rm -rf given2

# ---- --trace FILE and trace_path: FILE, and FILE.PID beside it, made absolute ----
TLSAN_OPTIONS=trace_path=$tmp/via-env.trace runit -- "$engine" --inject lifetime-short
expect_eq "$rc:$last" "1:tlsan: run: 5 findings (2 live-overlap, 1 lifetime-too-short, 2 use-after-release); trace $tmp/via-env.trace; exit status 1" "trace_path from TLSAN_OPTIONS"
runit --trace given.trace -- "$engine"
expect_eq "$rc:$last" "0:tlsan: run: no findings; trace $work/given.trace; exit status 0" "--trace"
[ -s given.trace ] && ok || bad "--trace wrote no file"
runit --trace sh.trace -- sh -c "cd sub && '$heap' double 2>/dev/null; exit 0"
expect_eq "$rc:$last" "1:tlsan: run: 1 finding (1 double-free); trace $work/sh.trace (1 truncated: a process died or called exec); exit status 1" \
    "--trace with a descendant in another directory"
runit --trace fk.trace --options halt_on_error=0 -- "$forker" 3 double
expect_eq "$rc:$last" "1:tlsan: run: 3 findings (3 double-free); trace $work/fk.trace and its descendants' FILE.PID (3 truncated: a process died or called exec); exit status 1" "--trace: forked children write FILE.PID"
expect_eq "$(ls | grep -c '^fk\.trace\.[0-9]*$'):$([ -e fk.trace ] && echo parent)" "3:" \
    "--trace: three FILE.PID, no FILE for the parent that recorded nothing"
runit --trace none.trace -- sh -c "exit 3"
expect_eq "$rc:$last" "3:tlsan: run: no findings; nothing recorded at $work/none.trace; exit status 3" \
    "--trace, nothing recorded"
runit --trace a.trace --trace-dir d -- true
expect_eq "$rc:$last" "2:tlsan: error: --trace FILE and --trace-dir DIR: give one (see 'tlsan --help')" \
    "--trace and --trace-dir"
rm -f ./*.trace*

# ---- what is left behind ----
# 1,000 forked children that record nothing, and 200 fork+exec'd programs: no file at all,
# and the empty run directory is removed.
runit -- "$forker" 1000 clean
expect_eq "$rc:$out:$last" "0:fork 1000 ok:tlsan: run: no findings; no process recorded a trace (nothing annotated, nothing found); exit status 0" "1,000 forks"
expect_eq "$rundir" "" "1,000 forks: no run directory left"
expect_clean_work "1,000 forks" ""
runit -- sh -c 'for i in $(seq 200); do /bin/true; done'
expect_eq "$rc:$rundir" "0:" "200 fork+exec: nothing left"
# 200 children that each free a block twice and die of SIGKILL: one trace each, 4 KiB (the
# first size step: the file is never cut, as no exit handler runs).
runit --trace-dir fk --options halt_on_error=0 -- "$forker" 200 double
expect_eq "$rc:$last" "1:tlsan: run: 200 findings (200 double-free); 200 traces in $work/fk (200 truncated: a process died or called exec); exit status 1" "200 dying children with findings"
expect_eq "$(find fk -type f | wc -l):$(find fk -type f -printf '%s\n' | awk '{s += $1} END {print s}')" \
    "200:819200" "200 dying children: 200 files of 4096 bytes"
rm -rf fk
# git under tlsan run: `git add -A` commits no trace.
git init -q repo && echo a >repo/a.txt
runit -- sh -c 'cd repo && git add -A && git -c user.email=t@example.com -c user.name=t commit -qm one'
expect_eq "$rc:$(git -C repo ls-files | tr '\n' ' ')" "0:a.txt " "git add -A under tlsan run"
expect_eq "$(cd repo && git status --porcelain --ignored | wc -l)" 0 "git: nothing untracked after"
rm -rf repo
clear_tmpdir

# ---- plain LD_PRELOAD: no trace unless asked ----
LD_PRELOAD=$shim "$engine" >/dev/null 2>"$tmp/err"
expect_eq "$?:$(cat "$tmp/err")" "0:" "plain LD_PRELOAD: an annotated program"
LD_PRELOAD=$shim "$heap" double >/dev/null 2>&1
expect_eq "$?" 134 "plain LD_PRELOAD: a double free (aborts, as glibc does)"
TLSAN_OPTIONS=halt_on_error=0 LD_PRELOAD=$shim "$forker" 200 double >/dev/null 2>&1
expect_clean_work "plain LD_PRELOAD" ""
expect_eq "$(ls -A "$TMPDIR")" "" "plain LD_PRELOAD: nothing in TMPDIR"
TLSAN_OPTIONS=trace=1:halt_on_error=0 LD_PRELOAD=$shim "$heap" double >/dev/null 2>&1
expect_eq "$(ls | grep -cE '^tlsan\.[0-9]+\.trace$')" 1 "trace=1: tlsan.PID.trace in the working directory"
rm -f ./*.trace
# A directory nobody can write (even root: /proc): nothing printed, by default and under run.
(cd /proc && LD_PRELOAD=$shim "$heap" clean) >/dev/null 2>"$tmp/err"
expect_eq "$?:$(cat "$tmp/err")" "3:" "unwritable working directory: silent"
(cd /proc && "$bin" run -- "$engine") >/dev/null 2>"$tmp/err"
expect_eq "$?:$(grep -vc '^tlsan: run: no findings; 1 trace in ' "$tmp/err")" "0:0" \
    "unwritable working directory under tlsan run: only the summary"
clear_tmpdir

# ---- status and usage ----
runit -- sh -c "exit 3"
expect_eq "$rc:$last" "3:tlsan: run: no findings; no process recorded a trace (nothing annotated, nothing found); exit status 3" "the program's own status"
runit -- sh -c 'kill -TERM $$'
expect_rc 143 "killed by a signal: dies of it too (143 from a shell)"
expect_in "$err" "killed by signal 15" "killed by a signal"
# A program that exits 127 itself (a shell whose last command is not found) is not a failed
# exec: its run is summarized, a descendant's finding counted, its own failing status kept.
runit -- sh -c "$heap double 2>/dev/null; exec /nonexistent/prog 2>/dev/null"
expect_eq "$rc:$(tail -n 1 "$tmp/err" | sed 's/ in .*;/ in DIR;/')" \
    "127:tlsan: run: 1 finding (1 double-free); 1 trace in DIR; exit status 127" \
    "the program's own 127, with a finding: summarized"
clear_tmpdir
# A termination signal sent to tlsan (kill, a harness stopping its child) reaches the
# program, as it would natively, instead of leaving it running with tlsan gone.
rm -f "$tmp/out"
"$bin" run -- sh -c 'trap "echo got TERM; exit 5" TERM; echo started; while :; do sleep 0.05; done' \
    >"$tmp/out" 2>"$tmp/err" &
tpid=$!
wait_for_line "$tmp/out" started "$tpid"
cpid=$(pgrep -P "$tpid")
kill -TERM "$tpid"
wait "$tpid"
rc=$?
[ -n "$cpid" ] && kill -KILL "$cpid" 2>/dev/null # left running when not passed on
expect_eq "$rc:$(cat "$tmp/out" | tr '\n' ' ')" "5:started got TERM " "SIGTERM to tlsan run: passed on"
expect_in "$(cat "$tmp/err")" "tlsan: run: no findings" "SIGTERM to tlsan run: summarized"
clear_tmpdir
# Run as root, a process that drops its privileges (a daemon's setuid) still records its
# findings in the run directory: the summary must not be a false all-clear.
# The unprivileged user must be able to load the shim and the program: not so in a clone
# under a folder only root may enter (/root is 0700 on Debian).
drop="setpriv --reuid=65534 --regid=65534 --clear-groups"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
    ! $drop sh -c "test -r '$shim' && test -x '$heap'" 2>/dev/null; then
    echo "note: skipped the dropped-privilege check: uid 65534 cannot read $shim or run $heap"
elif [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    open_tmp=$(mktemp -d /tmp/tlsan-runsh.XXXXXX) && chmod 755 "$open_tmp"
    TMPDIR=$open_tmp runit -- sh -c "$drop $heap waf 2>/dev/null; exit 0"
    expect_eq "$rc:$(tail -n 1 "$tmp/err" | sed 's/ in .*;/ in DIR;/')" \
        "1:tlsan: run: 1 finding (1 heap-write-after-free); 1 trace in DIR; exit status 1" \
        "a descendant that dropped root: its finding counted"
    rm -rf "$open_tmp"
fi
runit -- /nonexistent/prog
expect_eq "$rc:$last:$rundir" "127:tlsan: error: run: cannot run '/nonexistent/prog': No such file or directory:" "a missing program"
runit --options -- "$engine"
expect_rc 2 "--options without a value"
expect_in "$err" "--options needs KEY=VALUE pairs" "--options without a value"
runit
expect_rc 2 "no command"
expect_in "$err" "no command given" "no command"
runit --options trace=0 -- "$engine"
expect_eq "$rc:$last:$rundir" "0:tlsan: run: tracing off (trace=0), findings not counted; exit status 0:" "trace=0"

# A run that dies mid-run leaves a trace that still replays: the live-corruption was reported
# while it ran, and replay finds the overlap in the prefix.
for mode in segv exit; do
    runit -- "$crash" "$mode"
    [ "$mode" = segv ] && expect_rc 139 "crash ($mode): dies of SIGSEGV, as natively"
    [ "$mode" = exit ] && expect_rc 1 "crash ($mode): exit status 0 made exitcode by the finding"
    expect_in "$err" "SUMMARY: tlsan: live-corruption a (last written by op 'make_a', read by 'use_both', overlapped by 'b')" "crash ($mode)"
    expect_in "$last" "(1 truncated: a process died or called exec); $([ "$mode" = segv ] &&
        echo "killed by signal 11 (Segmentation fault)" || echo "exit status 1")" "crash ($mode)"
    "$bin" replay --format json "$rundir" >"$tmp/replay.json" 2>"$tmp/err"
    rc=$?
    grep -q '"kind":"live-overlap"' "$tmp/replay.json" && grep -q '"tensors":\["a","b"\]' "$tmp/replay.json"
    expect_eq "$? $rc" "0 1" "crash ($mode): replay finds the overlap"
    expect_in "$(cat "$tmp/err")" "the trace has no end record" "crash ($mode): replay"
    clear_tmpdir
done

echo "run.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
