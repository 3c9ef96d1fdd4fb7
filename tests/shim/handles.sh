#!/usr/bin/env bash
# The handle API of tlsan.h (version 2) end to end: prog_handles, a two-stream engine that
# binds by handle, declares its views once, in-place outputs with one call, host accesses and
# scoped ops, runs each planted bug under LD_PRELOAD; the report must name the kind, the
# tensors and the op with its source location (FILE:LINE in FUNC, the line of the op's
# declaration), with the exact SUMMARY line; the clean run is silent under every setting and
# its trace replays clean (the views followed their roots through the three runs); misuse is
# one usage warning per call; without the shim every mode runs as a plain program.
# Usage: handles.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR [PROGRAM]
# PROGRAM (default prog_handles) names another build of prog_handles.c in PROG_DIR: the test
# shim_handles_clang runs this script on prog_handles_clang, built by clang, whose debug
# information differs from gcc's (no .debug_aranges, line 0 for merged code).
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup handles.sh "$@"
prog=$progs/${5:-prog_handles}
source_file=$src/tests/shim/prog_handles.c
[ -x "$prog" ] || { echo "FAIL: no $prog"; exit 1; }

# run OPTIONS MODE: runs prog_handles MODE under the shim; sets rc, out, err.
run() {
    TLSAN_OPTIONS="$1" LD_PRELOAD="$shim" "$prog" "$2" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
}
# line_of TEXT [NTH]: the line of prog_handles.c holding TEXT (its NTH occurrence, default 1).
line_of() {
    grep -nF -- "$1" "$source_file" | sed -n "${2:-1}p" | cut -d: -f1
}
# at TEXT [NTH]: the location a report gives an op declared on that line.
at() {
    echo "$source_file:$(line_of "$@")"
}
want_out="prog_handles: s[0..1] = 1 0"

# ---- clean runs: silent, exit 0, the same output ----
for opts in "" checksum=all checksum=off fill=0 "fill=0:checksum=all" stack_depth=0 trace=0; do
    run "exitcode=23:$opts" clean
    expect_rc 0 "clean ($opts)"
    if [ -z "$err" ]; then ok; else bad "clean ($opts) is not silent: $err"; fi
    expect_eq "$out" "$want_out" "clean ($opts) output"
done
# Its trace replays clean: every view was declared again on each new tenant of its root.
run "trace_path=$tmp/clean.trace" clean
rep=$("$bin" replay --no-symbolize "$tmp/clean.trace" 2>&1)
expect_count "$rep" "^SUMMARY: tlsan: no findings in " 1 "replay of the clean trace"
views=$("$bin" export "$tmp/clean.trace" -o "$tmp/clean.json" 2>&1 &&
    python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(" ".join(sorted(t["name"] for t in p["tensors"] if "view_of" in t)))' "$tmp/clean.json")
expect_eq "$views" "h1v h1v#2 h1v#3 h2v h2v#2 h2v#3 s[0,+32] s[0,+32]#2 s[0,+32]#3 yv yv#2 yv#3" "views in the exported plan"

# ---- each planted bug: one report, the op's location, exact summary ----
pid_line='^==[0-9]+==ERROR: tlsan: '

run exitcode=23 uar-view
expect_rc 23 uar-view
expect_count "$err" "$pid_line" 1 uar-view
expect_count "$err" "${pid_line}use-after-release on tensor 'h1v'$" 1 uar-view
expect_in "$err" "op 'relu_4' reads view 'h1v' of 'h1', after the release of its storage root" uar-view
expect_top_frame "$err" "read by op 'relu_4' ($(at 'TLSAN_OP_SCOPE("relu_4", 0, TLSAN_READS(h3, h1v)') in graph) at" graph uar-view
expect_count "$err" "^SUMMARY: tlsan: use-after-release h1v \(released, read by op 'relu_4'\)$" 1 uar-view
# The stack's title in the trace and in the JSON line is the whole title (with the op's
# source path it is longer than 63 bytes, where it was once cut).
title="read by op 'relu_4' ($(at 'TLSAN_OP_SCOPE("relu_4", 0, TLSAN_READS(h3, h1v)') in graph) at"
run "exitcode=23:trace_path=$tmp/uar.trace" uar-view
rep=$("$bin" replay --no-symbolize "$tmp/uar.trace" 2>&1)
expect_count "$rep" "^$(printf '%s' "$title" | sed 's/[][\\.*^$()]/\\&/g'):$" 1 "uar-view: the title in the replay"
run "exitcode=23:trace=0:log_format=json" uar-view
role=$(printf '%s\n' "$err" | python3 -c 'import json,sys
for l in sys.stdin:
    if l.startswith("{"):
        print("\n".join(s["role"] for s in json.loads(l)["call_stacks"]))' 2>&1 | head -1)
expect_eq "$role" "$title" "uar-view: the title in the JSON line"

run exitcode=23 host-uar
expect_rc 23 host-uar
expect_count "$err" "$pid_line" 1 host-uar
expect_in "$err" "op 'host_read(h2v)' reads view 'h2v' of 'h2', after the release of its storage root" host-uar
expect_top_frame "$err" "read by op 'host_read(h2v)' ($(at 'tlsan_host_read(h2v)') in graph) at" graph host-uar
expect_count "$err" "^SUMMARY: tlsan: use-after-release h2v \(released, read by op 'host_read\(h2v\)'\)$" 1 host-uar

# A root's own handle after its release (the name not bound since) is a use-after-release
# of that tenant, reported as by name; before, the op left the access out with a usage
# warning ("1 stale or unknown tensor handle(s) left out") and nothing was found.
run exitcode=23 uar-root
expect_rc 23 uar-root
expect_count "$err" "$pid_line" 1 uar-root
expect_count "$err" "${pid_line}use-after-release on tensor 'h1'$" 1 uar-root
expect_count "$err" "^  op 'relu_4' reads 'h1' \(arena 'a0', bytes \[8192, 12192\)\) after its release$" 1 uar-root
expect_top_frame "$err" "read by op 'relu_4' ($(at 'TLSAN_OP_SCOPE("relu_4", 0, TLSAN_READS(h3, h1)') in graph) at" graph uar-root
expect_count "$err" "warning" 0 uar-root
expect_count "$err" "^SUMMARY: tlsan: use-after-release h1 \(released, read by op 'relu_4'\)$" 1 uar-root

run exitcode=23 host-uar-root
expect_rc 23 host-uar-root
expect_count "$err" "$pid_line" 1 host-uar-root
expect_count "$err" "^  op 'host_read\(h2\)' reads 'h2' \(arena 'a0', bytes \[12288, 16384\)\) after its release$" 1 host-uar-root
expect_top_frame "$err" "read by op 'host_read(h2)' ($(at 'tlsan_host_read(h2);') in graph) at" graph host-uar-root
expect_count "$err" "^SUMMARY: tlsan: use-after-release h2 \(released, read by op 'host_read\(h2\)'\)$" 1 host-uar-root

run exitcode=23 host-unwritten
expect_rc 23 host-unwritten
expect_count "$err" "$pid_line" 1 host-unwritten
expect_count "$err" "${pid_line}read-before-write on tensor 'h3'$" 1 host-unwritten
expect_in "$err" "op 'host_read(h3)' reads 'h3' (arena 'a0', bytes [0, 4000)), which no op wrote since its bind and which is not an input" host-unwritten
expect_top_frame "$err" "read by op 'host_read(h3)' ($(at 'tlsan_host_read(h3)') in graph) at" graph host-unwritten
expect_count "$err" "^SUMMARY: tlsan: read-before-write h3 \(not written since its bind, read by op 'host_read\(h3\)'\)$" 1 host-unwritten

# One tlsan_bind_inplace made neg_6's in-place pair and h4's handover: the later read of h4
# is a consumption in place (not an overwrite), and h4's release fills nothing under y.
run exitcode=23 inplace-read
expect_rc 23 inplace-read
expect_count "$err" "$pid_line" 1 inplace-read
expect_count "$err" "${pid_line}live-corruption on tensor 'h4' in arena 'a0' bytes \[8192, 12192\)$" 1 inplace-read
expect_in "$err" "op 'neg_6' consumed 'h4' in place (its output 'y' took over the bytes); op 'relu_4' reads it afterwards" inplace-read
expect_top_frame "$err" "overwritten by op 'neg_6' ($(at 'TLSAN_OP_SCOPE("neg_6"' 2) in graph) (writing 'y') at" graph inplace-read
expect_top_frame "$err" "read by op 'relu_4' ($(at 'TLSAN_OP_SCOPE("relu_4", 0, TLSAN_READS(h4)') in graph) at" graph inplace-read
expect_count "$err" "^SUMMARY: tlsan: live-corruption h4 \(last written by op 'fill_4', read by 'relu_4', overlapped by 'y'\)$" 1 inplace-read

for opts in "" checksum=all; do
    what="clobber ($opts)"
    run "exitcode=23:$opts" clobber
    expect_rc 23 "$what"
    expect_count "$err" "$pid_line" 1 "$what"
    expect_in "$err" "op 'scale_9' wrote 'tmp' (bytes [9216, 10240)) over 'h1' while 'h1' was still live; op 'add_3' reads it afterwards" "$what"
    expect_top_frame "$err" "last written by op 'mm_1' ($(at 'TLSAN_OP_SCOPE(j->name') in worker) at" worker "$what"
    expect_top_frame "$err" "read by op 'add_3' ($(at 'TLSAN_OP_SCOPE("add_3"') in graph) at" graph "$what"
    expect_top_frame "$err" "overwritten by op 'scale_9' ($(at 'TLSAN_OP_SCOPE("scale_9"') in graph) (writing 'tmp') at" graph "$what"
    expect_count "$err" "^SUMMARY: tlsan: live-corruption h1 \(last written by op 'mm_1', read by 'add_3', overlapped by 'tmp'\)$" 1 "$what"
done

# A generic executor's op carries the location it was given (the model's), not the line of
# the executor.
run exitcode=23 desc-uar
expect_rc 23 desc-uar
expect_count "$err" "$pid_line" 1 desc-uar
expect_top_frame "$err" "read by op 'sum_7' (model.py:42 in block) at" graph desc-uar
expect_count "$err" "^SUMMARY: tlsan: use-after-release yv \(released, read by op 'sum_7'\)$" 1 desc-uar

# ---- misuse: one usage warning per refused call, no finding, the clean output ----
# Each names the function the program called: a host access or a view by handle past the end
# of its root once said "tlsan_view_bind", the call made for it.
run "" misuse
expect_rc 0 misuse
expect_eq "$out" "$want_out" "misuse output"
stale="is stale (its tensor was released, or bound again, since); ignored"
expect_eq "$err" "tlsan: warning: tlsan_release('a'): the handle $stale
tlsan: warning: tlsan_release('av'): the handle is a view's (views end with their storage root); ignored
tlsan: warning: tlsan_view('aw'): the base handle $stale
tlsan: warning: op 'stale_op': 1 stale or unknown tensor handle(s) left out
tlsan: warning: tlsan_bind_inplace('c'): its input 'av' is a view, not a storage root; ignored
tlsan: warning: tlsan_host_access('a[200,+100]'): [200, +100) runs past the end of its base 'a' (256 bytes)
tlsan: warning: tlsan_view('ax'): [200, +100) runs past the end of its base 'a' (256 bytes)" misuse

# ---- without the shim: every call a no-op, the same output ----
for mode in clean uar-view host-uar host-unwritten inplace-read clobber desc-uar misuse uar-root host-uar-root; do
    "$prog" "$mode" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    out=$(cat "$tmp/out")
    err=$(cat "$tmp/err")
    expect_rc 0 "$mode without the shim"
    expect_eq "$err$out" "$want_out" "$mode without the shim"
done

echo "handles.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
