#!/usr/bin/env bash
# read-before-write at run time (prog_read_before_write.c): an op that declares a read of a
# tensor no op wrote since its bind (not an input, not an in-place output) is reported once
# per tenant, naming the tensor (or the view read), the reading op and the bind stack; the
# same through a view whose bytes no write covered, and for a second tenant of a name. The
# clean run (an input read first, write then read, a root written through its views, an
# in-place output read first) is silent under every checksum/fill setting.
# Usage: read_before_write.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup read_before_write.sh "$@"
shim_prog prog_read_before_write

for opts in "" checksum=all checksum=off fill=0; do
    run_prog "exitcode=23:trace=0:$opts" clean
    expect_rc 0 "clean ($opts)"
    if [ -z "$err" ]; then ok; else bad "clean ($opts) is not silent: $err"; fi
    if [ "$out" = "prog_read_before_write: clean done" ]; then ok; else bad "clean ($opts) printed: $out"; fi
done

for opts in "" checksum=all fill=0; do
    what="root ($opts)"
    run_prog "exitcode=23:trace=0:$opts" root
    expect_rc 23 "$what"
    expect_count "$err" "$pid_line" 1 "$what"
    expect_count "$err" "${pid_line}read-before-write on tensor 'acc'$" 1 "$what"
    expect_count "$err" "^  op 'matmul_2' reads 'acc' \(arena 'a0', bytes \[1024, 2048\)\), which no op wrote since its bind and which is not an input$" 1 "$what"
    expect_top_frame "$err" "read by op 'matmul_2' at" run_op "$what"
    expect_top_frame "$err" "bound at" bind_root "$what"
    expect_count "$err" "^SUMMARY: tlsan: read-before-write acc \(not written since its bind, read by op 'matmul_2'\)$" 1 "$what"
    if [ "$out" = "prog_read_before_write: root done" ]; then ok; else bad "$what printed: $out"; fi
done

run_prog "exitcode=23:trace=0" view
expect_rc 23 view
expect_count "$err" "$pid_line" 1 view
expect_count "$err" "${pid_line}read-before-write on tensor 'buf_hi'$" 1 view
expect_count "$err" "^  op 'use_hi' reads view 'buf_hi' of 'buf' \(arena 'a0', bytes \[2176, 2304\)\), which no op wrote since 'buf' was bound and which is not an input$" 1 view
expect_top_frame "$err" "read by op 'use_hi' at" run_op view
expect_top_frame "$err" "bound at" bind_root view
expect_count "$err" "^SUMMARY: tlsan: read-before-write buf_hi \(not written since 'buf' was bound, read by op 'use_hi'\)$" 1 view

run_prog "exitcode=23:trace=0" rebind
expect_rc 23 rebind
expect_count "$err" "$pid_line" 1 rebind
expect_count "$err" "${pid_line}read-before-write on tensor 'h'$" 1 rebind
expect_count "$err" "^  op 'relu_5' reads 'h' \(arena 'a0', bytes \[1024, 1536\)\), which no op wrote since its bind and which is not an input$" 1 rebind
expect_count "$err" "^SUMMARY: tlsan: read-before-write h \(not written since its bind, read by op 'relu_5'\)$" 1 rebind

# Without the shim every mode runs as a plain program.
for mode in clean root view rebind; do
    "$prog" "$mode" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    expect_rc 0 "$mode without the shim"
    if [ "$out" = "prog_read_before_write: $mode done" ] && [ -z "$err" ]; then ok; else bad "$mode without the shim: $out / $err"; fi
done

echo "read_before_write.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
