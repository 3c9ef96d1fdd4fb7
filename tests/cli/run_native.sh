#!/usr/bin/env bash
# `tlsan run -- CMD` ends as CMD ends natively: the same exit status, the same signal death
# (and the program's core dump, not tlsan's), the signal dispositions and environment the
# program would have natively, 126/127 as a shell when it cannot be run, a usable fallback
# when TMPDIR is not, and a summary that never says "no findings" when the traces could not be
# written. Each check compares with the native run where there is one.
# Usage: run_native.sh TLSAN_BIN [SHARED_DIR] [SOURCE_DIR]
set -u -o pipefail
. "$(dirname "$0")/../shim/lib/common.bash"
cli_shim_setup run_native.sh "$@"
engine=$build/examples/engine/engine
crash=$build/tests/shim/prog_crash
[ -x "$engine" ] && [ -x "$crash" ] || { echo "SKIP: needs the example engine and prog_crash"; exit 77; }
command -v perl >/dev/null || { echo "SKIP: needs perl"; exit 77; }
export TMPDIR=$tmp/tmpdir
mkdir -p "$TMPDIR"
cd "$tmp" || exit 1

# ends CMD...: how CMD ended, as its parent's wait status says: "exit N" or "signal N" and
# " core" when it dumped core. Its stdout and stderr go to $tmp/out and $tmp/err.
ends() {
    ENDS_FILE=$tmp/ends perl -e 'my $pid = fork; if (!$pid) { exec @ARGV or exit 127 } waitpid($pid, 0);
        my $s = $?; open(my $f, ">", $ENV{ENDS_FILE}) or die;
        print $f $s & 127 ? "signal " . ($s & 127) . ($s & 128 ? " core" : "") : "exit " . ($s >> 8)' \
        "$@" >"$tmp/out" 2>"$tmp/err"
    cat "$tmp/ends"
}
# A command's run directory (under $TMPDIR) in the summary, as RUNDIR.
last_line() { tail -n 1 "$tmp/err" | sed -E "s|$TMPDIR/tlsan-run\.[A-Za-z0-9]+|RUNDIR|g"; }

# ---- 1. a signal death is repeated, not turned into 128+N ----
expect_eq "$(ends sh -c 'kill -TERM $$')" "signal 15" "natively: SIGTERM"
expect_eq "$(ends "$bin" run -- sh -c 'kill -TERM $$')" "signal 15" "tlsan run: SIGTERM"
expect_eq "$(last_line)" "tlsan: run: no findings; no process recorded a trace (nothing annotated, nothing found); killed by signal 15 (Terminated)" \
    "tlsan run: SIGTERM, the summary first"
# A crash with a finding: the program dumps core (when the system lets it), tlsan does not.
native_crash=$(ulimit -c unlimited 2>/dev/null; cd "$tmp" && ends "$crash" segv)
rm -f "$tmp"/core*
run_crash=$(ulimit -c unlimited 2>/dev/null; cd "$tmp" && ends "$bin" run -- "$crash" segv)
expect_eq "$run_crash" "signal 11" "tlsan run: SIGSEGV, no core of its own"
expect_eq "$(last_line)" "tlsan: run: 1 finding (1 live-corruption); 1 trace in RUNDIR (1 truncated: a process died or called exec); killed by signal 11 (Segmentation fault)" \
    "tlsan run: SIGSEGV with a finding"
if [ "$native_crash" = "signal 11 core" ]; then
    expect_eq "$(find "$tmp" -maxdepth 1 -name 'core*' | wc -l)" 1 "tlsan run: the program's core dump"
fi
rm -f "$tmp"/core*
# ^C in a script: the terminal's SIGINT reaches the whole foreground group; bash stops the
# script when its command died of it. Simulated by a SIGINT to the script's process group.
# script PROGRAM...: runs "PROGRAM; echo after" in a new process group (SIGINT not ignored, as
# a background job inherits it), interrupted once the program says "ready"; prints how bash
# ended and what the script printed.
script() {
    rm -f "$tmp/script.out"
    setsid perl -e '$SIG{INT} = $SIG{QUIT} = "DEFAULT"; exec @ARGV' \
        bash -c '"$@"; echo after' bash "$@" >"$tmp/script.out" 2>/dev/null &
    local spid=$!
    wait_for_line "$tmp/script.out" ready "$spid"
    kill -INT -- "-$spid"
    wait "$spid"
    echo "status $? $(tr '\n' ' ' <"$tmp/script.out")"
}
native=$(script sh -c 'echo ready; exec sleep 10')
expect_eq "$native" "status 130 ready " "natively: ^C stops the script"
expect_eq "$(script "$bin" run -- sh -c 'echo ready; exec sleep 10')" "$native" "tlsan run: ^C stops the script"
# A signal sent to tlsan alone is passed on to the program, which would have received it
# (SIGINT and SIGQUIT set back to the default: a background job inherits them ignored).
for sig in INT HUP USR1 QUIT; do
    rm -f "$tmp/out" # the last round's "started" is no sign of this one's
    perl -e '$SIG{INT} = $SIG{QUIT} = "DEFAULT"; exec @ARGV' "$bin" run -- sh -c "trap 'echo got $sig; exit 5' $sig; echo started; while :; do sleep 0.05; done" \
        >"$tmp/out" 2>"$tmp/err" &
    tpid=$!
    wait_for_line "$tmp/out" started "$tpid"
    kill "-$sig" "$tpid"
    wait "$tpid"
    expect_eq "$?:$(tr '\n' ' ' <"$tmp/out")" "5:started got $sig " "SIG$sig sent to tlsan run: passed on"
done

# ---- 2. a summary written to a closed pipe: no SIGPIPE death ----
"$bin" run -- sleep 0.3 2>&1 | true
expect_eq "${PIPESTATUS[*]}" "0 0" "tlsan run ... 2>&1 | true"
# The program still dies of SIGPIPE where it would natively.
yes | head -n 1 >/dev/null
native="${PIPESTATUS[*]}"
"$bin" run -- yes 2>/dev/null | head -n 1 >/dev/null
expect_eq "${PIPESTATUS[*]}" "$native" "yes | head -n 1: the program's SIGPIPE"

# ---- 3. inherited dispositions: SIGCHLD ignored, SIGPIPE ignored ----
ignore_chld() { perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV' "$@"; }
ignore_chld sh -c 'exit 3'
native=$?
ignore_chld "$bin" run -- sh -c 'exit 3' 2>/dev/null
expect_eq "$?" "$native" "SIGCHLD ignored: the program's status"
sigs() { grep -E '^Sig(Ign|Blk)' /proc/self/status | tr '\n' ' '; }
export -f sigs
for how in plain chld pipe; do
    case $how in
        plain) wrap=() ;;
        chld) wrap=(perl -e '$SIG{CHLD} = "IGNORE"; exec @ARGV') ;;
        pipe) wrap=(perl -e '$SIG{PIPE} = "IGNORE"; exec @ARGV') ;;
    esac
    native=$("${wrap[@]}" bash -c sigs)
    expect_eq "$("${wrap[@]}" "$bin" run -- bash -c sigs 2>/dev/null)" "$native" \
        "the program's ignored and blocked signals ($how)"
done

# ---- 4. exitcode: replaces a status of 0 only; a signal death always wins ----
for opts in exitcode=1 exitcode=0; do
    TLSAN_OPTIONS=$opts LD_PRELOAD=$shim ends "$crash" segv >/dev/null
    preload=$(cat "$tmp/ends")
    expect_eq "$preload" "signal 11" "LD_PRELOAD, $opts: the crash"
    expect_eq "$(TLSAN_OPTIONS=$opts ends "$bin" run -- "$crash" segv)" "$preload" "tlsan run, $opts: the crash"
    # The engine with a bug that cannot write its dump: natively 3.
    expect_eq "$(ends "$engine" --inject lifetime-short --dump /nonexistent/d)" "exit 3" "natively: a failing engine"
    expect_eq "$(TLSAN_OPTIONS=$opts LD_PRELOAD=$shim ends "$engine" --inject lifetime-short --dump /nonexistent/d)" \
        "exit 3" "LD_PRELOAD, $opts: a failing engine with findings"
    expect_eq "$(TLSAN_OPTIONS=$opts ends "$bin" run -- "$engine" --inject lifetime-short --dump /nonexistent/d)" \
        "exit 3" "tlsan run, $opts: a failing engine with findings"
    expect_eq "$(last_line)" "tlsan: run: 5 findings (2 live-overlap, 1 lifetime-too-short, 2 use-after-release); 1 trace in RUNDIR; exit status 3" \
        "tlsan run, $opts: the summary of a failing engine"
    # A descendant's findings, the program's own failure.
    expect_eq "$(TLSAN_OPTIONS=$opts ends "$bin" run -- sh -c "'$engine' --inject lifetime-short; exit 4")" \
        "exit 4" "tlsan run, $opts: a shell exiting 4 after a finding"
done
for code in 0 7; do
    expect_eq "$(TLSAN_OPTIONS=exitcode=$code LD_PRELOAD=$shim ends "$engine" --inject lifetime-short)" \
        "exit $code" "LD_PRELOAD, exitcode=$code: a status of 0 with findings"
    expect_eq "$(TLSAN_OPTIONS=exitcode=$code ends "$bin" run -- "$engine" --inject lifetime-short)" \
        "exit $code" "tlsan run, exitcode=$code: a status of 0 with findings"
done

rm -rf "${TMPDIR:?}"/*

# ---- 5. a program that cannot be run: 126 found but not executable, 127 not found ----
printf '#!/bin/sh\necho hi\n' >"$tmp/noexec"
chmod 644 "$tmp/noexec"
for cmd in /tmp "$tmp/noexec" /nonexistent/prog no-such-command-here; do
    bash -c '"$@"' bash "$cmd" 2>/dev/null
    native=$?
    "$bin" run -- "$cmd" 2>"$tmp/err"
    expect_eq "$?" "$native" "cannot run $cmd: the shell's status"
    case $cmd in
        /tmp) want="cannot run '/tmp': Is a directory" ;;
        "$tmp/noexec") want="cannot run '$tmp/noexec': Permission denied" ;;
        /nonexistent/prog) want="cannot run '/nonexistent/prog': No such file or directory" ;;
        *) want="cannot run '$cmd': command not found" ;;
    esac
    expect_eq "$(cat "$tmp/err")" "tlsan: error: run: $want" "cannot run $cmd: the message"
done
expect_eq "$(ls -A "$TMPDIR")" "" "cannot run: no run directory left"

# ---- 6. the environment: TLSAN_OPTIONS unset stays unset ----
expect_eq "$("$bin" run -- sh -c 'echo "${TLSAN_OPTIONS-unset}"' 2>/dev/null)" "unset" "TLSAN_OPTIONS unset"
expect_eq "$(TLSAN_OPTIONS= "$bin" run -- sh -c 'echo "${TLSAN_OPTIONS-unset}:"' 2>/dev/null)" ":" \
    "TLSAN_OPTIONS set and empty"
expect_eq "$("$bin" run --options verbosity=0 -- sh -c 'echo "$TLSAN_OPTIONS"' 2>/dev/null)" "verbosity=0" \
    "--options given"

# ---- 7. traces that could not be written: never "no findings" ----
bug=("$engine" --inject lifetime-short)
"$bin" run --trace /dev/full -- "${bug[@]}" >/dev/null 2>"$tmp/err"
expect_eq "$?:$(last_line)" "1:tlsan: run: traces missing or incomplete (/dev/full is not a regular file; see the shim's lines above): findings may be missing from this count; 0 findings counted; trace /dev/full; exit status 1" \
    "--trace /dev/full"
expect_in "$(cat "$tmp/err")" "tlsan: cannot truncate trace file /dev/full: Invalid argument; tracing off" \
    "--trace /dev/full: the shim's line"
if [ "$(id -u)" = 0 ] && mkdir -p "$tmp/ro" "$tmp/small" && mount --bind "$tmp/ro" "$tmp/ro" 2>/dev/null; then
    trap 'umount "$tmp/ro" "$tmp/small" 2>/dev/null; rm -rf "$tmp"' EXIT
    mount -o remount,bind,ro "$tmp/ro"
    "$bin" run --trace-dir "$tmp/ro" -- "${bug[@]}" >/dev/null 2>"$tmp/err"
    expect_eq "$?:$(last_line)" "1:tlsan: run: traces missing or incomplete ($tmp/ro is not writable: Read-only file system; see the shim's lines above): findings may be missing from this count; 0 findings counted; 0 traces in $tmp/ro; exit status 1" \
        "--trace-dir on a read-only file system"
    umount "$tmp/ro"
    # A file system too small for the trace: 8 KiB of tmpfs.
    mount -t tmpfs -o size=8k tmpfs "$tmp/small"
    "$bin" run --trace-dir "$tmp/small/d" -- "${bug[@]}" >/dev/null 2>"$tmp/err"
    expect_eq "$?:$(last_line)" "1:tlsan: run: traces missing or incomplete (the file system of $tmp/small/d is full (4 KiB free); see the shim's lines above): findings may be missing from this count; 0 findings counted; 1 trace in $tmp/small/d (1 truncated: a process died or called exec); exit status 1" \
        "--trace-dir on a full file system"
    expect_in "$(cat "$tmp/err")" "tlsan: trace: cannot grow the trace file: No space left on device; tracing off" \
        "a full file system: the shim's line"
    umount "$tmp/small"
else
    echo "note: not root or no mount: the read-only and full file system checks skipped"
fi

# ---- 8. an unusable TMPDIR: /tmp instead, as the program would run natively ----
for bad_tmp in "$tmp/none" /dev/null; do
    TMPDIR=$bad_tmp "$bin" run -- sh -c 'echo "ran with $TMPDIR"' >"$tmp/out" 2>"$tmp/err"
    expect_eq "$?:$(cat "$tmp/out"):$(cat "$tmp/err")" \
        "0:ran with $bad_tmp:tlsan: run: no findings; no process recorded a trace (nothing annotated, nothing found); exit status 0" \
        "TMPDIR=$bad_tmp"
    TMPDIR=$bad_tmp "$bin" run --options verbosity=1 -- true 2>"$tmp/err"
    expect_eq "$(grep -v '==tlsan:' "$tmp/err" | head -n 1)" \
        "tlsan: run: cannot create a run directory in TMPDIR=$bad_tmp ($([ "$bad_tmp" = /dev/null ] && echo "Not a directory" || echo "No such file or directory")); using /tmp" \
        "TMPDIR=$bad_tmp, verbosity=1: said once"
done

# ---- 9. the summary never blocks: a caller that reads stderr only after the end ----
# The program fills the pipe (64 KiB, its capacity) and the caller waits for the end before
# reading, as Popen(...).wait() does: natively that ends; tlsan's summary, one more line into
# the full pipe, once blocked tlsan for ever. Now it is left out.
if command -v python3 >/dev/null; then
    fill='import sys; sys.stderr.write("x" * 65536)'
    waited='import subprocess, sys
p = subprocess.Popen(sys.argv[1:], stderr=subprocess.PIPE)
try:
    rc = p.wait(timeout=20)
    print("exited", rc, "stderr bytes", len(p.stderr.read()))
except subprocess.TimeoutExpired:
    print("hung"); p.kill(); p.wait()'
    expect_eq "$(python3 -c "$waited" python3 -c "$fill")" "exited 0 stderr bytes 65536" \
        "a full stderr pipe, natively"
    expect_eq "$(python3 -c "$waited" "$bin" run -- python3 -c "$fill")" \
        "exited 0 stderr bytes 65536" "a full stderr pipe under tlsan run: no hang, no summary"
fi

# ---- 10. a shim at a path LD_PRELOAD cannot carry: an error, not a run left unchecked ----
for odd in "with space" "with:colon"; do
    mkdir -p "$tmp/$odd"
    cp "$(dirname "$bin")/libtlsan.so" "$tmp/$odd/libtlsan.so"
    TLSAN_SHIM="$tmp/$odd/libtlsan.so" "$bin" run -- true >"$tmp/out" 2>"$tmp/err"
    expect_eq "$?:$(cat "$tmp/err")" \
        "2:tlsan: error: run: the shim's path '$tmp/$odd/libtlsan.so' holds a space or a colon, which LD_PRELOAD cannot carry (ld.so splits it there); install tlsan in a directory without them, or point TLSAN_SHIM at a link to libtlsan.so that has none" \
        "a shim at '$odd'"
done

# ---- 11. a set-user-ID command: LD_PRELOAD is ignored for it, and tlsan says so ----
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
    cp "$(type -P true)" "$tmp/setuid-true"
    chown nobody "$tmp/setuid-true"
    chmod 4755 "$tmp/setuid-true"
    "$bin" run -- "$tmp/setuid-true" >"$tmp/out" 2>"$tmp/err"
    expect_eq "$?:$(head -n 1 "$tmp/err")" \
        "0:tlsan: run: warning: '$tmp/setuid-true' is set-user-ID: the dynamic loader ignores LD_PRELOAD for it and drops it from its environment, so it and the programs it starts run unchecked" \
        "a set-user-ID command"
    chmod 0755 "$tmp/setuid-true"
    "$bin" run -- "$tmp/setuid-true" >"$tmp/out" 2>"$tmp/err"
    expect_eq "$(grep -c warning "$tmp/err")" "0" "the same command without the bit: no warning"
else
    echo "note: not root: the set-user-ID check skipped"
fi

echo "run_native.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
