#!/usr/bin/env bash
# A real ggml host the shim did not build against: whisper.cpp's Node addon
# (@fugood/node-whisper-linux-x64@1.1.3, .deps/whisper/index.node from .ci/fetch-ggml.sh):
# ggml 0.22.0 built into the addon and exported, no libggml*.so, loaded with
# dlopen(RTLD_LOCAL) as Node loads an addon. ggml_addon_graphs (examples/ggml) builds the
# example graphs with the addon's own ggml, every call straight into the addon (dlsym on its
# handle), so the shim sees only the addon's internal PLT calls: ggml_gallocr_alloc_graph and
# ggml_backend_sched_graph_compute_async from its scheduler, ggml_graph_compute from its CPU
# backend (its ggml_backend_graph_compute calls ..._async directly).
#  1. Natively: the addon's numbers are right (the MLP against the Python reference).
#  2. Clean, through ggml_gallocr + ggml_backend_graph_compute (the graph is first seen where the
#     CPU backend computes it) and through ggml_backend_sched (seen where the scheduler
#     allocates it), for each graph: the same bytes as natively, one check with no finding,
#     the adapter on for the addon's ggml, never "cannot find the real"; the same bytes with
#     checksum=off and checksum=all.
#  3. inject=move@N on both paths: live-overlap naming the two tensors, live-corruption by the
#     checksums, the program's stack; replay finds the fault again in the trace.
#     Two ggml copies in one process (libggml-base and the addon, both RTLD_LOCAL): each is
#     served with its own functions, and each one's graph is checked.
#  4. whisper.cpp itself in Node: a tiny generated model (whisper_tiny_model.py) transcribes a
#     second of audio (whisper_transcribe.js); under the shim the transcript is the same, its
#     four graphs are checked where whisper.cpp's scheduler allocates them, and a node moved
#     in the encoder graph is reported as live-overlap and live-corruption.
# Usage: whisper.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
. "$(dirname "$0")/lib/common.bash"
shim_test_setup whisper.sh "$@"
fetched=$src/.deps/whisper/index.node
host=$(dirname "$bin")/examples/ggml/ggml_addon_graphs
if [ ! -f "$fetched" ]; then
    echo "SKIP: no $fetched (run .ci/fetch-ggml.sh: it needs the npm registry)"
    exit 77
fi
if [ ! -x "$host" ]; then
    echo "SKIP: no $host (TLSAN_BUILD_EXAMPLES off, or cmake ran before .ci/fetch-ggml.sh)"
    exit 77
fi
# Where npm installs it, under a name that says nothing of ggml (the clone's path might).
mkdir -p node_modules/@fugood/node-whisper-linux-x64
addon=$tmp/node_modules/@fugood/node-whisper-linux-x64/index.node
cp "$fetched" "$addon"
case "$addon" in
    *ggml*) echo "note: the temporary folder's name has 'ggml' in it: $addon" ;;
esac

# run NAME OPTIONS ARGS...: the host under `tlsan run` (OPTIONS may be ""), and natively;
# sets rc, out, err (the shim's stderr) and same (1 when stdout equals the native stdout).
run() {
    local name=$1 opts=$2
    shift 2
    "$host" --addon "$addon" "$@" >"$name.native" 2>"$name.native.err"
    "$bin" run ${opts:+--options "$opts"} -- "$host" --addon "$addon" "$@" >"$name.out" \
        2>"$name.err"
    rc=$?
    out=$(cat "$name.out")
    err=$(cat "$name.err")
    same=0
    cmp -s "$name.native" "$name.out" && same=1
}

# ---- 1. natively ----
"$host" --addon "$addon" --graph mlp --runs 1 >mlp.out 2>mlp.err
rc=$?
expect_rc 0 "native mlp"
expect_in "$(cat mlp.err)" "ggml 0.22.0 (9781133-dirty)" "native mlp: the addon's ggml"
if ref=$(python3 "$src/tests/shim/ggml_mlp_ref.py" mlp.out 2>&1); then ok; else bad "mlp: the addon's outputs differ from the Python reference: $ref"; fi

# ---- 2. clean ----
for path in gallocr sched; do
    flag=
    seen=compute
    if [ "$path" = sched ]; then
        flag=--sched
        seen=allocation
    fi
    for g in "mlp 9 16" "block 27 36" "multi 12 21"; do
        read -r graph nodes tensors <<<"$g"
        run "$graph-$path" verbosity=1 --graph "$graph" --runs 3 $flag
        expect_rc 0 "$graph $path"
        if [ "$same" = 1 ]; then ok; else bad "$graph $path: stdout differs from the native run"; fi
        expect_count "$err" "tlsan: ggml: checked ggml graph '[^']+' \.\. '[^']+' \($nodes nodes\): $tensors tensors in 2 buffers, 0 findings; seen at its $seen\$" 1 "$graph $path: one clean check"
        expect_count "$err" "(ERROR|WARNING): tlsan|cannot find the real|accessors are missing|not laid out" 0 "$graph $path: no report, no failure"
        expect_in "$err" "tlsan: ggml: adapter on (ggml 0.22.0 in $addon)" "$graph $path: the addon's ggml"
    done
    for cs in off all; do
        run "cs-$cs-$path" checksum=$cs --graph block --runs 2 $flag
        expect_rc 0 "block $path checksum=$cs"
        if [ "$same" = 1 ]; then ok; else bad "block $path checksum=$cs: stdout differs from the native run"; fi
    done
done

# ---- 3. injected ----
for path in gallocr sched; do
    flag=
    [ "$path" = sched ] && flag=--sched
    run "inj-$path" inject=move@12 --graph block --runs 1 $flag
    expect_rc 1 "block $path inject=move@12"
    expect_in "$err" "tlsan: inject: moved node 12 'kq' (1024 bytes) in buffer 'CPU#0' from offset 1024 onto 'v (transposed)' at offset 3072" "block $path: the move"
    expect_count "$err" "^SUMMARY: tlsan: live-overlap 'v \(transposed\)' and 'kq' in ggml graph 'attn_rms' \.\. 'block_out' \(27 nodes\)\$" 1 "block $path: live-overlap"
    expect_count "$err" "^SUMMARY: tlsan: live-corruption 'v \(transposed\)' in ggml graph 'attn_rms' \.\. 'block_out' \(27 nodes(, a ggml_backend_sched split)?\) \(overwritten by 'kq'\)\$" 1 "block $path: live-corruption"
    expect_count "$err" "^SUMMARY" 2 "block $path: exactly the two findings"
    expect_in "$err" " in main+" "block $path: the program's stack"
    if [ "$same" = 0 ]; then ok; else bad "block $path inject=move@12: the fault changed no output"; fi

    run "mlp-$path" inject=move@5 --graph mlp --runs 1 $flag
    expect_rc 1 "mlp $path inject=move@5"
    expect_count "$err" "^SUMMARY: tlsan: live-overlap 'fc2' and 'fc3.matmul' in ggml graph" 1 "mlp $path: live-overlap"
done

"$bin" run --trace inj.trace --options inject=move@12 -- "$host" --addon "$addon" --graph block \
    --runs 1 >/dev/null 2>&1
out=$("$bin" replay inj.trace 2>&1)
rc=$?
expect_rc 1 "replay of the injected run"
expect_in "$out" "live-overlap between 'v (transposed)' and 'kq'" "replay: the fault, offline"

# ---- two ggml copies in one process ----
# libggml-base (ggml 0.23.0) and the addon (0.22.0), both RTLD_LOCAL: each graph is read and
# computed with the functions of the copy that made it.
local_prog=$(dirname "$bin")/examples/ggml/ggml_dlopen_local
"$bin" run --options verbosity=1 -- "$local_prog" "$src/.deps/ggml/lib" "$addon" >two.out 2>two.err
rc=$?
err=$(cat two.err)
expect_rc 0 "two ggml copies"
expect_in "$(cat two.out)" "libggml: e[0] = 7
addon: e[0] = 7" "two ggml copies: both results"
expect_in "$err" "tlsan: ggml: adapter on (ggml 0.23.0 in $src/.deps/ggml/lib/libggml-base.so)" "two copies: libggml-base's"
expect_in "$err" "tlsan: ggml: adapter on (ggml 0.22.0 in $addon)" "two copies: the addon's"
expect_count "$err" "checked ggml graph '[^']+' \.\. '[^']+' \(3 nodes\): 5 tensors in 1 buffers, 0 findings; seen at its compute\$" 2 "two copies: a graph each"

# ---- 4. whisper.cpp itself, in Node ----
# A real transcription: node loads the addon, whisper.cpp reads a tiny generated model and
# decodes a second of synthetic audio, computing its conv, encoder, cross and decoder graphs
# through ggml_backend_sched (checked where whisper.cpp's scheduler allocates them).
if command -v node >/dev/null 2>&1; then
    python3 "$src/tests/shim/whisper_tiny_model.py" tiny.bin &&
        python3 "$src/tests/shim/whisper_tiny_model.py" tiny2.bin
    if cmp -s tiny.bin tiny2.bin; then ok; else bad "whisper_tiny_model.py: not the same bytes twice"; fi
    js=$src/tests/shim/whisper_transcribe.js
    node "$js" "$addon" "$PWD/tiny.bin" 2 >node.native 2>node.native.err
    rc=$?
    expect_rc 0 "node transcription natively ($(tail -n 3 node.native.err))"
    expect_count "$(cat node.native)" '^\{"run":[01],"result":".+","segments":\[\{"text":' 2 "node: a transcript per run"
    if [ "$(sed -n 1p node.native | cut -c9-)" = "$(sed -n 2p node.native | cut -c9-)" ]; then ok; else bad "node: the two runs differ: $(cat node.native)"; fi

    "$bin" run --options verbosity=1 -- node "$js" "$addon" "$PWD/tiny.bin" 2 >node.out 2>node.err
    rc=$?
    err=$(cat node.err)
    expect_rc 0 "node transcription under tlsan"
    if cmp -s node.native node.out; then ok; else bad "node: the transcript differs under tlsan: $(cat node.out)"; fi
    for g in "14 19 2" "40 60 3" "10 17 4"; do
        read -r nodes tensors buffers <<<"$g"
        expect_count "$err" "checked ggml graph '[^']+' \.\. '[^']+' \($nodes nodes, allocated by a ggml_backend_sched\): $tensors tensors in $buffers buffers, 0 findings; seen at its allocation\$" 1 "node: whisper's $nodes-node graph checked once, clean"
    done
    n=$(printf '%s\n' "$err" | grep -cE "checked ggml graph '[^']+' \.\. '[^']+' \(61 nodes, allocated by a ggml_backend_sched\): 93 tensors in 4 buffers, 0 findings")
    if [ "$n" -ge 2 ]; then ok; else bad "node: the decoder's graphs: $n checked, want 2 or more"; fi
    expect_count "$err" "(ERROR|WARNING): tlsan|cannot find the real|, [1-9][0-9]* findings?;" 0 "node: no finding, no failure"

    "$bin" run --options checksum=off -- node "$js" "$addon" "$PWD/tiny.bin" 1 >node-off.out 2>/dev/null
    rc=$?
    expect_rc 0 "node checksum=off"
    if [ "$(cat node-off.out)" = "$(sed -n 1p node.native)" ]; then ok; else bad "node checksum=off: $(cat node-off.out)"; fi

    # Node 12 of whisper's encoder graph (a MUL_MAT) moved onto the live ADD#3.
    "$bin" run --options inject=move@12 -- node "$js" "$addon" "$PWD/tiny.bin" 1 >node-inj.out \
        2>node-inj.err
    rc=$?
    err=$(cat node-inj.err)
    expect_rc 1 "node inject=move@12"
    expect_in "$err" "tlsan: inject: moved node 12 'MUL_MAT#12' (192000 bytes) in buffer 'CPU#0' from offset 384000 onto 'ADD#3' at offset 0" "node inject: the move"
    expect_count "$err" "^SUMMARY: tlsan: live-overlap 'ADD#3' and 'MUL_MAT#12' in ggml graph '[^']+' \.\. '[^']+' \(40 nodes, allocated by a ggml_backend_sched\)\$" 1 "node inject: live-overlap"
    expect_count "$err" "^SUMMARY: tlsan: live-corruption 'ADD#3' in ggml graph '[^']+' \.\. '[^']+' \(40 nodes, a ggml_backend_sched split\) \(overwritten by 'MUL_MAT#12'\)\$" 1 "node inject: live-corruption"
    expect_count "$err" "^SUMMARY" 2 "node inject: exactly the two findings"
    if [ "$(cat node-inj.out)" != "$(sed -n 1p node.native)" ]; then ok; else bad "node inject: the fault changed no transcript"; fi
else
    echo "note: no node; the whisper.cpp transcription is left out"
fi

echo "whisper: $passed passed, $failed failed"
[ "$failed" = 0 ]
