#!/usr/bin/env bash
# The main job: build tlsan, then check real memory plans written by Apache TVM's planner
# (../shared/real/tvm, when present) and this project's example plans (examples/plans),
# then run the annotated example engine under the runtime shim, correct and with a planted
# planner bug, and replay the bug's trace; then a real ggml program (prebuilt ggml from
# npm, fetched by .ci/setup.sh) under the shim, clean and with an injected fault; showing the
# reports. Exit 0 when every result is
# the expected one.
set -uo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build build -j"$(nproc)" >/dev/null ||
  { echo "demo: build failed" >&2; exit 2; }
tlsan=build/tlsan
bad=0

tvm_dir=../shared/real/tvm
if [ -d "$tvm_dir" ]; then
  echo "== Real TVM graph-executor plans ($tvm_dir): each storage id is one slot of an arena"
  for g in "$tvm_dir"/*.json; do
    "$tlsan" check --from tvm "$g" | tail -n 1
    [ "${PIPESTATUS[0]}" = 0 ] || bad=1
  done
  g=$tvm_dir/nonn__nonn_x86_wrn_fc.json
  echo
  echo "== The same planner output, converted to the plan format (tlsan import tvm)"
  "$tlsan" import tvm "$g" -o build/demo-tvm-plan.json && echo "wrote build/demo-tvm-plan.json" || bad=1
  "$tlsan" check build/demo-tvm-plan.json | tail -n 1
else
  echo "== $tvm_dir is absent (a clone outside the team): skipping the real TVM plans"
fi

echo
echo "== Example plans (examples/plans): realistic plans, one with a planner bug"
for p in examples/plans/*.json; do
  echo
  echo "--- $p"
  "$tlsan" check "$p"
  rc=$?
  want=0
  case "$(basename "$p")" in *bug*) want=1 ;; esac
  if [ "$rc" != "$want" ]; then echo "demo: $p exited $rc, expected $want" >&2; bad=1; fi
done
engine=build/examples/engine/engine
if [ -x "$engine" ] && [ -f build/libtlsan.so ]; then
  work=build/demo-run
  mkdir -p "$work"
  echo
  echo "== The runtime shim on the example engine (examples/engine): a correct run is silent"
  (cd "$work" && ../tlsan run --trace clean.trace -- ../examples/engine/engine --exec pool)
  [ $? = 0 ] || { echo "demo: the correct engine run reported something" >&2; bad=1; }
  echo
  echo "== The same engine with a planner bug (--inject lifetime-short), caught while it runs"
  (cd "$work" && ../tlsan run --trace bug.trace -- ../examples/engine/engine --inject lifetime-short)
  [ $? = 1 ] || { echo "demo: the planted bug was not reported" >&2; bad=1; }
  echo
  echo "== tlsan replay: the recorded run rebuilt as a plan and checked, with stacks from the binary"
  "$tlsan" replay "$work/bug.trace"
  [ $? = 1 ] || { echo "demo: replay did not find the bug" >&2; bad=1; }
fi
ggml=build/examples/ggml/ggml_graphs
if [ -x "$ggml" ] && [ -f build/libtlsan.so ]; then
  work=build/demo-run
  mkdir -p "$work"
  echo
  echo "== A real ggml program (prebuilt ggml 0.23.0 from npm): a transformer block allocated by"
  echo "   ggml_gallocr, computed under the shim: the graph is checked as a plan, node by node"
  echo "   with checksums, and the outputs match the native run"
  native=$("$ggml" --graph block)
  shimmed=$(cd "$work" && ../tlsan run --trace ggml-clean.trace -- ../examples/ggml/ggml_graphs --graph block)
  [ $? = 0 ] || { echo "demo: the correct ggml run reported something" >&2; bad=1; }
  if [ "$native" = "$shimmed" ]; then echo "outputs identical to the native run"; else echo "demo: outputs differ" >&2; bad=1; fi
  echo
  echo "== The same graph with an injected fault: node 12 ('kq') moved onto a live tensor"
  (cd "$work" && ../tlsan run --trace ggml-bug.trace --options inject=move@12 -- ../examples/ggml/ggml_graphs --graph block >/dev/null)
  [ $? = 1 ] || { echo "demo: the injected ggml fault was not reported" >&2; bad=1; }
elif [ ! -d .deps/ggml ]; then
  echo
  echo "== .deps/ggml is absent (.ci/fetch-ggml.sh could not fetch it): skipping the ggml program"
fi
echo
if [ "$bad" = 0 ]; then echo "demo: every result was the expected one"; else echo "demo: UNEXPECTED RESULTS above"; fi
exit "$bad"
