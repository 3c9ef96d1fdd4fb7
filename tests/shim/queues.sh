#!/usr/bin/env bash
# A correct engine of real queues over 10,000 iterations (issue 12): prog_queues runs host ops
# on main and three worker streams fed by the host, views declared once and in-place outputs,
# with no tlsan_host_sync(). Under the shim it must be silent and exit 0 under every setting,
# print what it prints natively, and its trace must replay with no finding (the queue order:
# the host enqueued each stream op after its last host op ended). Before that order (the tree
# before issue 12, 39c8ca1) the replay of 10 iterations gave 468 unordered-reuse findings, of
# 100 iterations 49,698, and 10,000 iterations did not finish in 300 s. The same engine
# without the wait for one event per iteration (no-wait) is silent at run time (its threads
# still join) and replays as exactly 7 findings, each one cause repeated in every run.
# Usage: queues.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup queues.sh "$@"
shim_prog prog_queues

"$prog" clean >"$tmp/native" 2>"$tmp/native.err"
rc=$?
out=$(cat "$tmp/native")
err=$(cat "$tmp/native.err")
expect_rc 0 "clean without the shim"
expect_eq "$err" "" "clean without the shim: stderr"
want=$(cat "$tmp/native")
expect_in "$want" "prog_queues: clean, 10000 iterations, checksum " "clean without the shim"

# ---- at run time: silent under every setting, the same output (the defaults, traced) ----
for opts in "trace=1:trace_path=$tmp/clean.trace" checksum=all fill=0; do
    run_prog "exitcode=23:$opts" clean
    expect_rc 0 "clean ($opts)"
    expect_eq "$err" "" "clean ($opts): stderr"
    expect_eq "$out" "$want" "clean ($opts): output"
done

# ---- in replay: no finding ----
replayed=$("$bin" replay "$tmp/clean.trace")
rc=$?
expect_rc 0 "replay of clean"
expect_count "$replayed" "^SUMMARY: tlsan: no findings in $tmp/clean.trace$" 1 "replay of clean"
json=$("$bin" replay --format json "$tmp/clean.trace" | head -1)
expect_eq "$(printf '%s' "$json" | jq '.findings | length')" 0 "replay of clean: JSON findings"
# the rebuilt run holds every iteration: 10,000 tenants of each root (x, a0..a2, b0..b2, y)
# and of each view (x0..x2, bv0..bv2); per iteration 9 ops (host_write(x), mm_k and relu_k,
# mix, host_read(y)), 3 event records and 3 waits, and the queue order's 3 waits of 'host'
# (one per stream) and 3 records of it on main (after host_write, mix and host_read; none
# after the last host_read): 21 x 10,000 - 1
expect_eq "$(printf '%s' "$json" | jq -c '[.stats.tensors, .stats.ops]')" "[140000,209999]" \
    "replay of clean: the run's tensors and ops"

# ---- the negative control: one event never waited for ----
run_prog "exitcode=23:trace=1:trace_path=$tmp/no-wait.trace" no-wait
expect_rc 0 "no-wait at run time (found by replay only)"
expect_eq "$err" "" "no-wait at run time: stderr"
expect_eq "$out" "${want/clean/no-wait}" "no-wait: output"
replayed=$("$bin" replay "$tmp/no-wait.trace")
rc=$?
expect_rc 1 "replay of no-wait"
plan="in plan 'run of pid [0-9]+'"
for pair in "a0' and 'a0#2" "a0' and 'b0#2" "b0' and 'a0#2" "b0' and 'b0#2" "x' and 'x#2" "x' and 'y"; do
    expect_count "$replayed" "^ERROR: tlsan: unordered-reuse between '$pair' $plan$" 1 "no-wait: $pair"
done
expect_count "$replayed" "^ERROR: tlsan: read-before-write on 'b0' $plan$" 1 "no-wait: b0"
expect_count "$replayed" "^op 'mix' \(step [0-9]+\) reads 'b0', which op 'relu_0' \(step [0-9]+\) writes, but no write of it is ordered before the read \(missing event or sync\?\)$" 1 "no-wait: the read of b0"
expect_count "$replayed" "^  repeated: 9999 findings of this kind on tenants of the same names \(NAME#k: the k-th bind\), from run 2 to run 10000; the first is shown$" 5 "no-wait: repeats from run 2"
expect_count "$replayed" "^  repeated: 10000 findings of this kind on tenants of the same names \(NAME#k: the k-th bind\), from run 1 to run 10000; the first is shown$" 2 "no-wait: repeats from run 1"
expect_count "$replayed" "^SUMMARY: tlsan: 7 findings \(unordered-reuse x6, read-before-write x1\) in $tmp/no-wait.trace$" 1 "no-wait: summary"

echo "queues.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
