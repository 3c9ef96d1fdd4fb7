#!/usr/bin/env bash
# The whole report, byte for byte: text and JSON for the project's example plans, and text,
# JSON and SARIF for the plans in tests/golden/plans, which exercise the explanations (input,
# output and loop-extension steps, every unordered access, findings grouped under a cause,
# SARIF regions and related locations), and text and SARIF for the TVM graphs in
# tests/golden/tvm (checked with --from tvm: regions at the node's object). The SARIF
# driver's version is blanked, so that a version bump does not change the files.
# Refresh after an intended change with: UPDATE_GOLDEN=1 bash tests/cli/golden.sh build/tlsan - .
set -u
tlsan=$1 src=$3
pass=0 fail=0
compare() { # NAME FORMAT PLAN (relative to the source tree) [INPUT KIND for --from]
  local name=$1 fmt=$2 plan=$3 from=${4:-plan} want="$src/tests/golden/$1.$2" got
  # the file name as given is part of the report: run from the source tree
  if [ "$fmt" = sarif ]; then
    got=$(cd "$src" && "$tlsan" check --from "$from" --format sarif "$plan" | sed 's/"version":"[0-9.]*","rules"/"version":"V","rules"/'; echo "exit ${PIPESTATUS[0]}")
  else
    got=$(cd "$src" && "$tlsan" check --from "$from" --format "$fmt" "$plan"; echo "exit $?")
  fi
  if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
    printf '%s\n' "$got" > "$want"
    return
  fi
  if [ "$got" = "$(cat "$want" 2>/dev/null)" ]; then
    pass=$((pass + 1))
  else
    fail=$((fail + 1))
    echo "FAIL: $name ($fmt) differs from tests/golden/$name.$fmt:"
    diff <(printf '%s\n' "$got") "$want" | head -20
  fi
}
for plan in "$src"/examples/plans/*.json; do
  name=$(basename "$plan" .json)
  for fmt in text json; do compare "$name" "$fmt" "examples/plans/$name.json"; done
done
compare buggy-residual-reuse sarif examples/plans/buggy-residual-reuse.json
for plan in "$src"/tests/golden/plans/*.json; do
  name=$(basename "$plan" .json)
  for fmt in text json sarif; do compare "$name" "$fmt" "tests/golden/plans/$name.json"; done
done
for graph in "$src"/tests/golden/tvm/*.json; do
  name=$(basename "$graph" .json)
  for fmt in text sarif; do compare "$name" "$fmt" "tests/golden/tvm/$name.json" tvm; done
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
