#!/usr/bin/env bash
# Real ggml programs under the shim (examples/ggml, the prebuilt ggml of .ci/fetch-ggml.sh).
#  1. ABI guard: ggml_abi passes against the fetched library (version 0.23.0, tensor layout,
#     enum values, ggml_nbytes of the shapes built, graph accessors, gallocr placement), and
#     the MLP's outputs agree with a plain-Python reference (ggml_mlp_ref.py).
#  2. Clean runs: each example graph (mlp, block, multi; block through ggml_backend_sched too)
#     prints the same bytes natively and under `tlsan run`, with no finding; computed three
#     times, the graph is checked once (the cache); the plan the adapter derived
#     (ggml_plan_path) checks clean with `tlsan check` and really reuses memory: roots share
#     bytes and ggml_gallocr's in-place reuses are declared. ggml loaded with dlopen(RTLD_LOCAL)
#     (as a plug-in) is checked too.
#     Computed node by node for checksums (shared, all) or whole (off), the outputs are the
#     same bytes.
#  3. Injected faults (inject=move@NODE[@VICTIM]) are reported as live-overlap naming the two
#     ggml tensors, through ggml_backend_graph_compute and through the scheduler, and as
#     live-corruption by the per-node checksums (not with checksum=off); a move onto
#     bytes that are free at the time is not reported and changes no output; a malformed
#     value is refused with a message. The trace records each graph as a plan, so `tlsan
#     replay` finds the injected fault again offline, and nothing in a clean run.
#  4. A program without ggml calling the shim's hooks (prog_ggml_absent): each call fails as
#     ggml reports failure, with one line; the program runs on.
#  5. Host access (ggml_host_access): a host that reads each graph's outputs right after its
#     compute is clean, its output the same bytes; a kept view read with
#     ggml_backend_tensor_get, or an input written with ggml_backend_tensor_set, after the same
#     gallocr allocated the next graph over it is use-after-release naming both ggml tensors,
#     both graphs and the host call's line (the output as native); after the gallocr grew
#     (freed) its buffer, the read is reported and skipped; a view the host made after the
#     compute is found through its view_src; `tlsan replay` shows the finding.
# Usage: ggml.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR
set -u -o pipefail
bin=${1:?usage: ggml.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR}
src=${3:?usage: ggml.sh TLSAN_BINARY SHARED_DIR SOURCE_DIR PROG_DIR}
build=$(cd "$(dirname "$bin")" && pwd)
bin=$build/$(basename "$bin") # absolute: the runs start in a scratch directory
graphs=$build/examples/ggml/ggml_graphs
abi=$build/examples/ggml/ggml_abi
export LC_ALL=C
if [ ! -d "$src/.deps/ggml" ]; then
    echo "SKIP: no prebuilt ggml in $src/.deps/ggml (run .ci/fetch-ggml.sh, then cmake again)"
    exit 77
fi
if [ ! -x "$graphs" ] || [ ! -x "$abi" ]; then
    echo "SKIP: no $graphs (TLSAN_BUILD_EXAMPLES off, or cmake ran before .ci/fetch-ggml.sh)"
    exit 77
fi
if [ ! -f "$build/libtlsan.so" ]; then
    echo "SKIP: no $build/libtlsan.so"
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP: python3 is needed to read the plans"
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

# ---- 1. ABI ----
if out=$("$abi" 0.23.0 2>&1); then
    pass
else
    fail "ggml_abi: the headers and the library disagree:"$'\n'"$(printf '%s\n' "$out" | grep -v '^ok')"
fi

# The numbers themselves: the MLP against a plain-Python reference of the same weights.
if "$graphs" --graph mlp --runs 1 >"$tmp/mlp.out" 2>/dev/null &&
    out=$(python3 "$src/tests/shim/ggml_mlp_ref.py" "$tmp/mlp.out" 2>&1); then
    pass
else
    fail "mlp: ggml's outputs differ from the Python reference: $out"
fi

# ---- 2. clean runs ----
clean() { # WHAT ARGS...
    local what=$1
    shift
    if ! "$graphs" "$@" --runs 3 >"$tmp/native.out" 2>"$tmp/native.err"; then
        fail "$what natively: $(cat "$tmp/native.err")"
        return
    fi
    rm -f "$tmp"/plan.*
    "$bin" run --options verbosity=1:ggml_plan_path="$tmp/plan" -- "$graphs" "$@" --runs 3 \
        >"$tmp/shim.out" 2>"$tmp/shim.err"
    local rc=$?
    if [ "$rc" != 0 ] || grep -Eq "(ERROR|WARNING): tlsan" "$tmp/shim.err"; then
        fail "$what under tlsan: exit $rc"$'\n'"$(cat "$tmp/shim.err")"
        return
    fi
    if ! cmp -s "$tmp/native.out" "$tmp/shim.out"; then
        fail "$what: outputs differ under tlsan"
        return
    fi
    local checked
    checked=$(grep -c "tlsan: ggml: checked ggml graph" "$tmp/shim.err")
    if [ "$checked" != 1 ] || ! grep -q "checked ggml graph.*, 0 findings" "$tmp/shim.err"; then
        fail "$what: expected one check of the graph with no finding, got $checked:"$'\n'"$(cat "$tmp/shim.err")"
        return
    fi
    local plan
    plan=$(ls "$tmp"/plan.*.json 2>/dev/null | head -n 1)
    if [ -z "$plan" ] || ! "$bin" check "$plan" >"$tmp/check.out" 2>&1; then
        fail "$what: the exported plan does not check clean: $(cat "$tmp/check.out" 2>/dev/null)"
        return
    fi
    cp "$plan" "$tmp/last-plan.json"
    pass
}
clean mlp --graph mlp
clean multi --graph multi
clean block --graph block
plan_block=$tmp/block-plan.json
cp "$tmp/last-plan.json" "$plan_block" 2>/dev/null
clean "block (sched)" --graph block --sched
clean "block (1 thread)" --graph block --threads 1

# Node by node (checksum=shared, the default, above; all) or whole (off): the same bytes.
for cs in off all; do
    for g in block multi; do
        "$bin" run --options checksum=$cs -- "$graphs" --graph $g --threads 1 >"$tmp/cs.out" \
            2>"$tmp/cs.err"
        rc=$?
        "$graphs" --graph $g --threads 1 >"$tmp/cs-native.out" 2>/dev/null
        if [ "$rc" = 0 ] && cmp -s "$tmp/cs.out" "$tmp/cs-native.out"; then
            pass
        else
            fail "$g checksum=$cs: exit $rc or outputs differ"$'\n'"$(cat "$tmp/cs.err")"
        fi
    done
done

# The block's plan is not vacuous: ggml_gallocr reused bytes, and declared in-place reuses.
if [ -f "$plan_block" ]; then
    stats=$(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
roots = [t for t in p["tensors"] if "arena" in t]
shared = sum(1 for i, a in enumerate(roots) for b in roots[i + 1:]
             if a["arena"] == b["arena"] and a["offset"] < b["offset"] + b["bytes"]
             and b["offset"] < a["offset"] + a["bytes"])
inplace = sum(len(o.get("inplace", [])) for o in p["ops"])
views = sum(1 for t in p["tensors"] if "view_of" in t)
print(shared, inplace, views)' "$plan_block")
    read -r shared inplace views <<<"$stats"
    if [ "${shared:-0}" -ge 5 ] && [ "${inplace:-0}" -ge 1 ] && [ "${views:-0}" -ge 5 ]; then
        pass
    else
        fail "block plan: expected reuse, in-place pairs and views; got shared=$shared inplace=$inplace views=$views"
    fi
fi

# ggml loaded as a plug-in (dlopen RTLD_LOCAL): the shim finds the real functions by searching
# the loaded objects, and checks the graph libggml computes through its own PLT.
"$bin" run --options verbosity=1 -- "$build/examples/ggml/ggml_dlopen_local" \
    "$src/.deps/ggml/lib" >"$tmp/local.out" 2>"$tmp/local.err"
rc=$?
if [ "$rc" = 0 ] && grep -q "e\[0\] = 7" "$tmp/local.out" &&
    grep -q "checked ggml graph .*(3 nodes): 5 tensors in 1 buffers, 0 findings" "$tmp/local.err"; then
    pass
else
    fail "ggml_dlopen_local: exit $rc"$'\n'"$(cat "$tmp/local.out" "$tmp/local.err")"
fi

# ---- 3. injected faults ----
injected() { # EXPECTED-PAIR INJECT ARGS...: one live-overlap naming exactly that pair at least
    local want=$1 inject=$2
    shift 2
    "$bin" run --options inject="$inject" -- "$graphs" "$@" --runs 1 >"$tmp/inj.out" 2>"$tmp/inj.err"
    local rc=$?
    if [ "$rc" != 1 ]; then
        fail "inject=$inject $*: exit $rc, expected 1"$'\n'"$(cat "$tmp/inj.err")"
        return
    fi
    if ! grep -q "tlsan: inject: moved node" "$tmp/inj.err"; then
        fail "inject=$inject $*: nothing moved"$'\n'"$(cat "$tmp/inj.err")"
        return
    fi
    if ! grep -qF "SUMMARY: tlsan: live-overlap $want in ggml graph" "$tmp/inj.err"; then
        fail "inject=$inject $*: no live-overlap $want"$'\n'"$(grep -E 'inject|SUMMARY' "$tmp/inj.err")"
        return
    fi
    if ! grep -q "in main" "$tmp/inj.err"; then
        fail "inject=$inject $*: the report lacks the compute call's stack"
        return
    fi
    pass
}
injected "'fc2' and 'fc3.matmul'" move@5 --graph mlp
injected "'x' and 'fc1.matmul'" move@0 --graph mlp
injected "'fc1' and 'aux'" move@4 --graph multi
injected "'v (transposed)' and 'kq'" move@12 --graph block
injected "'v (transposed)' and 'kq'" move@12 --graph block --sched
injected "'ffn_up' and 'ffn_down'" move@25@24 --graph block

# By checksum too: computed node by node, 'v (transposed)' is found changed before node 16
# reads it, overwritten by the nodes writing 'kq'; with checksum=off only the static report.
"$bin" run --options checksum=all:inject=move@12 -- "$graphs" --graph block --runs 1 \
    >/dev/null 2>"$tmp/sum.err"
if grep -q "SUMMARY: tlsan: live-corruption 'v (transposed)' in ggml graph 'attn_rms' .. 'block_out' (27 nodes) (overwritten by 'kq')" "$tmp/sum.err" &&
    grep -q "before node 16 reads it" "$tmp/sum.err" &&
    grep -qF "SUMMARY: tlsan: live-overlap 'v (transposed)' and 'kq'" "$tmp/sum.err"; then
    pass
else
    fail "checksum=all inject=move@12: expected live-overlap and live-corruption"$'\n'"$(cat "$tmp/sum.err")"
fi
"$bin" run --options checksum=off:inject=move@12 -- "$graphs" --graph block --runs 1 \
    >/dev/null 2>"$tmp/off.err"
if grep -q "live-overlap" "$tmp/off.err" && ! grep -q "live-corruption" "$tmp/off.err"; then
    pass
else
    fail "checksum=off inject=move@12: expected live-overlap only"$'\n'"$(cat "$tmp/off.err")"
fi

# A move onto bytes nobody uses at the time (ffn_rms onto attn_rms's, dead since node 1) is
# no fault: no report, and the outputs stay what they were.
"$graphs" --graph block --runs 1 >"$tmp/native1.out" 2>/dev/null
"$bin" run --options inject=move@21@0 -- "$graphs" --graph block --runs 1 >"$tmp/free.out" \
    2>"$tmp/free.err"
rc=$?
if [ "$rc" = 0 ] && grep -q "inject: moved node 21 'ffn_rms'" "$tmp/free.err" &&
    cmp -s "$tmp/native1.out" "$tmp/free.out"; then
    pass
else
    fail "inject=move@21@0: exit $rc, expected a silent, harmless move"$'\n'"$(cat "$tmp/free.err")"
fi

# The trace holds each graph checked as a plan handed over: replay checks it again offline.
"$bin" run --trace "$tmp/inj.trace" --options inject=move@12 -- "$graphs" --graph block \
    --runs 1 >/dev/null 2>&1
"$bin" run --trace "$tmp/clean.trace" -- "$graphs" --graph block --runs 1 >/dev/null 2>&1
inj=$("$bin" replay "$tmp/inj.trace" 2>&1)
rc_inj=$?
clean=$("$bin" replay "$tmp/clean.trace" 2>&1)
rc_clean=$?
if [ "$rc_inj" = 1 ] && printf '%s\n' "$inj" | grep -qF "live-overlap between 'v (transposed)' and 'kq'" &&
    [ "$rc_clean" = 0 ] && printf '%s\n' "$clean" | grep -q "no findings in .*(plan 1 handed over)"; then
    pass
else
    fail "replay: injected exit $rc_inj, clean exit $rc_clean"$'\n'"$inj"$'\n'"$clean"
fi

"$bin" run --options inject=bogus -- "$graphs" --graph mlp --runs 1 >/dev/null 2>"$tmp/bad.err"
rc=$?
if [ "$rc" = 0 ] && grep -q "inject=bogus: expected move@NODE" "$tmp/bad.err"; then
    pass
else
    fail "inject=bogus: exit $rc"$'\n'"$(cat "$tmp/bad.err")"
fi

# No ggml at all, but ggml's names looked up in the global scope: the shim's hooks answer, and
# with no real function anywhere each call fails as ggml reports failure (false,
# GGML_STATUS_FAILED), with one line, instead of killing the program.
absent=$(dirname "$bin")/tests/shim/prog_ggml_absent
"$absent" >"$tmp/absent-native.out" 2>&1
"$bin" run -- "$absent" >"$tmp/absent.out" 2>"$tmp/absent.err"
rc=$?
if [ "$rc" = 0 ] && [ "$(cat "$tmp/absent-native.out")" = "no ggml" ] &&
    [ "$(cat "$tmp/absent.out")" = "ggml_gallocr_alloc_graph: 0
ggml_backend_sched_graph_compute: -1
ggml_graph_compute: -1" ] &&
    [ "$(grep -c "tlsan: ggml:" "$tmp/absent.err")" = 1 ] &&
    grep -q "tlsan: ggml: cannot find the real ggml_gallocr_alloc_graph in any loaded object; the call fails" "$tmp/absent.err"; then
    pass
else
    fail "prog_ggml_absent: exit $rc"$'\n'"$(cat "$tmp/absent-native.out" "$tmp/absent.out" "$tmp/absent.err")"
fi

# ---- 5. host access ----
host=$build/tests/shim/ggml_host_access
host_src=$src/tests/shim/ggml_host_access.c
# The lines of the host calls the reports must name, read from the source.
get_line=$(grep -n 'ggml_backend_tensor_get(t, host' "$host_src" | cut -d: -f1)
set_line=$(grep -n 'the stale write' "$host_src" | cut -d: -f1)
read_line=$(grep -n 'the stale read' "$host_src" | head -n 1 | cut -d: -f1)
view_line=$(grep -n 'the stale read through a later view' "$host_src" | cut -d: -f1)
host_run() { # MODE: native and shim runs; sets rc_native, rc_shim
    "$host" "$src/.deps/ggml/lib" "$1" >"$tmp/host-native.out" 2>/dev/null
    rc_native=$?
    "$bin" run --trace "$tmp/host.trace" -- "$host" "$src/.deps/ggml/lib" "$1" \
        >"$tmp/host.out" 2>"$tmp/host.err"
    rc_shim=$?
}
# frame_at TITLE N: frame #N of the stack under "TITLE:" in the shim's report.
frame_at() {
    grep -F -A8 -- "$1:" "$tmp/host.err" | grep -m1 "^    #$2 "
}
host_run clean
if [ "$rc_native" = 0 ] && [ "$rc_shim" = 0 ] && cmp -s "$tmp/host-native.out" "$tmp/host.out" &&
    [ "$(wc -l <"$tmp/host.out")" = 8 ] && ! grep -q "tlsan: use-after-release" "$tmp/host.err"; then
    pass
else
    fail "ggml_host_access clean: exit $rc_native natively, $rc_shim under tlsan"$'\n'"$(cat "$tmp/host.err")"
fi

host_run stale-get
graph_a="ggml graph 'a_scaled' .. 'a_out (kept)' (3 nodes)"
graph_b="ggml graph 'b_scaled' .. 'b_out (kept)' (3 nodes)"
if [ "$rc_native" = 0 ] && [ "$rc_shim" = 1 ] && cmp -s "$tmp/host-native.out" "$tmp/host.out" &&
    [ "$(grep -c "ERROR: tlsan:" "$tmp/host.err")" = 1 ] &&
    grep -qF "ERROR: tlsan: use-after-release on ggml tensor 'a_out (kept)' (ggml_backend_tensor_get)" "$tmp/host.err" &&
    grep -qxF "  ggml_backend_tensor_get read bytes [256, 272) of its buffer through 'a_out (kept)' (node 2 (VIEW) of $graph_a)" "$tmp/host.err" &&
    grep -qxF "  its ggml_gallocr has allocated $graph_b since, which gave those bytes to:" "$tmp/host.err" &&
    grep -qxF "    'b_scaled' (node 0 (SCALE)), bytes [256, 512)" "$tmp/host.err" &&
    grep -qxF "    'b_out' (node 1 (ADD)), bytes [256, 512)" "$tmp/host.err" &&
    grep -qxF "SUMMARY: tlsan: use-after-release a_out (kept) (read by ggml_backend_tensor_get after its ggml_gallocr gave its bytes to 'b_scaled' in $graph_b)" "$tmp/host.err" &&
    frame_at "read by ggml_backend_tensor_get at" 0 | grep -q " in print_first+0x[0-9a-f]* at .*/ggml_host_access.c:$get_line " &&
    frame_at "read by ggml_backend_tensor_get at" 1 | grep -q " in main+0x[0-9a-f]* at .*/ggml_host_access.c:$read_line " &&
    frame_at "$graph_b allocated at" 1 | grep -q " in main+" &&
    frame_at "'a_out (kept)' placed by the allocation of $graph_a at" 1 | grep -q " in main+"; then
    pass
else
    fail "ggml_host_access stale-get: exit $rc_native natively, $rc_shim under tlsan (want 0, 1, the report of lines $get_line/$read_line)"$'\n'"$(cat "$tmp/host.err")"
fi
# Recorded in the trace: replay shows it.
replayed=$("$bin" replay "$tmp/host.trace" 2>&1)
if printf '%s\n' "$replayed" | grep -qF "SUMMARY: tlsan: 1 finding (use-after-release x1 at run time)"; then
    pass
else
    fail "ggml_host_access stale-get: replay does not show the finding"$'\n'"$replayed"
fi

host_run stale-set
if [ "$rc_native" = 0 ] && [ "$rc_shim" = 1 ] && cmp -s "$tmp/host-native.out" "$tmp/host.out" &&
    grep -qF "ERROR: tlsan: use-after-release on ggml tensor 'a_in' (ggml_backend_tensor_set)" "$tmp/host.err" &&
    grep -qxF "  ggml_backend_tensor_set wrote bytes [0, 256) of its buffer through 'a_in' (a leaf of $graph_a)" "$tmp/host.err" &&
    grep -qxF "    'b_in' (a leaf), bytes [0, 256)" "$tmp/host.err" &&
    grep -qxF "SUMMARY: tlsan: use-after-release a_in (written by ggml_backend_tensor_set after its ggml_gallocr gave its bytes to 'b_in' in $graph_b)" "$tmp/host.err" &&
    frame_at "written by ggml_backend_tensor_set at" 0 | grep -q " in main+0x[0-9a-f]* at .*/ggml_host_access.c:$set_line "; then
    pass
else
    fail "ggml_host_access stale-set: exit $rc_native natively, $rc_shim under tlsan (want 0, 1, line $set_line)"$'\n'"$(cat "$tmp/host.err")"
fi

# A view of a_out the host made after A's compute, in no graph: found through its view_src.
host_run stale-view
if [ "$rc_native" = 0 ] && [ "$rc_shim" = 1 ] && cmp -s "$tmp/host-native.out" "$tmp/host.out" &&
    grep -qF "ERROR: tlsan: use-after-release on ggml tensor 'a_out (late view)' (ggml_backend_tensor_get)" "$tmp/host.err" &&
    grep -qxF "  ggml_backend_tensor_get read bytes [256, 272) of its buffer through 'a_out (late view)' (a view of 'a_out', node 1 (ADD) of $graph_a)" "$tmp/host.err" &&
    grep -qxF "SUMMARY: tlsan: use-after-release a_out (late view) (read by ggml_backend_tensor_get after its ggml_gallocr gave its bytes to 'b_scaled' in $graph_b)" "$tmp/host.err" &&
    frame_at "read by ggml_backend_tensor_get at" 1 | grep -q " in main+0x[0-9a-f]* at .*/ggml_host_access.c:$view_line "; then
    pass
else
    fail "ggml_host_access stale-view: exit $rc_native natively, $rc_shim under tlsan (want 0, 1, line $view_line)"$'\n'"$(cat "$tmp/host.err")"
fi

# The gallocr grew its buffer for graph B: the kept view's buffer is freed. The read is
# reported and skipped (zeros), where natively ggml reads through the freed buffer.
host_run stale-grow
if [ "$rc_native" = 0 ] && [ "$rc_shim" = 1 ] &&
    [ "$(grep -c ' = 0$' "$tmp/host.out")" = 4 ] &&
    grep -qxF "  its ggml_gallocr has allocated $graph_b since, and its buffer was freed: the call is skipped" "$tmp/host.err" &&
    grep -qxF "SUMMARY: tlsan: use-after-release a_out (kept) (read by ggml_backend_tensor_get after its ggml_gallocr freed its buffer)" "$tmp/host.err" &&
    grep -F -A8 -- "buffer freed at:" "$tmp/host.err" | grep -q " in graph_run+" &&
    frame_at "read by ggml_backend_tensor_get at" 0 | grep -q "ggml_host_access.c:$get_line "; then
    pass
else
    fail "ggml_host_access stale-grow: exit $rc_native natively, $rc_shim under tlsan"$'\n'"$(cat "$tmp/host.out" "$tmp/host.err")"
fi

echo "ggml: $passed passed, $failed failed"
[ "$failed" = 0 ]
