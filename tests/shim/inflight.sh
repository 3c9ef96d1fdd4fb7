#!/usr/bin/env bash
# Releases and reuses while an op is in flight (prog_inflight.c): a tensor released by the
# host while an op of another stream that reads it (or writes it through a view) has not
# ended is use-after-release, naming the op, its stream, and the op's, release and bind
# stacks at their lines; bytes of a tensor the op's own thread released, bound again by the
# host while the op is in flight, are unordered-reuse between the two tenants. The clean run
# (each op waited for by an event before its tensors are released or reused, and a worker
# releasing its own input after its op) is silent under every checksum/fill setting.
# Usage: inflight.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup inflight.sh "$@"
prog=$progs/prog_inflight
[ -x "$prog" ] || { echo "FAIL: no $prog"; exit 1; }
source_file=$src/tests/shim/prog_inflight.c
# line MARKER: the line of prog_inflight.c carrying "LINE:MARKER".
line() { echo "prog_inflight.c:$(grep -n "LINE:$1 " "$source_file" | cut -d: -f1)"; }

# run OPTIONS MODE: runs the program MODE under the shim; sets rc, out, err.
run() {
    TLSAN_OPTIONS="$1" LD_PRELOAD="$shim" "$prog" "$2" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
pid_line='^==[0-9]+==ERROR: tlsan: '

for opts in "" checksum=all checksum=off fill=0; do
    run "exitcode=23:trace=0:$opts" clean
    expect_rc 0 "clean ($opts)"
    if [ -z "$err" ]; then ok; else bad "clean ($opts) is not silent: $err"; fi
    expect_eq "$out" "prog_inflight: clean done" "clean ($opts)"
done

for opts in "" checksum=all fill=0; do
    what="release ($opts)"
    run "exitcode=23:trace=0:$opts" release
    expect_rc 23 "$what"
    expect_count "$err" "$pid_line" 1 "$what"
    expect_count "$err" "${pid_line}use-after-release on tensor 'kv'$" 1 "$what"
    expect_count "$err" "^  op 'attn_2' \(stream 1\) reads 'kv' \(arena 'a0', bytes \[1024, 2048\)\) and was still in flight when it was released$" 1 "$what"
    expect_count "$err" "^  no event or sync orders the op's end before the release$" 1 "$what"
    expect_frame_at "$err" "read by op 'attn_2' (in flight) at" 0 begin_op "$(line begin)" "$what"
    expect_frame_at "$err" "read by op 'attn_2' (in flight) at" 1 worker "$(line worker)" "$what"
    expect_frame_at "$err" "released at" 0 release_root "$(line release)" "$what"
    expect_frame_at "$err" "bound at" 0 bind_root "$(line bind)" "$what"
    expect_count "$err" "^SUMMARY: tlsan: use-after-release kv \(released while op 'attn_2' on stream 1 reads it\)$" 1 "$what"
    expect_eq "$out" "prog_inflight: release done" "$what"
done

run "exitcode=23:trace=0" view-write
expect_rc 23 view-write
expect_count "$err" "$pid_line" 1 view-write
expect_count "$err" "${pid_line}use-after-release on tensor 'h_lo'$" 1 view-write
expect_count "$err" "^  op 'fill_1' \(stream 2\) writes view 'h_lo' of 'h' \('h': arena 'a0', bytes \[2048, 3072\)\) and was still in flight when 'h' was released$" 1 view-write
expect_frame_at "$err" "written by op 'fill_1' (in flight) at" 0 begin_op "$(line begin)" view-write
expect_frame_at "$err" "released at" 0 release_root "$(line release)" view-write
expect_count "$err" "^SUMMARY: tlsan: use-after-release h_lo \(released while op 'fill_1' on stream 2 writes it\)$" 1 view-write

for opts in "" checksum=all; do
    what="reuse ($opts)"
    run "exitcode=23:trace=0:$opts" reuse
    expect_rc 23 "$what"
    expect_count "$err" "$pid_line" 1 "$what"
    expect_count "$err" "${pid_line}unordered-reuse between 'x' and 'y' in arena 'a0'$" 1 "$what"
    expect_count "$err" "^  'y' \(bytes \[256, 768\)\) was bound over bytes of released 'x' while op 'mm_3' \(stream 1\), which reads 'x' \(bytes \[0, 512\)\), was still in flight$" 1 "$what"
    expect_count "$err" "^  no event or sync orders the op's end before the reuse$" 1 "$what"
    expect_frame_at "$err" "read by op 'mm_3' (in flight) at" 0 begin_op "$(line begin)" "$what"
    expect_frame_at "$err" "'y' (bytes [256, 768)) new tenant, bound at" 0 bind_root "$(line bind)" "$what"
    expect_frame_at "$err" "previous tenant released at" 0 release_root "$(line release)" "$what"
    expect_frame_at "$err" "previous tenant released at" 1 worker "$(line own-release)" "$what"
    expect_frame_at "$err" "'x' (bytes [0, 512)) previous tenant, bound at" 0 bind_root "$(line bind)" "$what"
    expect_count "$err" "^SUMMARY: tlsan: unordered-reuse 'x' and 'y' in arena 'a0' \('y' bound over 'x' while op 'mm_3' on stream 1 reads it\)$" 1 "$what"
done

# Without the shim every mode runs as a plain program.
for mode in clean release view-write reuse; do
    "$prog" "$mode" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    expect_rc 0 "$mode without the shim"
    if [ "$out" = "prog_inflight: $mode done" ] && [ -z "$err" ]; then ok; else bad "$mode without the shim: $out / $err"; fi
done

echo "inflight.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
