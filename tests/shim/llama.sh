#!/usr/bin/env bash
# A real llama.cpp decode under the shim (examples/llama on the prebuilt libllama of
# .ci/fetch-ggml.sh): a tiny random-weight llama model written with ggml's gguf API, a prompt
# and 8 greedy tokens.
#  1. The model file is the same bytes every time; the decode is deterministic natively.
#  2. Under `tlsan run` (checksum=shared: node by node; and checksum=off) the decode prints the
#     same tokens and bit-identical logits, with no finding; the graphs llama.cpp computes
#     through ggml_backend_sched are checked where the scheduler allocates them (the prompt's
#     and the one-token graph, which llama.cpp reuses for every later token: checked once).
#  3. Injected faults in a real llama.cpp graph: node 28 ('ffn_up-0') moved onto the live
#     'ffn_inp-0' (the residual stream of block 0) is reported as live-overlap naming both, and
#     with checksum=all also as live-corruption of 'ffn_inp-0'; the decoded tokens change.
# Usage: llama.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
bin=${1:?usage: llama.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR}
src=${3:?usage: llama.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR}
build=$(cd "$(dirname "$bin")" && pwd)
bin=$build/$(basename "$bin")
gen=$build/examples/llama/tiny_gguf
decode=$build/examples/llama/llama_decode_tiny
export LC_ALL=C
if [ ! -d "$src/.deps/ggml" ]; then
    echo "SKIP: no prebuilt llama.cpp in $src/.deps/ggml (run .ci/fetch-ggml.sh, then cmake again)"
    exit 77
fi
if [ ! -x "$gen" ] || [ ! -x "$decode" ]; then
    echo "SKIP: no $decode (TLSAN_BUILD_EXAMPLES off, or cmake ran before .ci/fetch-ggml.sh)"
    exit 77
fi
if [ ! -f "$build/libtlsan.so" ]; then
    echo "SKIP: no $build/libtlsan.so"
    exit 77
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
failed=0
passed=0
fail() {
    echo "FAIL $*"
    failed=$((failed + 1))
}
pass() {
    passed=$((passed + 1))
}

# ---- 1. the model and the native decode ----
if ! "$gen" a.gguf || ! "$gen" b.gguf || ! cmp -s a.gguf b.gguf; then
    fail "tiny_gguf: no model, or not the same bytes twice"
    echo "llama: $passed passed, $failed failed"
    exit 1
fi
"$decode" a.gguf >native.out 2>native.err
rc=$?
if [ "$rc" = 3 ]; then
    echo "SKIP: libllama's parameter structs are not the ones the driver assumes: $(cat native.err)"
    exit 77
fi
"$decode" a.gguf >native2.out 2>/dev/null
if [ "$rc" = 0 ] && [ "$(grep -c '^step ' native.out)" = 8 ] && cmp -s native.out native2.out; then
    pass
else
    fail "native decode: exit $rc, or not deterministic"$'\n'"$(cat native.err)"
fi

# ---- 2. clean under the shim ----
for cs in shared off; do
    "$bin" run --options verbosity=1:checksum=$cs -- "$decode" a.gguf >shim.out 2>shim.err
    rc=$?
    checked=$(grep -c "tlsan: ggml: checked ggml graph .*(68 nodes, allocated by a ggml_backend_sched): .*, 0 findings" shim.err)
    if [ "$rc" = 0 ] && cmp -s native.out shim.out && ! grep -Eq "(ERROR|WARNING): tlsan" shim.err &&
        [ "$checked" = 2 ]; then
        pass
    else
        fail "checksum=$cs: exit $rc, $checked graphs checked, outputs $(cmp -s native.out shim.out && echo same || echo differ)"$'\n'"$(grep tlsan shim.err)"
    fi
done

# ---- 3. injected ----
"$bin" run --options inject=move@28:checksum=all -- "$decode" a.gguf >inj.out 2>inj.err
rc=$?
if [ "$rc" = 1 ] && grep -q "inject: moved node 28 'ffn_up-0'.* onto 'ffn_inp-0'" inj.err &&
    grep -qF "SUMMARY: tlsan: live-overlap 'ffn_inp-0' and 'ffn_up-0' in ggml graph" inj.err &&
    grep -q "SUMMARY: tlsan: live-corruption 'ffn_inp-0' in ggml graph '[^']*' \.\. '[^']*' (68 nodes, a ggml_backend_sched split) (overwritten by 'ffn_up-0')" inj.err &&
    ! cmp -s native.out inj.out; then
    pass
else
    fail "inject=move@28: exit $rc"$'\n'"$(grep -E 'inject|SUMMARY' inj.err)"
fi

echo "llama: $passed passed, $failed failed"
[ "$failed" = 0 ]
