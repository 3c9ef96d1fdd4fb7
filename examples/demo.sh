#!/usr/bin/env bash
# The main job: build tlsan, then check real memory plans written by Apache TVM's planner
# (../shared/real/tvm, when present; else TVM graphs of our own, tests/tvm and
# tests/golden/tvm) and this project's example plans (examples/plans),
# then run the annotated example engine under the runtime shim, correct and with a planted
# planner bug, and replay the bug's trace; then a real ggml program (prebuilt ggml from
# npm, fetched by .ci/setup.sh) under the shim, clean and with an injected fault; showing the
# reports. Exit 0 when every result is
# the expected one.
set -uo pipefail
cd "$(dirname "$0")/.."
# The build shows its progress: one line per target built (the whole log is kept in
# build/demo-build.log, and its end is shown when the build fails).
mkdir -p build
echo "== Building tlsan (cmake, RelWithDebInfo; 31 to 35 s measured on 2 cores; log in build/demo-build.log)"
start=$SECONDS
: >build/demo-build.log
{ cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build build -j"$(nproc)"; } >build/demo-build.log 2>&1 &
build_pid=$!
# Follow the log: print each "Built target" line with its percentage as it appears.
tail -n +1 -f build/demo-build.log --pid="$build_pid" | grep --line-buffered -E '^\[ *[0-9]+%\] Built target|^-- (Configuring|Generating) done' |
  sed -u 's/^/demo:   /'
if ! wait "$build_pid"; then
  echo "demo: build failed; the end of build/demo-build.log:" >&2
  tail -n 40 build/demo-build.log >&2
  exit 2
fi
echo "demo: built in $((SECONDS - start)) s"
echo
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
  # A clone outside the team: the TVM graphs of our own (written for the importer's tests)
  # show the same path, one clean and one whose planner gave a live value's storage away.
  echo "== $tvm_dir (the team's real TVM graphs) is absent: TVM graph-executor JSON of our own"
  "$tlsan" check --from tvm tests/tvm/mlp_graph.json | tail -n 1
  [ "${PIPESTATUS[0]}" = 0 ] || bad=1
  echo
  echo "--- tests/golden/tvm/tvm-reused-storage.json: a storage id reused while its value is live"
  "$tlsan" check --from tvm tests/golden/tvm/tvm-reused-storage.json
  [ $? = 1 ] || { echo "demo: the reused storage id was not reported" >&2; bad=1; }
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
  echo "-- under tlsan: tlsan run -- engine --exec pool"
  (cd "$work" && ../tlsan run --trace clean.trace -- ../examples/engine/engine --exec pool)
  [ $? = 0 ] || { echo "demo: the correct engine run reported something" >&2; bad=1; }
  echo
  echo "== The same engine with a planner bug (--inject lifetime-short), caught while it runs"
  echo "-- under tlsan: tlsan run -- engine --inject lifetime-short"
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
  # ggml prints its own banner on standard error in both runs: each run is labelled.
  echo "-- native run (without tlsan): ggml_graphs --graph block"
  native=$("$ggml" --graph block)
  echo "-- under tlsan: tlsan run -- ggml_graphs --graph block"
  shimmed=$(cd "$work" && ../tlsan run --trace ggml-clean.trace -- ../examples/ggml/ggml_graphs --graph block)
  [ $? = 0 ] || { echo "demo: the correct ggml run reported something" >&2; bad=1; }
  if [ "$native" = "$shimmed" ]; then echo "outputs identical to the native run"; else echo "demo: outputs differ" >&2; bad=1; fi
  echo
  echo "== The same graph with an injected fault: node 12 ('kq') moved onto a live tensor"
  echo "-- under tlsan: tlsan run --options inject=move@12 -- ggml_graphs --graph block"
  (cd "$work" && ../tlsan run --trace ggml-bug.trace --options inject=move@12 -- ../examples/ggml/ggml_graphs --graph block >/dev/null)
  [ $? = 1 ] || { echo "demo: the injected ggml fault was not reported" >&2; bad=1; }
elif [ ! -d .deps/ggml ]; then
  echo
  echo "== .deps/ggml is absent (.ci/fetch-ggml.sh could not fetch it): skipping the ggml program"
fi
echo
if [ "$bad" = 0 ]; then echo "demo: every result was the expected one"; else echo "demo: UNEXPECTED RESULTS above"; fi
exit "$bad"
