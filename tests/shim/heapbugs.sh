#!/usr/bin/env bash
# Heap bugs under `tlsan run`, one per mode of prog_heapbugs: the live report names the exact
# kind and, for each stack (allocation, free, the bad access), frame #0 at the function and
# file:line of the program's call, symbolized in the process; `tlsan replay --format json` of
# the run's trace carries the same finding with the same frames, and its text the same lines.
# The lines are found in the source by their comments ("MODE: ROLE").
# Usage: heapbugs.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup heapbugs.sh "$@"
# use_prog NAME FILE: the program the next runs run (prog_heapbugs, or the C++ prog_heapbugs_cxx)
# and its source file.
use_prog() {
    prog_name=$1
    prog=$progs/$1
    source_name=$2
    source_file=$src/tests/shim/$2
}
use_prog prog_heapbugs prog_heapbugs.c
command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }

# line_of TAG: the line of the source whose comment is "/* TAG */" (C) or "// TAG" (C++).
line_of() {
    grep -nF -e "/* $1 */" -e "// $1" "$source_file" | cut -d: -f1
}
# run MODE: the mode under tlsan run with its own trace (and the options in $opts, if any);
# sets rc, err, json (replay's JSON), text (replay's text).
opts=""
run() {
    rm -f "$tmp/t.trace"
    TLSAN_OPTIONS="quarantine_mb=1${opts:+:$opts}" "$bin" run --trace "$tmp/t.trace" -- "$prog" "$1" \
        >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    # tlsan run ends as the program does under plain LD_PRELOAD (dies of the same signal where
    # glibc would abort), except that the trace's findings make a status of 0 exitcode (1):
    # the shim's _exit keeps the program's 0.
    TLSAN_OPTIONS=quarantine_mb=1 LD_PRELOAD=$shim "$prog" "$1" >/dev/null 2>&1
    native_rc=$?
    [ "$native_rc" = 0 ] && native_rc=1
    json=$("$bin" replay --format json "$tmp/t.trace" 2>/dev/null)
    replay_rc=$?
    text=$("$bin" replay "$tmp/t.trace" 2>/dev/null)
}
# frame0 TEXT ROLE N: frame #0 under the Nth "ROLE:" of TEXT.
frame0() {
    printf '%s\n' "$1" | awk -v t="$2:" -v n="$3" '$0 == t { k++; if (k == n) { getline; print; exit } }'
}
# expect_stack MODE KIND FUNC ROLE TAG [N]: the Nth finding (1 by default) has, under ROLE,
# frame #0 in FUNC at the line tagged TAG, live and in replay's JSON and text.
expect_stack() {
    local mode=$1 kind=$2 func=$3 role=$4 line n=${6:-1} live got
    line=$(line_of "$5")
    live=$(frame0 "$err" "$role" "$n")
    expect_match "$live" "^    #0 0x[0-9a-f]+ in $func\\+0x[0-9a-f]+ at [^ ]*/tests/shim/${source_name//./\\.}:$line \\(.*/$prog_name\\+0x[0-9a-f]+\\)\$" \
        "$mode: live '$role' at $source_name:$line"
    got=$(printf '%s\n' "$json" | jq -r --arg k "$kind" --arg r "$role" --argjson n "$n" \
        '[.findings[] | select(.kind == $k and .found == "at run time")][$n - 1]
         | .call_stacks[] | select(.role == $r) | .frames[0]
         | "\(.function) \(.file | split("/") | last):\(.line)"')
    expect_eq "$got" "$func $source_name:$line" "$mode: replay JSON '$role'"
    expect_eq "$(frame0 "$text" "$role" "$n")" "$live" "$mode: replay text '$role' as live"
}
expect_match() {
    if printf '%s\n' "$1" | grep -qE -- "$2"; then ok; else bad "$3: no line matches '$2' in: $1"; fi
}
# expect_kind MODE KIND N: tlsan run exits as the program under the shim (native_rc), with N
# live reports of KIND and nothing else, N in replay's JSON, which exits 1.
expect_kind() {
    expect_rc "$native_rc" "$1: tlsan run"
    expect_count "$err" "^==[0-9]+==ERROR: tlsan: " "$3" "$1: reports"
    expect_count "$err" "^==[0-9]+==ERROR: tlsan: $2 " "$3" "$1: $2 reports"
    expect_eq "$(printf '%s\n' "$json" | jq -r '[.findings[] | .kind] | join(" ")')" \
        "$(printf "$2 %.0s" $(seq "$3") | sed 's/ $//')" "$1: replay JSON findings"
    expect_eq "$replay_rc" 1 "$1: replay exit status"
    expect_in "$text" "SUMMARY: tlsan: $3 finding" "$1: replay text summary"
}

run double-free
expect_kind double-free double-free 1
expect_stack double-free double-free double_free "allocated here" "double-free: allocated"
expect_stack double-free double-free double_free "first freed here" "double-free: first freed"
expect_stack double-free double-free double_free "freed again here" "double-free: freed again"

# SARIF: one result of the rule, located at the first stack's frame #0, each stack a related
# location named by its role.
sarif=$("$bin" replay --format sarif "$tmp/t.trace" 2>/dev/null)
expect_eq "$(printf '%s\n' "$sarif" | jq -r '.runs[0].results[] | "\(.ruleId) \(.level) \(.locations[0].physicalLocation.artifactLocation.uri | split("/") | last):\(.locations[0].physicalLocation.region.startLine) \([.relatedLocations[].message.text] | join(", "))"')" \
    "double-free error prog_heapbugs.c:$(line_of "double-free: freed again") freed again here, first freed here, allocated here" \
    "double-free: replay SARIF"

run write-after-free
expect_kind write-after-free heap-write-after-free 1
expect_in "$err" "(found when it left the quarantine)" "write-after-free: at eviction"
expect_stack write-after-free heap-write-after-free write_after_free "allocated here" "write-after-free: allocated"
expect_stack write-after-free heap-write-after-free write_after_free "freed here" "write-after-free: freed"

run overflow
expect_kind overflow heap-buffer-overflow 1
expect_in "$err" "2 bytes past the end of a 24-byte block" "overflow: where"
expect_stack overflow heap-buffer-overflow overflow "allocated here" "overflow: allocated"
expect_stack overflow heap-buffer-overflow overflow "freed here" "overflow: freed"

run underflow
expect_kind underflow heap-buffer-overflow 1
expect_in "$err" "1 byte before the start of a 24-byte block" "underflow: where"
expect_stack underflow heap-buffer-overflow underflow "allocated here" "underflow: allocated"
expect_stack underflow heap-buffer-overflow underflow "freed here" "underflow: freed"

run invalid-free
expect_kind invalid-free invalid-free 1
expect_stack invalid-free invalid-free invalid_free "freed here" "invalid-free: freed"

# The access itself: frame #0 is the faulting instruction, looked up as itself.
run use-after-free
expect_kind use-after-free heap-use-after-free 1
expect_stack use-after-free heap-use-after-free use_after_free "written here" "use-after-free: written"
expect_stack use-after-free heap-use-after-free use_after_free "freed here" "use-after-free: freed"
expect_stack use-after-free heap-use-after-free use_after_free "allocated here" "use-after-free: allocated"

# Each aligned allocator's block: allocated at the program's call.
run aligned
expect_kind aligned heap-buffer-overflow 5
n=0
for fn in posix_memalign aligned_alloc memalign valloc pvalloc; do
    n=$((n + 1))
    expect_stack "aligned ($fn)" heap-buffer-overflow aligned "allocated here" "aligned: $fn" "$n"
done

# symbolize=0: module+offset only, live; replay still names the lines.
rm -f "$tmp/t.trace"
TLSAN_OPTIONS=symbolize=0 "$bin" run --trace "$tmp/t.trace" -- "$prog" double-free >/dev/null 2>"$tmp/err"
err=$(cat "$tmp/err")
expect_match "$(frame0 "$err" "allocated here" 1)" '^    #0 0x[0-9a-f]+ \(.*/prog_heapbugs\+0x[0-9a-f]+\)$' "symbolize=0: module+offset"
json=$("$bin" replay --format json "$tmp/t.trace" 2>/dev/null)
expect_eq "$(printf '%s\n' "$json" | jq -r '.findings[0].call_stacks[2].frames[0].line')" \
    "$(line_of "double-free: allocated")" "symbolize=0: replay symbolizes"

# log_format=json: each live report is one JSON line, with the frames replay's JSON has.
rm -f "$tmp/t.trace"
TLSAN_OPTIONS=log_format=json "$bin" run --trace "$tmp/t.trace" -- "$prog" aligned >/dev/null 2>"$tmp/err"
grep -E '^\{' "$tmp/err" >"$tmp/lines"
expect_eq "$(wc -l <"$tmp/lines" | tr -d ' ')" 5 "log_format=json: five lines"
expect_eq "$(jq -r '.kind' "$tmp/lines" | sort -u)" heap-buffer-overflow "log_format=json: the kind"
expect_eq "$(grep -c 'ERROR: tlsan' "$tmp/err")" 0 "log_format=json: no text report"
want=""
for fn in posix_memalign aligned_alloc memalign valloc pvalloc; do
    want="$want${want:+ }aligned:$(line_of "aligned: $fn")"
done
expect_eq "$(jq -r '.call_stacks[] | select(.role == "allocated here") | .frames[0] | "\(.function):\(.line)"' "$tmp/lines" | tr '\n' ' ' | sed 's/ $//')" \
    "$want" "log_format=json: allocated at each call"
expect_eq "$(jq -c '[.call_stacks[] | {role, frames: [.frames[] | {function, file, line, inlined}]}]' "$tmp/lines")" \
    "$("$bin" replay --format json "$tmp/t.trace" 2>/dev/null | jq -c '.findings[] | [.call_stacks[] | {role, frames: [.frames[] | {function, file, line, inlined}]}]')" \
    "log_format=json: the same stacks as replay's JSON"

# Suppressions: KIND:PATTERN against function, file or module names of the report's stacks.
# A matching finding is not printed and not counted (the program still ends as natively: a
# double free aborts); tlsan run and replay count it as suppressed; a bad line gets one line.
# suppressed MODE RULES WANT_RC: runs MODE with those rules; sets err, summary.
suppressed() {
    printf '%s\n' "$2" >"$tmp/supp"
    rm -f "$tmp/t.trace"
    TLSAN_OPTIONS="suppressions=$tmp/supp" "$bin" run --trace "$tmp/t.trace" -- "$prog" "$1" \
        >/dev/null 2>"$tmp/err"
    rc=$?
    out=""
    err=$(cat "$tmp/err")
    expect_rc "$3" "suppressed $1 ($2)"
    expect_count "$err" "ERROR: tlsan:" 0 "suppressed $1 ($2): no report"
    expect_in "$err" "1 suppressed;" "suppressed $1 ($2): tlsan run's summary"
    expect_in "$("$bin" replay "$tmp/t.trace" 2>&1)" "1 finding suppressed at run time" \
        "suppressed $1 ($2): replay"
    expect_eq "$("$bin" replay --format json "$tmp/t.trace" 2>/dev/null | jq '.findings | length')" 0 \
        "suppressed $1 ($2): replay JSON"
}
suppressed double-free $'# by function\ndouble-free:double_*' 134
suppressed overflow 'heap-buffer-overflow:prog_heapbugs.c' 0
suppressed overflow '*:/*/tests/shim/prog_heapbugs.c' 0
suppressed invalid-free '*:prog_heapbugs' 134
# Another kind, or a name in no frame: reported.
printf 'heap-buffer-overflow:double_free\nbad line\ndouble-free:nowhere*\n' >"$tmp/supp"
rm -f "$tmp/t.trace"
TLSAN_OPTIONS="suppressions=$tmp/supp" "$bin" run --trace "$tmp/t.trace" -- "$prog" double-free \
    >/dev/null 2>"$tmp/err"
err=$(cat "$tmp/err")
expect_count "$err" "^==[0-9]+==ERROR: tlsan: double-free " 1 "unmatched rules: reported"
expect_in "$err" "tlsan: suppressions $tmp/supp:2: no ':' between KIND and PATTERN (line ignored): bad line" \
    "a bad suppressions line"
TLSAN_OPTIONS="suppressions=$tmp/none" LD_PRELOAD="$shim" "$prog" overflow >/dev/null 2>"$tmp/err"
expect_in "$(cat "$tmp/err")" "tlsan: suppressions $tmp/none: cannot open: No such file or directory (no suppressions)" \
    "a missing suppressions file"

# _exit and _Exit skip destructors: the write after free is found at exit all the same, and
# the program's output and the findings' exit status are kept. The process chose to end: its
# trace has its end record (replay says nothing of a death) and tlsan run's summary counts
# no truncated trace.
for ex in _exit _Exit; do
    run "$ex"
    expect_kind "$ex" heap-write-after-free 1
    expect_in "$err" "(found at exit)" "$ex: at exit"
    expect_eq "$(cat "$tmp/out")" "exit$([ "$ex" = _exit ] && echo " done")" "$ex: output kept"
    expect_stack "$ex" heap-write-after-free exit_after_free "allocated here" "exit-after-free: allocated"
    expect_stack "$ex" heap-write-after-free exit_after_free "freed here" "exit-after-free: freed"
    expect_eq "$("$bin" replay "$tmp/t.trace" 2>&1 >/dev/null)" \
        "tlsan: replay: $tmp/t.trace: the process reported 1 finding at run time (heap-write-after-free)" \
        "$ex: replay of its trace (an end record)"
    rm -rf "$tmp/rd" && mkdir "$tmp/rd"
    TMPDIR=$tmp/rd TLSAN_OPTIONS=quarantine_mb=1 "$bin" run -- "$prog" "$ex" >/dev/null 2>"$tmp/err"
    rc=$?
    rundir=$(find "$tmp/rd" -mindepth 1 -maxdepth 1 -name 'tlsan-run.*')
    expect_eq "$rc:$(tail -n 1 "$tmp/err")" \
        "1:tlsan: run: 1 finding (1 heap-write-after-free); 1 trace in $rundir; exit status 1" \
        "$ex: tlsan run's summary (in a run directory)"
done
# Live blocks: an overflow or an underflow of a block never freed is found at exit, and one
# that stays live through churn by the periodic check while the program runs, each with its
# allocation stack; the program's output is kept.
# live MODE WHERE WHEN
live() {
    run "$1"
    expect_kind "$1" heap-buffer-overflow 1
    expect_in "$err" "$2 a 40-byte block" "$1: where"
    expect_in "$err" "(found $3; the block is live)" "$1: found $3"
    expect_stack "$1" heap-buffer-overflow "${1//-/_}" "allocated here" "$1: allocated"
    expect_count "$err" "^(freed|resized) here:" 0 "$1: no free stack"
}
live live-overflow "3 bytes past the end of" "at exit"
expect_eq "$(cat "$tmp/out")" "live-overflow done" "live-overflow: output"
live live-underflow "3 bytes before the start of" "at exit"
live live-periodic "0 bytes past the end of" "by a periodic check"
expect_eq "$(cat "$tmp/out")" $'churned\nlive-periodic done' "live-periodic: output"

# Freed blocks below the guarded size are verified in full: a write between the windows a
# sampled verification reads is found at eviction. Above it the pages are guarded, also for a
# calloc'd block (not page-aligned: its inner pages), and a read is caught as it happens.
run mid-write-after-free
expect_kind mid-write-after-free heap-write-after-free 1
expect_in "$err" "at offset 40000 of a 65536-byte block" "mid-write-after-free: where"
expect_stack mid-write-after-free heap-write-after-free mid_write_after_free "allocated here" "mid-write-after-free: allocated"
expect_stack mid-write-after-free heap-write-after-free mid_write_after_free "freed here" "mid-write-after-free: freed"
run calloc-use-after-free
expect_kind calloc-use-after-free heap-use-after-free 1
expect_in "$err" "a read of a freed block" "calloc-use-after-free: a read"
expect_in "$err" "at offset 500000 of a 786432-byte block" "calloc-use-after-free: where"
expect_stack calloc-use-after-free heap-use-after-free calloc_use_after_free "accessed here" "calloc-use-after-free: read"
expect_stack calloc-use-after-free heap-use-after-free calloc_use_after_free "freed here" "calloc-use-after-free: freed"
expect_stack calloc-use-after-free heap-use-after-free calloc_use_after_free "allocated here" "calloc-use-after-free: allocated"

# Guarded sampling, forced for every block (sample_rate=1): the bad access faults at its own
# instruction, and its stack names that line beside the allocation and the free; the program
# goes on as natively. The bytes of the page around the block are checked at its free.
opts=sample_rate=1
run sampled-read-after-free
expect_kind sampled-read-after-free heap-use-after-free 1
expect_in "$err" "on address 0x" "sampled-read-after-free: headline"
expect_in "$err" "at offset 8 of a 32-byte block" "sampled-read-after-free: where"
expect_in "$err" "a read of a freed block, sampled into a page of its own" "sampled-read-after-free: a read"
expect_eq "$(cat "$tmp/out")" "sampled-read-after-free done" "sampled-read-after-free: goes on"
expect_stack sampled-read-after-free heap-use-after-free sampled_read_after_free "read here" "sampled-read-after-free: read"
expect_stack sampled-read-after-free heap-use-after-free sampled_read_after_free "freed here" "sampled-read-after-free: freed"
expect_stack sampled-read-after-free heap-use-after-free sampled_read_after_free "allocated here" "sampled-read-after-free: allocated"
run sampled-write-after-free
expect_kind sampled-write-after-free heap-use-after-free 1
expect_in "$err" "at offset 99 of a 100-byte block" "sampled-write-after-free: where"
expect_stack sampled-write-after-free heap-use-after-free sampled_write_after_free "written here" "sampled-write-after-free: written"
expect_stack sampled-write-after-free heap-use-after-free sampled_write_after_free "freed here" "sampled-write-after-free: freed"
expect_stack sampled-write-after-free heap-use-after-free sampled_write_after_free "allocated here" "sampled-write-after-free: allocated"
run sampled-overflow
expect_kind sampled-overflow heap-buffer-overflow 1
expect_in "$err" "0 bytes past the end of a 48-byte block" "sampled-overflow: where"
expect_in "$err" "a write of the guard page beside a sampled block" "sampled-overflow: the guard"
expect_eq "$(cat "$tmp/out")" "sampled-overflow done" "sampled-overflow: goes on"
expect_stack sampled-overflow heap-buffer-overflow sampled_overflow "written here" "sampled-overflow: written"
expect_stack sampled-overflow heap-buffer-overflow sampled_overflow "allocated here" "sampled-overflow: allocated"
run sampled-slack
expect_kind sampled-slack heap-buffer-overflow 1
expect_in "$err" "2 bytes past the end of a 24-byte block" "sampled-slack: where"
expect_in "$err" "(found when it was freed)" "sampled-slack: at the free"
expect_stack sampled-slack heap-buffer-overflow sampled_slack "allocated here" "sampled-slack: allocated"
expect_stack sampled-slack heap-buffer-overflow sampled_slack "freed here" "sampled-slack: freed"
# A sampled block that stays live: an overflow into its slack or an underflow into its page
# is found at exit, or by the periodic check of live slots through churn (every block of the
# churn sampled too), as for the redzones of other blocks.
# sampled_live MODE WHERE WHEN
sampled_live() {
    run "$1"
    expect_kind "$1 (sampled)" heap-buffer-overflow 1
    expect_in "$err" "$2 a 40-byte block" "$1 (sampled): where"
    expect_in "$err" "the sampled block's page changed $3 it (found $4; the block is live)" \
        "$1 (sampled): found $4"
    expect_stack "$1" heap-buffer-overflow "${1//-/_}" "allocated here" "$1: allocated"
    expect_count "$err" "^freed here:" 0 "$1 (sampled): no free stack"
}
sampled_live live-overflow "3 bytes past the end of" after "at exit"
expect_eq "$(cat "$tmp/out")" "live-overflow done" "live-overflow (sampled): output"
sampled_live live-underflow "3 bytes before the start of" before "at exit"
sampled_live live-periodic "0 bytes past the end of" after "by a periodic check"
expect_eq "$(cat "$tmp/out")" $'churned\nlive-periodic done' "live-periodic (sampled): output"
# The checks of a free hold for sampled blocks too: a double free (then abort, as glibc).
run double-free
expect_kind "double-free (sampled)" double-free 1
expect_in "$err" "the sampled block was freed before" "double-free (sampled): sampled"
expect_stack "double-free (sampled)" double-free double_free "freed again here" "double-free: freed again"
expect_stack "double-free (sampled)" double-free double_free "first freed here" "double-free: first freed"
expect_stack "double-free (sampled)" double-free double_free "allocated here" "double-free: allocated"
opts=""

# C++: each mismatched pair of allocation and release functions is an alloc-dealloc-mismatch
# naming both, with both stacks; the program goes on (natively such a pair often works).
use_prog prog_heapbugs_cxx prog_heapbugs_cxx.cc
# mismatch MODE FUNC WHAT: MODE's one finding, "(WHAT)", allocated and freed at its lines.
mismatch() {
    run "$1"
    expect_kind "$1" alloc-dealloc-mismatch 1
    expect_in "$err" "ERROR: tlsan: alloc-dealloc-mismatch ($3) on address" "$1: the pair"
    expect_eq "$(cat "$tmp/out")" "$1 done" "$1: the program goes on"
    expect_stack "$1" alloc-dealloc-mismatch "$2" "allocated here" "$1: allocated"
    expect_stack "$1" alloc-dealloc-mismatch "$2" "freed here" "$1: freed"
}
mismatch 'new[]-delete' _ZL16new_array_deletev 'operator new [] vs operator delete'
mismatch 'new[]-free' _ZL14new_array_freev 'operator new [] vs free'
mismatch malloc-delete _ZL13malloc_deletev 'malloc vs operator delete'
mismatch 'new-delete[]' _ZL16new_delete_arrayv 'operator new vs operator delete []'
mismatch new-free _ZL8new_freev 'operator new vs free'
mismatch 'aligned-new-delete[]' _ZL24aligned_new_delete_arrayv 'operator new vs operator delete []'
expect_in "$err" "(a 64-byte block)" "aligned-new-delete[]: its size"
# The other kinds on operator new's blocks.
run delete-twice
expect_kind delete-twice double-free 1
expect_stack delete-twice double-free _ZL12delete_twicev "allocated here" "delete-twice: allocated"
expect_stack delete-twice double-free _ZL12delete_twicev "first freed here" "delete-twice: first freed"
expect_stack delete-twice double-free _ZL12delete_twicev "freed again here" "delete-twice: freed again"
run 'new[]-overflow'
expect_kind 'new[]-overflow' heap-buffer-overflow 1
expect_in "$err" "1 bytes past the end of a 24-byte block" "new[]-overflow: where"
expect_stack 'new[]-overflow' heap-buffer-overflow _ZL18new_array_overflowv "allocated here" "new[]-overflow: allocated"
expect_stack 'new[]-overflow' heap-buffer-overflow _ZL18new_array_overflowv "freed here" "new[]-overflow: freed"
# Every form correctly paired: no finding, and what only the C++ runtime does kept (the
# new-handler called, std::bad_alloc thrown through the hooks, the nothrow form's NULL).
rm -f "$tmp/t.trace"
"$prog" correct >"$tmp/native" 2>&1
"$bin" run --trace "$tmp/t.trace" -- "$prog" correct >"$tmp/out" 2>"$tmp/err"
rc=$?
err=$(cat "$tmp/err")
expect_rc 0 "correct: tlsan run"
expect_count "$err" "ERROR: tlsan:" 0 "correct: no report"
expect_eq "$(cat "$tmp/out")" "$(cat "$tmp/native")" "correct: output as native"
expect_eq "$(cat "$tmp/out")" $'20000\nnew-handler called once\nbad_alloc\nnothrow null\ncorrect done' \
    "correct: the output"
# Sampled C++ blocks keep their family.
opts=sample_rate=1
mismatch 'new[]-delete' _ZL16new_array_deletev 'operator new [] vs operator delete'
run correct
expect_rc 0 "correct (sampled): tlsan run"
expect_count "$err" "ERROR: tlsan:" 0 "correct (sampled): no report"
expect_eq "$(cat "$tmp/out")" "$(cat "$tmp/native")" "correct (sampled): output as native"
opts=""
echo "heapbugs.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
