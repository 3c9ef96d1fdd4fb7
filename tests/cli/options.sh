#!/usr/bin/env bash
# TLSAN_OPTIONS read once, one way: the same program with the same TLSAN_OPTIONS through
# `tlsan run` and through plain LD_PRELOAD exits with the same status and writes the same
# stdout and stderr (tlsan run's summary line aside, which must name that status too). The
# texts are those the shim and tlsan run used to read two ways (a newline or a carriage
# return between pairs, a repeated key whose last value is bad), and a few more of the rule
# (docs/runtime.md, "Options").
# Usage: options.sh TLSAN_BIN [SHARED_DIR] [SOURCE_DIR]
set -u -o pipefail
. "$(dirname "$0")/../shim/lib/common.bash"
cli_shim_setup options.sh "$@"
engine=$build/examples/engine/engine
[ -x "$engine" ] || { echo "SKIP: needs the example engine in $build"; exit 77; }
export TMPDIR=$tmp/tmpdir
mkdir -p "$TMPDIR"

# What differs from one run to the next: process ids and addresses (ASLR).
normalize() {
    sed -E -e 's/==[0-9]+==/==PID==/g' -e 's/#([0-9]+) 0x[0-9a-f]+ /#\1 ADDR /' "$1"
}

# same OPTIONS WANT_RC WANT_SUMMARY [ENGINE_ARGS...]: the engine run with TLSAN_OPTIONS=OPTIONS
# under LD_PRELOAD and under tlsan run; both must exit WANT_RC with the same output, and tlsan
# run's last line must be WANT_SUMMARY (its run directory written RUNDIR).
same() {
    local opts=$1 want_rc=$2 want_summary=$3 rc_preload rc_run what
    shift 3
    what="TLSAN_OPTIONS=$(printf '%q' "$opts")"
    rm -rf "${TMPDIR:?}"/*
    TLSAN_OPTIONS=$opts LD_PRELOAD=$shim "$engine" "$@" >"$tmp/preload.out" 2>"$tmp/preload.err"
    rc_preload=$?
    TLSAN_OPTIONS=$opts "$bin" run -- "$engine" "$@" >"$tmp/run.out" 2>"$tmp/run.err"
    rc_run=$?
    [ "$rc_preload" = "$want_rc" ] && ok || bad "$what: LD_PRELOAD exits $rc_preload, want $want_rc"
    [ "$rc_run" = "$want_rc" ] && ok || bad "$what: tlsan run exits $rc_run, want $want_rc"
    if cmp -s "$tmp/preload.out" "$tmp/run.out"; then ok; else
        bad "$what: stdout differs: $(diff "$tmp/preload.out" "$tmp/run.out" | head -5)"
    fi
    local rundir summary
    rundir=$(find "$TMPDIR" -mindepth 1 -maxdepth 1 -name 'tlsan-run.*' | head -1)
    summary=$(tail -n 1 "$tmp/run.err")
    [ -n "$rundir" ] && summary=${summary//"$rundir"/RUNDIR}
    [ "$summary" = "$want_summary" ] && ok || bad "$what: summary '$summary', want '$want_summary'"
    sed '$d' "$tmp/run.err" >"$tmp/run.reports"
    if [ "$(normalize "$tmp/preload.err")" = "$(normalize "$tmp/run.reports")" ]; then ok; else
        bad "$what: stderr differs: $(diff <(normalize "$tmp/preload.err") \
            <(normalize "$tmp/run.reports") | head -5)"
    fi
}

found="5 findings (2 live-overlap, 1 lifetime-too-short, 2 use-after-release); 1 trace in RUNDIR"
bad_x="tlsan: TLSAN_OPTIONS: bad value 'x' for 'exitcode' (want an integer; ignored)"

# A newline separates pairs (tlsan run used to read verbosity='0\nexitcode=5' and exit 1).
same $'verbosity=0\nexitcode=5' 5 "tlsan: run: $found; exit status 5" --inject lifetime-short
# A carriage return too (tlsan run used to read exitcode='4\r', a bad number, and exit 1).
same $'exitcode=4\r\nfill=1' 4 "tlsan: run: $found; exit status 4" --inject lifetime-short
# A bad value keeps the earlier good one (tlsan run used to take the bad one and exit 1).
same 'exitcode=5:exitcode=x' 5 "tlsan: run: $found; exit status 5" --inject lifetime-short
grep -qxF "$bad_x" "$tmp/preload.err" && ok || bad "exitcode=x: no '$bad_x' line"
[ "$(grep -c 'TLSAN_OPTIONS' "$tmp/run.err")" = 1 ] && ok ||
    bad "exitcode=x: tlsan run adds a message of its own: $(cat "$tmp/run.err")"
# A bad value alone keeps the default; an unknown key is ignored; the last good repeat wins.
same 'exitcode=x' 1 "tlsan: run: $found; exit status 1" --inject lifetime-short
same 'nokey:foo=1:exitcode=9,exitcode=300' 44 "tlsan: run: $found; exit status 44" \
    --inject lifetime-short
# Quotes hold separators; values end at the quote.
same "exitcode='6'"$'\n'"log_format=\"text\"" 6 "tlsan: run: $found; exit status 6" \
    --inject lifetime-short
# trace=0 after a newline: no trace in either (tlsan run used to read trace='0\nexitcode=3',
# record, and count the findings).
same $'trace=0\nexitcode=3' 3 \
    "tlsan: run: tracing off (trace=0), findings not counted; exit status 3" --inject lifetime-short
# help=1 prints the same table both ways, and a clean run keeps the program's status.
same $'help=1\nverbosity=0' 0 \
    "tlsan: run: no findings; 1 trace in RUNDIR; exit status 0"
grep -qxE '  exitcode=1 +exit status of a process that had findings' \
    "$tmp/preload.err" && ok || bad "help=1: no exitcode line in: $(cat "$tmp/preload.err")"

# tlsan run --help lists the same table after its own usage.
"$bin" run --help >"$tmp/help.out" 2>&1
TLSAN_OPTIONS=help=1 LD_PRELOAD=$shim "$engine" >/dev/null 2>"$tmp/shimhelp.err"
if [ "$(sed -n '/^tlsan: TLSAN_OPTIONS=/,$p' "$tmp/help.out")" = "$(cat "$tmp/shimhelp.err")" ]; then
    ok
else
    bad "tlsan run --help: options table differs from help=1's: $(diff <(sed -n '/^tlsan: TLSAN_OPTIONS=/,$p' \
        "$tmp/help.out") "$tmp/shimhelp.err" | head -5)"
fi

# A value the shim clamps (redzone, at most 1 MiB) is said once and shown as used.
TLSAN_OPTIONS=verbosity=1:redzone=100000000 LD_PRELOAD=$shim sh -c true 2>"$tmp/clamp.err"
got=$(sed -E -e 's/==[0-9]+==/==PID==/' -e 's/ stack_depth=.*//' "$tmp/clamp.err")
if [ "$got" = "tlsan: TLSAN_OPTIONS: redzone=100000000 is over 1 MiB: using 1048576
==PID==tlsan: active (quarantine_mb=8 fill=1 redzone=1048576" ]; then ok; else
    bad "redzone=100000000: got: $got"
fi

echo "options.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
