#!/usr/bin/env bash
# The guilty op of a stray write under checksum=all (prog_stray_write.c): a kernel that writes
# 64 bytes past its output into the next live tensor is reported at its own end, as
# live-corruption of the victim naming the op that ran when the bytes changed ('gelu_2', its
# stream and its stack at its line), the victim's last writer, and the ops still in flight
# then (with their stacks); the victim's later reader reports nothing more. The clean run is
# silent under every checksum/fill setting.
# Usage: stray_write.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup stray_write.sh "$@"
prog=$progs/prog_stray_write
[ -x "$prog" ] || { echo "FAIL: no $prog"; exit 1; }
source_file=$src/tests/shim/prog_stray_write.c
# line MARKER: the line of prog_stray_write.c carrying "LINE:MARKER".
line() { echo "prog_stray_write.c:$(grep -n "LINE:$1 " "$source_file" | cut -d: -f1)"; }

# run OPTIONS MODE: runs the program MODE under the shim; sets rc, out, err.
run() {
    TLSAN_OPTIONS="$1" LD_PRELOAD="$shim" "$prog" "$2" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
pid_line='^==[0-9]+==ERROR: tlsan: '
hash='[0-9a-f]{16}'

for opts in "" checksum=all checksum=off fill=0 "checksum=all:fill=0"; do
    run "exitcode=23:trace=0:$opts" clean
    expect_rc 0 "clean ($opts)"
    if [ -z "$err" ]; then ok; else bad "clean ($opts) is not silent: $err"; fi
    expect_eq "$out" "prog_stray_write: clean done, sum of d 32640" "clean ($opts)"
done

for mode in stray streams; do
    for opts in checksum=all "checksum=all:fill=0"; do
        what="$mode ($opts)"
        run "exitcode=23:trace=0:$opts" "$mode"
        expect_rc 23 "$what"
        expect_count "$err" "$pid_line" 1 "$what"
        expect_count "$err" "${pid_line}live-corruption on tensor 'd' in arena 'a0' bytes \[1280, 1536\)$" 1 "$what"
        expect_count "$err" "^  its bytes changed with no write of its own: checksum $hash after its last write, $hash at the end of op 'gelu_2'$" 1 "$what"
        expect_count "$err" "^  they changed while op 'gelu_2' \(stream 0\) ran, or before it began and after they were last verified \(every op's end verifies the live tensors\)$" 1 "$what"
        expect_frame_at "$err" "changed while op 'gelu_2' ran, begun at" 0 begin_op "$(line begin)" "$what"
        expect_frame_at "$err" "changed while op 'gelu_2' ran, begun at" 2 main "$(line gelu)" "$what"
        expect_frame_at "$err" "last written by op 'fill_d' at" 2 main "$(line fill)" "$what"
        expect_frame_at "$err" "'d' (bytes [1280, 1536)) bound at" 1 main "$(line bind-d)" "$what"
        expect_count "$err" "^read by op " 0 "$what: the reader 'add_3' reports nothing more"
        expect_count "$err" "^SUMMARY: tlsan: live-corruption d \(last written by op 'fill_d', changed while 'gelu_2' ran\)$" 1 "$what"
        expect_eq "$out" "prog_stray_write: $mode done, sum of d 32448" "$what"
    done
done
# streams: copy_4 was in flight on stream 2 when gelu_2 ended.
run "exitcode=23:trace=0:checksum=all" streams
expect_count "$err" "^  1 other op was in flight then, which may have written them too$" 1 "streams: in flight"
expect_frame_at "$err" "op 'copy_4' (stream 2, in flight) begun at" 1 copy_worker "$(line copy)" "streams: in flight"
run "exitcode=23:trace=0:checksum=all" stray
expect_count "$err" "in flight" 0 "stray: no other op in flight"

# Without the shim every mode runs as a plain program.
for mode in clean stray streams; do
    "$prog" "$mode" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    expect_rc 0 "$mode without the shim"
    if [ -z "$err" ]; then ok; else bad "$mode without the shim printed: $err"; fi
done

echo "stray_write.sh: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
