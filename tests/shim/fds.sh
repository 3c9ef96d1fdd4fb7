#!/usr/bin/env bash
# The program's descriptors are its own under the shim (issue 9, part 2): libunwind holds no
# pipe (its memory validation, used through frames without unwind tables, reads and writes
# none), the shim's trace and log descriptors sit where open() does not reach and are
# checked before use. prog_fds's modes run natively and under the shim, with every inherited
# descriptor from 3 up closed, and their files and outputs are compared byte for byte:
#   - a daemon that closes its descriptors and reopens a data file and a log on 3 and 4,
#     then allocates and frees through frames without unwind tables (and frees twice: two
#     reports, with halt_on_error=0: by default the shim aborts on one, as glibc does),
#     keeps both files exactly as natively;
#   - the first open() returns 3; /proc/self/fd lists what it lists natively (plus, once
#     something was reported, the shim's log and trace, at 1024 and up; before that none:
#     the log opens at the first report); python3's first os.open returns what it
#     returns natively, and its /proc/self/fd listing is the native one;
#   - with a soft limit of 256 the program opens as many files as natively (the shim's
#     descriptors sit past the limit); with the hard limit at 256 too, as many while nothing
#     was reported (no log open yet, no trace);
#   - a program that dup2()s its own file onto the shim's descriptors keeps it intact.
# Usage: fds.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup fds.sh "$@"
prog=$progs/prog_fds

expect_same_file() {
    if cmp -s "$1" "$2"; then ok; else bad "$3: $1 and $2 differ: $(cmp "$1" "$2" 2>&1)"; fi
}

# bare ENV... -- CMD...: runs CMD with ENV, every descriptor from 3 up closed, under
# `ulimit $limit` when limit is set; sets rc, out, err (the files $tmp/out and $tmp/err).
limit=""
bare() {
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    (
        for f in /proc/$BASHPID/fd/*; do
            n=${f##*/}
            [ "$n" -gt 2 ] && eval "exec $n>&-"
        done
        if [ -n "$limit" ]; then ulimit $limit || exit 99; fi
        exec env "${envs[@]}" "$@"
    ) >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}

# ---- the daemon ----
seq 1 5000 | head -c 20000 >"$tmp/data"
cp "$tmp/data" "$tmp/data.orig"
bare -- "$prog" daemon "$tmp/data" "$tmp/log"
expect_rc 0 "daemon natively"
native_out=$out
mv "$tmp/log" "$tmp/log.native"
expect_eq "$native_out" "daemon: data on 3, log on 4, 1480 + 18520 bytes, sums 5680240406886049961 460173636402897294" "daemon natively"
expect_eq "$(wc -l <"$tmp/log.native" | tr -d ' ')" 541 "daemon natively: its log"
for opts in "trace_path=$tmp/d.trace" "trace_path=$tmp/d.trace:log_path=$tmp/d.log" \
    "trace=0:quarantine_mb=1:stack_depth=32"; do
    rm -f "$tmp/log" "$tmp"/d.*
    bare TLSAN_OPTIONS="halt_on_error=0:$opts" LD_PRELOAD="$shim" -- "$prog" daemon "$tmp/data" "$tmp/log"
    expect_rc 1 "daemon ($opts): the double frees are findings"
    expect_eq "$out" "$native_out" "daemon ($opts): its output"
    expect_same_file "$tmp/log" "$tmp/log.native" "daemon ($opts): its log"
    expect_same_file "$tmp/data" "$tmp/data.orig" "daemon ($opts): its data file"
    # With log_path the reports are in the log, opened at the first report (after the daemon
    # closed its descriptors), else on stderr.
    reports=$err
    case $opts in *log_path=*) reports=$(cat "$tmp"/d.log.*) ;; esac
    expect_count "$reports" '^SUMMARY: tlsan: double-free of a 24-byte block$' 2 "daemon ($opts): the reports"
    # The stacks of the second free run through the five frames without unwind tables and
    # on to the start: main's (11 frames, and mode_daemon inlined in main: 12 lines) and the
    # thread's (10).
    expect_eq "$(printf '%s\n' "$reports" | awk '/^freed again here:/ { n = 0; on = 1; next }
        on && /^    #/ { n++; next } on { printf "%d ", n; on = 0 }')" "12 10 " \
        "daemon ($opts): the stacks through frames without unwind tables"
done

# ---- the first open, the descriptor listing ----
bare -- "$prog" firstopen
expect_eq "$out" "first open: 3" "firstopen natively"
for opts in "trace_path=$tmp/f.trace" "trace_path=$tmp/f.trace:log_path=$tmp/f.log"; do
    bare TLSAN_OPTIONS="$opts" LD_PRELOAD="$shim" -- "$prog" firstopen
    expect_rc 0 "firstopen ($opts)"
    expect_eq "$out" "first open: 3" "firstopen ($opts)"
    expect_eq "$err" "" "firstopen ($opts): no report"
done

bare -- "$prog" fdlist
native_out=$out
expect_eq "$(printf '%s\n' "$out" | grep -c ' fd [012] ')" 6 "fdlist natively: 0, 1, 2 before and after"
expect_eq "$(printf '%s\n' "$out" | wc -l | tr -d ' ')" 6 "fdlist natively: nothing else"
bare TLSAN_OPTIONS=halt_on_error=0:trace=0 LD_PRELOAD="$shim" -- "$prog" fdlist
expect_rc 1 "fdlist (trace=0): the double free"
# The report's symbolizer keeps the module and debug files it read open, at 1024 and up
# (close on exec, as the trace's): the program's descriptors are as natively.
expect_eq "$(printf '%s\n' "$out" | grep -v ' fd 10[2-9][0-9] ')" "$native_out" \
    "fdlist (trace=0): the native descriptors"
expect_eq "$(printf '%s\n' "$out" | grep ' fd 1024 ')" "after: fd 1024 $progs/prog_fds" \
    "fdlist (trace=0): the symbolizer's first file, parked at 1024"
bare TLSAN_OPTIONS="halt_on_error=0:trace_path=$tmp/l.trace:log_path=$tmp/l.log" LD_PRELOAD="$shim" -- "$prog" fdlist
pid_log=$(cd "$tmp" && ls l.log.*)
expect_eq "$(printf '%s\n' "$out" | grep -v ' fd 10[2-9][0-9] ')" "$native_out" "fdlist (trace, log): the native descriptors"
# Nothing of the shim's is open before the first report (the double free): then the
# report's symbolizer opens the program's file at 1024, the log opens at its first write and
# the trace at its first record (the finding), so only the listing after it shows them.
expect_eq "$(printf '%s\n' "$out" | grep -E '^before: fd 10[2-9][0-9] ')" "" \
    "fdlist (trace, log): no shim descriptor before the first report"
expect_eq "$(printf '%s\n' "$out" | grep -E ' fd 1024 |l\.log\.|l\.trace$' | sed -E 's/ fd [0-9]+ / fd N /')" "after: fd N $progs/prog_fds
after: fd N $tmp/$pid_log
after: fd N $tmp/l.trace" \
    "fdlist (trace, log): the symbolizer's first file at 1024, then the log, then the trace"
expect_eq "$(printf '%s\n' "$out" | grep -E ' fd 1024 ')" "after: fd 1024 $progs/prog_fds" \
    "fdlist (trace, log): the symbolizer's first file at 1024"
expect_eq "$(printf '%s\n' "$out" | grep -cE '^after: fd 10[2-9][0-9] .*l\.trace$')" 1 \
    "fdlist (trace, log): the trace parked high too"

# A real program: python3's first descriptor and its listing of /proc/self/fd.
if command -v python3 >/dev/null; then
    py='import os; print(os.open("/dev/null", os.O_RDONLY)); print(sorted(os.listdir("/proc/self/fd")))'
    bare -- python3 -c "$py"
    native_out=$out
    expect_eq "$(printf '%s\n' "$out" | head -n 1)" 3 "python3 natively: the first os.open"
    bare TLSAN_OPTIONS=trace=0 LD_PRELOAD="$shim" -- python3 -c "$py"
    expect_rc 0 "python3 (trace=0)"
    expect_eq "$out" "$native_out" "python3 (trace=0): the same descriptors"
    bare TLSAN_OPTIONS="trace_path=$tmp/p.trace" LD_PRELOAD="$shim" -- python3 -c "$py"
    expect_eq "$(printf '%s\n' "$out" | head -n 1)" 3 "python3 (trace): the first os.open"
else
    echo "note: no python3; its checks skipped"
fi

# ---- the limit ----
hard=$(ulimit -Hn)
if [ "$hard" = unlimited ] || [ "$hard" -ge 300 ]; then
    limit="-Sn 256"
    bare -- "$prog" fill
    native_out=$out
    expect_eq "$native_out" "opened 253, last 255, then Too many open files" "fill natively (soft limit 256)"
    for opts in "trace_path=$tmp/s.trace" "trace_path=$tmp/s.trace:log_path=$tmp/s.log"; do
        bare TLSAN_OPTIONS="$opts" LD_PRELOAD="$shim" -- "$prog" fill
        expect_eq "$out" "$native_out" "fill ($opts, soft limit 256): as many as natively"
    done
    limit="-n 256"
    bare TLSAN_OPTIONS="trace_path=$tmp/s.trace:log_path=$tmp/s.log" LD_PRELOAD="$shim" -- "$prog" fill
    # Nothing of the shim's is open while the program fills the table (fill reports and
    # records nothing, so neither log nor trace is opened): as many as natively.
    expect_eq "$out" "$native_out" "fill (hard limit 256): as many as natively"
    expect_eq "$(ls "$tmp" | grep -c '^s\.log\.')" 0 "fill: no log file for a process that reports nothing"
    limit=""
else
    echo "note: hard descriptor limit $hard below 300; the limit checks skipped"
fi

# ---- dup2 onto the shim's descriptors ----
bare -- "$prog" dup2 "$tmp/own.native"
expect_eq "$out" "dup2 done" "dup2 natively: nothing to take over"
rm -f "$tmp"/u.*
bare TLSAN_OPTIONS="halt_on_error=0:trace_path=$tmp/u.trace:log_path=$tmp/u.log" LD_PRELOAD="$shim" -- \
    "$prog" dup2 "$tmp/own"
expect_rc 1 "dup2: the double free"
# Only the trace is open then (the log opens at the first report, after the takeover).
expect_eq "$out" "took over fd 1024
dup2 done" "dup2: the shim's descriptor taken over"
expect_same_file "$tmp/own" "$tmp/own.native" "dup2: the program's file"
expect_eq "$(wc -c <"$tmp/own" | tr -d ' ')" 65536 "dup2: its size"
expect_eq "$err" "" "dup2: nothing on stderr"
log=$(cat "$tmp"/u.log.*)
expect_eq "$(printf '%s\n' "$log" | head -n 1)" "tlsan: trace: the program closed the trace file's descriptor; tracing off (the records so far stay in the file)" "dup2: the trace line, in the log"
expect_count "$log" '^SUMMARY: tlsan: double-free of a 24-byte block$' 1 "dup2: the report, in the log"
expect_eq "$(head -c 8 "$tmp/u.trace")" TLSANTRC "dup2: the trace so far"

echo "fds.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
