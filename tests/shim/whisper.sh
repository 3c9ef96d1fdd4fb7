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
#  4. Node itself loads the addon under the shim (require), with the same output.
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
        expect_count "$err" "tlsan: ggml: checked ggml graph 0x[0-9a-f]+ \($nodes nodes\): $tensors tensors in 2 buffers, 0 findings; seen at its $seen\$" 1 "$graph $path: one clean check"
        expect_count "$err" "ERROR: tlsan|cannot find the real|accessors are missing|not laid out" 0 "$graph $path: no report, no failure"
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
    expect_count "$err" "^SUMMARY: tlsan: live-overlap 'v \(transposed\)' and 'kq' in ggml graph 0x[0-9a-f]+ \(27 nodes\)\$" 1 "block $path: live-overlap"
    expect_count "$err" "^SUMMARY: tlsan: live-corruption 'v \(transposed\)' in ggml graph 0x[0-9a-f]+ \(27 nodes(, a ggml_backend_sched split)?\) \(overwritten by 'kq'\)\$" 1 "block $path: live-corruption"
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

# ---- 4. Node ----
if command -v node >/dev/null 2>&1; then
    cat >load.js <<'EOF'
const addon = require(process.argv[2]);
console.log(Object.keys(addon).sort().join(" "));
EOF
    node load.js "$addon" >node.native 2>&1
    "$bin" run -- node load.js "$addon" >node.out 2>node.err
    rc=$?
    expect_rc 0 "node require(index.node) under tlsan"
    expect_in "$(cat node.native)" "WhisperContext" "node: the addon's exports"
    if cmp -s node.native node.out; then ok; else bad "node: stdout differs: $(cat node.out)"; fi
else
    echo "note: no node; the Node part is left out"
fi

echo "whisper: $passed passed, $failed failed"
[ "$failed" = 0 ]
