#!/usr/bin/env bash
# The whole report, byte for byte, for the project's own example plans: text and JSON.
# Refresh after an intended change with: UPDATE_GOLDEN=1 bash tests/cli/golden.sh build/tlsan - .
set -u
tlsan=$1 src=$3
pass=0 fail=0
for plan in "$src"/examples/plans/*.json; do
  name=$(basename "$plan" .json)
  for fmt in text json; do
    want="$src/tests/golden/$name.$fmt"
    # the file name as given is part of the report: run from the source tree
    got=$(cd "$src" && "$tlsan" check --format "$fmt" "examples/plans/$name.json"; echo "exit $?")
    if [ "${UPDATE_GOLDEN:-0}" = 1 ]; then
      printf '%s\n' "$got" > "$want"
      continue
    fi
    if [ "$got" = "$(cat "$want" 2>/dev/null)" ]; then
      pass=$((pass + 1))
    else
      fail=$((fail + 1))
      echo "FAIL: $name ($fmt) differs from tests/golden/$name.$fmt:"
      diff <(printf '%s\n' "$got") "$want" | head -20
    fi
  done
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
