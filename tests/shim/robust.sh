#!/usr/bin/env bash
# libtlsan.so must never break a correct program: prog_robust's modes (threads, fork,
# dlopen, realloc chains, libc's limits) run under the shim with its defaults and with its
# cheapest options, each asserting its own results; a forked child writes its own trace;
# the limits' output matches a native run; a program that fits in a small address space
# natively still does under the shim; a signal handler that allocates does not hang or
# corrupt the shim; a program that closes every fd (and reuses the numbers) keeps its files
# intact; two processes given one trace_path write two files; a forked child does not
# inherit its parent's findings nor its log file; under Valgrind and under AddressSanitizer
# the shim prints one line and passes through.
# Usage: robust.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup robust.sh "$@"
prog=$progs/prog_robust

# run OPTIONS CMD...: runs CMD under the shim; sets rc, out, err.
run() {
    local opts=$1
    shift
    TLSAN_OPTIONS="$opts" LD_PRELOAD="$shim" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}

cheap="trace=0:fill=0:quarantine_mb=0:redzone=0:stack_depth=0"
# sample_rate=1: every block of at most a page is sampled (malloc(0)'s too, whose free once
# found no slot: a false invalid-free and an abort).
for opts in "trace=0" "$cheap" "trace=0:quarantine_mb=1:redzone=64:stack_depth=4" \
    "trace=0:sample_rate=1"; do
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
for opts in "trace=0" "$cheap" "trace=0:sample_rate=1"; do
    run "$opts" "$prog" limits
    expect_rc 0 "limits ($opts)"
    expect_eq "$(printf '%s\n' "$out" | tail -n 1)" "limits ok (shim active)" "limits ($opts)"
    expect_eq "$(printf '%s\n' "$out" | head -n -1)" "$(printf '%s\n' "$native" | head -n -1)" \
        "limits ($opts) prints what a native run prints"
    expect_eq "$err" "" "limits ($opts): no report"
done

# glibc's second names for its allocator (__libc_malloc, __libc_free, ...) mixed with malloc
# and free both ways: natively and under the shim the same output, no report.
native=$("$prog" libc-names 2>&1)
expect_eq "$native" "libc-names ok" "libc-names natively"
run "trace=0" "$prog" libc-names
expect_rc 0 "libc-names"
expect_eq "$out" "libc-names ok" "libc-names under the shim"
expect_eq "$err" "" "libc-names: no report"

# A C++ program that replaces only the scalar operator new and delete with a pool of its own:
# the nothrow, array and sized forms reach them through their defaults, natively and under
# the shim (whose own forms once served those from its heap: that block reached the pool's
# delete, which aborts).
# sampled_quiet MODE SECONDS WANT: prog_robust MODE under sample_rate=1, stopped after SECONDS
# (a hang is 124), exits 0, prints WANT and reports nothing.
sampled_quiet() {
    TLSAN_OPTIONS=trace=0:sample_rate=1 LD_PRELOAD="$shim" timeout "$2" "$prog" "$1" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 0 "$1 (sample_rate=1)"
    expect_eq "$(cat "$tmp/out")" "$3" "$1 (sample_rate=1): as natively"
    expect_eq "$(cat "$tmp/err")" "" "$1 (sample_rate=1): no report"
}

# as_natively PROG WHAT WANT: PROG prints WANT natively, and the same under the shim (defaults
# and every block sampled), with status 0 and no report.
as_natively() {
    shim_prog "$1"
    native=$("$prog" 2>&1)
    expect_eq "$native" "$3" "$2 natively"
    for opts in "trace=0" "trace=0:sample_rate=1"; do
        run "$opts" "$prog"
        expect_rc 0 "$2 ($opts)"
        expect_eq "$out" "$native" "$2 ($opts): as natively"
        expect_eq "$err" "" "$2 ($opts): no report"
    done
}
as_natively prog_cxx_pool cxx-pool "prog_cxx_pool: news 4 deletes 3, 4720 bytes from the pool"
# Only operator new replaced, over malloc: the default delete, new[] and delete[] pair with
# it, and a block of it released by delete is no alloc-dealloc-mismatch (it was, malloc vs
# operator delete: a finding, exit 1).
as_natively prog_cxx_newonly cxx-newonly "prog_cxx_newonly: 100 strings, news counted"
prog=$progs/prog_robust

# A large block made read-only, then freed: natively glibc unmaps it without a write; the
# shim fills a freed block, and must neither crash nor report when a page refuses the fill
# (guarded, then not guarded since quarantine_mb=1 gives it no address space to guard).
native=$("$prog" readonly-free 2>&1)
expect_eq "$native" "readonly-free ok" "readonly-free natively"
for opts in "trace=0" "trace=0:quarantine_mb=1"; do
    run "$opts" "$prog" readonly-free
    expect_rc 0 "readonly-free ($opts)"
    expect_eq "$out" "readonly-free ok" "readonly-free ($opts)"
    expect_eq "$err" "" "readonly-free ($opts): no report"
done

# Small blocks whose pages the program protected, then freed (or reallocated): natively glibc
# writes nothing in the protected page; the shim's fill of the freed block once faulted there
# (139). The defaults, every block sampled, and a small quarantine with wide redzones.
for case in memalign-read memalign-none realloc-read interior-none; do
    native=$("$prog" readonly-small "$case" 2>&1)
    expect_eq "$native" "readonly-small $case ok" "readonly-small $case natively"
    for opts in "trace=0" "trace=0:sample_rate=1" "trace=0:quarantine_mb=1:redzone=64"; do
        run "$opts" "$prog" readonly-small "$case"
        expect_rc 0 "readonly-small $case ($opts)"
        expect_eq "$out" "$native" "readonly-small $case ($opts): as natively"
        expect_eq "$err" "" "readonly-small $case ($opts): no report"
    done
done

# A sampled block of a page is page-aligned: a program may protect it and catch its own access
# in its SIGSEGV handler. The shim's handler once took that fault for a slot being handed out
# and retried it for ever (a hang: 124 under timeout); it goes to the program's handler now.
native=$("$prog" sampled-protect 2>&1)
expect_eq "$native" "sampled-protect ok" "sampled-protect natively"
sampled_quiet sampled-protect 60 "$native"

# A report made on a small stack: a thread of 16 to 128 KiB of stack, or a signal stack of
# 16 to 64 KiB (sigaltstack, as Rust's threads and Python's faulthandler have). Symbolizing
# needs about 170 KiB (libdw's line tables), and once ran past such a stack's end: SIGSEGV
# instead of the report (139), or, past the guard page, into the program's memory (glibc then
# aborted on a corrupted heap). The symbolizer runs on a stack of its own.
src_line() { grep -n -- "$1" "$src/tests/shim/prog_robust.c" | head -n 1 | cut -d: -f1; }
second_free=$(src_line "free(p); /\* the second free")
for bytes in 16384 65536 131072; do
    TLSAN_OPTIONS=trace=0 LD_PRELOAD="$shim" "$prog" small-stack "$bytes" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    err=$(cat "$tmp/err")
    expect_rc 134 "small-stack $bytes: aborts as natively"
    expect_count "$err" "^SUMMARY: tlsan: double-free of a 48-byte block\$" 1 "small-stack $bytes: the report"
    expect_count "$err" "^    #0 0x[0-9a-f]+ in free_twice\+0x[0-9a-f]+ at .*/prog_robust\.c:$second_free " 1 \
        "small-stack $bytes: the second free's line"
done
bad_read=$(src_line "int v = p\[1\]; /\* read after free")
for bytes in 16384 32768 65536; do
    TLSAN_OPTIONS=trace=0:sample_rate=1 LD_PRELOAD="$shim" "$prog" small-altstack "$bytes" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    err=$(cat "$tmp/err")
    expect_count "$err" "^SUMMARY: tlsan: heap-use-after-free " 1 "small-altstack $bytes: the report"
    expect_count "$err" "^    #0 0x[0-9a-f]+ in read_after_free\+0x[0-9a-f]+ at .*/prog_robust\.c:$bad_read " 1 \
        "small-altstack $bytes: the read's line"
    expect_count "$err" "tcache" 0 "small-altstack $bytes: the program's heap intact"
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

# A request that fails natively (1 GiB under ulimit -v 400000) fails under the shim too,
# with ENOMEM and no line, and the shim goes on checking: a double free after it is
# reported. Before, the shim took the failure for its own and passed through from then on.
native=$( (ulimit -v 400000 && "$prog" oom-probe) 2>&1)
expect_eq "$native" "oom-probe ok" "oom-probe natively"
(ulimit -v 400000 && TLSAN_OPTIONS=trace=0 LD_PRELOAD="$shim" "$prog" oom-probe) \
    >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_rc 0 "oom-probe"
expect_eq "$(cat "$tmp/out")" "oom-probe ok" "oom-probe under the shim"
expect_eq "$(cat "$tmp/err")" "" "oom-probe: no line, no report"
(ulimit -v 400000 && TLSAN_OPTIONS=trace=0:halt_on_error=0 LD_PRELOAD="$shim" "$prog" \
    oom-probe double-free) >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_rc 1 "oom-probe double-free: exitcode"
expect_eq "$(grep -c '^SUMMARY: tlsan: double-free of a 24-byte block$' "$tmp/err")" 1 \
    "oom-probe: the double free after the failed request is reported"

# Guarded sampling under a finite ulimit -v: its pool takes at most 1/1024 of the limit (here
# 11 slots, 92 KiB), so a read after free of a sampled block is still caught at the access
# (before, sampling turned itself off under any finite limit, silently, and this was missed).
# When even that cannot be mapped (exhaust: the program used up its address space first), one
# line says that sampling is off and why, and the program runs as natively.
(ulimit -v 100000 && TLSAN_OPTIONS=trace=0:sample_rate=1 LD_PRELOAD="$shim" \
    "$progs/prog_heapbugs" sampled-read-after-free) >"$tmp/out" 2>"$tmp/err"
rc=$?
err=$(cat "$tmp/err")
expect_eq "$rc:$(cat "$tmp/out")" "1:sampled-read-after-free done" "sampling under ulimit -v: goes on, a finding"
expect_count "$err" "$pid_line"'heap-use-after-free on address 0x[0-9a-f]+ at offset 8 of a 32-byte block' 1 \
    "sampling under ulimit -v: the read after free"
expect_count "$err" "^  a read of a freed block, sampled into a page of its own made inaccessible at its free$" 1 \
    "sampling under ulimit -v: caught at the access"
native=$( (ulimit -v 100000 && "$prog" exhaust) 2>&1)
expect_eq "$native" "exhaust ok" "exhaust natively"
(ulimit -v 100000 && TLSAN_OPTIONS=trace=0:sample_rate=1 LD_PRELOAD="$shim" "$prog" exhaust) \
    >"$tmp/out" 2>"$tmp/err"
rc=$?
expect_rc 0 "exhaust (sample_rate=1)"
expect_eq "$(cat "$tmp/out")" "exhaust ok" "exhaust (sample_rate=1): as natively"
expect_eq "$(cat "$tmp/err")" "tlsan: guarded sampling (sample_rate) off: its pool of 92 KiB could not be mapped (errno 12)" \
    "exhaust (sample_rate=1): the one line"

# The same with 100 MiB of 1 MiB blocks churned: when the side table cannot grow or the real
# allocator fails, the quarantine is emptied first (its guarded large blocks hold far more
# address space than these limits), so no allocation fails that does not fail natively. The
# limits leave room for what the shim adds to the 409,600 small blocks live at once (about
# 100 bytes each: 16 bytes of redzone on each side, the table's slot and stack ids), and for
# the sampling pool, which under a limit takes up to 1/1024 of it (24 slots, 196 KiB here,
# all live at the end: a sampled block keeps its slot). 205000, not 200000: before, with no
# sampling under a limit, the shim ran this at 200,000 but not at 199,500 (the edge); with the
# pool it runs at 200,300.
for kb in 205000 250000; do
    native=$( (ulimit -v "$kb" && "$prog" churn) 2>/dev/null)
    if [ "$native" = "churn fails 0" ]; then
        out=$( (ulimit -v "$kb" && TLSAN_OPTIONS=trace=0 LD_PRELOAD="$shim" "$prog" churn) 2>/dev/null)
        expect_eq "$out" "churn fails 0" "churn with ulimit -v $kb"
    else
        echo "note: churn does not run natively with ulimit -v $kb; skipped"
    fi
done

# A SIGALRM handler that mallocs and frees, every 50 us, while the thread allocates: a
# hook entered while its thread holds a shim lock takes no lock (it would spin on its own
# lock with two threads, or corrupt the table with one) but defers its table work to the
# end of the section; entered while the thread is inside glibc's malloc (called by the
# shim), it does not enter glibc again (the quarantine makes glibc's slow paths, so that
# window, far more frequent than natively): the block comes from the bootstrap buffer.
# The handler also asks the usable size of a block of its own, which must not be below the
# block's size, and reallocs it now and then. The interrupted section may hold the lock of
# the block's shard: the handler then reads the table without it (before, it got 0: with
# one thread the old library failed 12 runs of 12 at trace=0 and 9 of 12 at
# quarantine_mb=0). Under sample_rate=1 the block is sampled, and asking while the thread
# held the pool's lock once spun for ever.
for opts in trace=0 trace=0:quarantine_mb=0 trace=0:sample_rate=1; do
    for threads in 1 2; do
        TLSAN_OPTIONS=$opts LD_PRELOAD="$shim" timeout 120 "$prog" signals-own "$threads" \
            >"$tmp/out" 2>"$tmp/err"
        rc=$?
        out=$(cat "$tmp/out")
        err=$(cat "$tmp/err")
        expect_rc 0 "signals ($threads threads, $opts)"
        expect_eq "$out" "signals ok" "signals ($threads threads, $opts)"
        expect_eq "$err" "" "signals ($threads threads, $opts): no report"
    done
done

# A handler asking a sampled block's usable size while its thread holds the pool's lock (a
# signal storm over 20,000 allocations, every block sampled): it once spun for ever there.
sampled_quiet usable-storm 120 "usable-storm ok"

# A program that closes every fd from 3 up and puts its own file on the numbers: the shim's
# trace and log fds are gone; the shim notices before resizing or cutting the trace file and
# before writing to the log (one line each), and the program's file keeps its 16 KiB.
# (halt_on_error=0: the double free that makes the report would otherwise end the program
# with SIGABRT, as glibc does.)
for opts in "halt_on_error=0:checksum=off:trace_path=$tmp/cf.trace" \
    "halt_on_error=0:checksum=off:trace_path=$tmp/cf.trace:log_path=$tmp/cf.log"; do
    rm -f "$tmp"/cf.* "$tmp/data.bin"
    run "$opts" "$prog" closefd "$tmp/data.bin"
    expect_rc 1 "closefd ($opts): the double free is a finding"
    expect_eq "$out" "closefd ok" "closefd ($opts)"
    # With log_path the lines are in the log, opened at the first of them (after the program
    # closed its descriptors), else on stderr.
    case $opts in *log_path=*) err=$(cat "$tmp"/cf.log.*) ;; esac
    expect_in "$err" "tlsan: trace: the program closed the trace file's descriptor; tracing off (the records so far stay in the file)" "closefd ($opts)"
    expect_eq "$(printf '%s\n' "$err" | grep -c '^SUMMARY: tlsan: double-free of a 16-byte block$')" 1 \
        "closefd ($opts): the report"
    expect_eq "$(wc -c <"$tmp/data.bin" | tr -d ' ')" 16384 "closefd ($opts): the program's file"
    expect_eq "$(tr -d x <"$tmp/data.bin" | wc -c | tr -d ' ')" 0 "closefd ($opts): its bytes"
    expect_eq "$(head -c 8 "$tmp/cf.trace")" TLSANTRC "closefd ($opts): the trace so far"
done

# Two unrelated processes with one trace_path, the first sleeping before its first record
# while the second records at once: the second takes FILE; the first, finding FILE locked
# by the second or holding a trace begun after its own start, writes FILE.PID and neither
# truncates the second's file nor cuts it at its exit (the second would then die of SIGBUS
# writing past the end of its mapping).
rm -f "$tmp"/two.trace*
TLSAN_OPTIONS="checksum=off:trace_path=$tmp/two.trace" LD_PRELOAD="$shim" "$prog" annotate 400 \
    >"$tmp/out_a" 2>"$tmp/err_a" &
first=$!
sleep 0.1
run "checksum=off:trace_path=$tmp/two.trace" "$prog" annotate 0
second=$(od -An -tu4 -j16 -N4 "$tmp/two.trace" | tr -d ' ')
expect_rc 0 "second process on one trace_path"
expect_eq "$out" "annotate ok" "second process on one trace_path: output"
wait "$first"
rc=$?
expect_rc 0 "first process on one trace_path"
expect_eq "$(cat "$tmp/out_a")" "annotate ok" "first process on one trace_path: output"
if [ -n "$second" ] && [ "$second" != "$first" ]; then ok; else bad "two.trace is not the second process's (pid '$second', first $first)"; fi
expect_eq "$(ls "$tmp" | grep -c '^two\.trace')" 2 "one trace_path, two processes: two files"
if [ -f "$tmp/two.trace.$first" ] &&
    [ "$(od -An -tu4 -j16 -N4 "$tmp/two.trace.$first" | tr -d ' ')" = "$first" ]; then
    ok
else
    bad "no two.trace.PID of the first process ($(ls "$tmp"))"
fi
for f in "$tmp/two.trace" "$tmp/two.trace.$first"; do
    "$bin" replay --no-symbolize "$f" >/dev/null 2>"$tmp/rep_err"
    expect_eq "$?:$(cat "$tmp/rep_err")" "0:" "$f replays whole"
done

# Threads loading and unloading a library with thread-locals: ld.so frees a TLS slot table,
# the free's stack capture re-enters ld.so through __tls_get_addr, which frees the same
# block again; the shim claims the block before the capture, so that nested free is a no-op
# and the outer one no invalid-free. (Before, about half the runs reported one.)
for round in 1 2 3 4 5 6; do
    run "trace=0" "$prog" dlopen-tls "$progs/librobust_tls.so"
    expect_rc 0 "dlopen-tls (run $round)"
    expect_eq "$out" "dlopen-tls ok" "dlopen-tls (run $round)"
    expect_eq "$err" "" "dlopen-tls (run $round): no report"
done

# A library opened with RTLD_DEEPBIND binds malloc and free to glibc's: the shim binds its
# allocator calls to the shim's after the dlopen, and frees the block its constructor allocated
# (glibc's) with glibc's free. Blocks both ways and reallocated, RTLD_NOW and RTLD_LAZY, the
# defaults and every block sampled: as natively. Before, the library's realloc of a block of
# the program's aborted (glibc: "mremap_chunk(): invalid pointer", 134).
deeplib=$progs/librobust_deepbind.so
for how in now lazy; do
    native=$("$prog" deepbind "$deeplib" "$how" 2>&1)
    expect_eq "$native" "deepbind ok" "deepbind $how natively"
    for opts in "trace=0" "trace=0:sample_rate=1"; do
        run "$opts" "$prog" deepbind "$deeplib" "$how"
        expect_rc 0 "deepbind $how ($opts)"
        expect_eq "$out" "$native" "deepbind $how ($opts): as natively"
        expect_eq "$err" "" "deepbind $how ($opts): no report"
    done
done
# The bugs are still found there: the library freeing a block twice (its free is the shim's
# now), an interior pointer freed after the deep-bound load; each ends as natively (134).
for how in double-free invalid-free; do
    run "trace=0" "$prog" deepbind "$deeplib" "$how"
    expect_rc 134 "deepbind $how"
    expect_count "$err" "^SUMMARY: tlsan: $how " 1 "deepbind $how: the report"
done
# dlopen without RTLD_DEEPBIND is the next dlopen, reached by a jump: glibc takes the program
# for the caller, so a bare name is found along the program's own RUNPATH. With RTLD_DEEPBIND
# the shim calls dlopen itself, and searches the caller's RUNPATH first (before, the name was
# not found there under the shim: "cannot open shared object file").
mkdir -p "$tmp/rp"
cc -shared -fPIC -o "$tmp/rp/librp_only.so" "$src/tests/shim/lib_deepbind.c" 2>"$tmp/cc_err"
for flags in RTLD_NOW "RTLD_NOW|RTLD_DEEPBIND"; do
    if printf '%s\n' '#include <dlfcn.h>' '#include <stdio.h>' \
        "int main(void) { void *h = dlopen(\"librp_only.so\", $flags); puts(h ? \"found\" : dlerror()); return !h; }" |
        cc -x c -o "$tmp/rp/prog_rp" - -Wl,-rpath,"$tmp/rp" -Wl,--enable-new-dtags -ldl 2>>"$tmp/cc_err"; then
        expect_eq "$("$tmp/rp/prog_rp" 2>&1)" "found" "dlopen($flags) along the program's RUNPATH natively"
        run "trace=0" "$tmp/rp/prog_rp"
        expect_rc 0 "dlopen($flags) along the program's RUNPATH"
        expect_eq "$out$err" "found" "dlopen($flags) along the program's RUNPATH"
    else
        echo "note: no compiler for the RUNPATH check ($(cat "$tmp/cc_err")); skipped"
    fi
done

# A forked child starts with no findings: the parent's double free is not the child's.
run "trace=0:halt_on_error=0" "$prog" forkfind
expect_rc 1 "forkfind: the parent had a finding"
expect_eq "$out" "forkfind child status 0" "forkfind: the child exits 0"
expect_eq "$(printf '%s\n' "$err" | grep -c '^SUMMARY:')" 1 "forkfind: one report"

# A forked child's exit checks what the child allocated and freed (its overflow, its write
# after free: exit status 1 with the report) and not the copy of the parent's quarantine and
# live blocks it was given (a write into a block the parent freed: status 0 at the child's
# exit), which made a loop of bash subshells 30x native.
run "trace=0:halt_on_error=0" "$prog" fork-own
expect_rc 0 "fork-own: the parent has no finding"
expect_eq "$out" "fork-own child 0 status 1
fork-own child 1 status 1
fork-own child 2 status 0" "fork-own: each child's status"
expect_count "$err" "^SUMMARY: tlsan: heap-buffer-overflow " 1 "fork-own: the child's overflow"
expect_count "$err" "^SUMMARY: tlsan: heap-write-after-free " 1 "fork-own: the child's write after free"
expect_count "$err" "^SUMMARY:" 2 "fork-own: no other report"

# With log_path, a forked child that cannot open PATH.PID reports to stderr, not into its
# parent's file.
rm -rf "$tmp/fl"
mkdir -p "$tmp/fl/log-dir"
run "trace=0:halt_on_error=0:log_path=$tmp/fl/log-dir/log" "$prog" forklog "$tmp/fl"
expect_rc 0 "forklog"
child=$(printf '%s\n' "$out" | sed -n 's/^forklog child \([0-9]*\) status 1$/\1/p')
if [ -n "$child" ]; then ok; else bad "forklog: the child's finding is its exit status: $out"; fi
expect_in "$err" "tlsan: cannot open log_path file '$tmp/fl/log-dir/log.$child' (errno 2); reporting to stderr" "forklog: the line"
expect_in "$err" "==$child==ERROR: tlsan: double-free on address" "forklog: the child's report on stderr"
expect_eq "$(cat "$tmp"/fl/moved/log.*)" "" "forklog: nothing in the parent's log file"

# fork from a threaded program, tracing: the children allocate but record nothing (no
# annotation, no finding), so no FILE.PID appears, and neither does the parent's FILE.
run "trace_path=$tmp/t.trace" "$prog" fork
expect_rc 0 "fork"
expect_eq "$out" "fork ok 20 children" "fork"
expect_eq "$err" "" "fork: no report"
expect_eq "$(ls "$tmp" | grep -cE '^t\.trace')" 0 "fork: no trace of processes that record nothing"
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
if "$cc" -fsanitize=address -g -I"$src/include" -o "$tmp/robust_asan" "$src/tests/shim/prog_robust.c" -lpthread \
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
