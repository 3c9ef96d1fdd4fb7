#!/usr/bin/env bash
# Builds tlsan and runs every test: the normal build, then the suite again under
# AddressSanitizer + UBSan (the checker, the CLI and the shim's unit tests), then the shim's
# unit tests under ThreadSanitizer, then the formatting check. libtlsan.so and the scripts that
# preload it run in the normal build only: an LD_PRELOAD interposer of malloc cannot run
# under ASan or TSan, whose runtimes replace malloc themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
# The last line says how it ended, so a failure is not buried under the skip notes.
trap 'rc=$?; [ "$rc" = 0 ] || echo "== FAILED (exit status $rc): see the first FAIL or error above"' EXIT
jobs=$(nproc 2>/dev/null || echo 2)

# test_nomem brings its own fault-injecting allocator, which AddressSanitizer's replaces: it
# skips in that build and runs in the normal one. cli_options, cli_log_path and
# cli_run_native run programs under libtlsan.so, which the sanitizer build does not have:
# they skip there too.
# Tests that may skip: they need the prebuilt ggml and llama.cpp that .ci/fetch-ggml.sh
# fetches from the npm registry into .deps/ggml (and whisper.node into .deps/whisper), so a
# machine without network access has none. Any other skipped test fails this script: a plain clone tests itself.
network_tests="shim_ggml shim_llama shim_test_ggml_model shim_whisper"

# ctest only says "Skipped"; show what each test said about what it skipped and why, and
# which additional checks against the team's shared corpus did not run (it is absent in a
# plain clone).
show_skips() {
  local log=$1/Testing/Temporary/LastTest.log
  [ -f "$log" ] || return 0
  grep -h -E 'is absent|^SKIP:|: skipped:' "$log" | sort -u | sed 's/^/  skipped: /' || true
  grep -h -E '^note: no ' "$log" | sort -u | sed 's/^note: /  not run: /' || true
}

# run_ctest DIR ALSO [ARGS...]: ctest in DIR; fails when a test outside $network_tests and
# the space-separated list ALSO (tests that skip in that build by design) skipped.
run_ctest() {
  local dir=$1 also=$2 out status=0
  shift 2
  out=$(mktemp)
  (cd "$dir" && ctest --output-on-failure -j"$jobs" "$@") | tee "$out" || status=1
  show_skips "$dir"
  local t bad=""
  for t in $(sed -n 's/^.*Test *#[0-9]*: \([^ ]*\) .*\*\*\*Skipped.*$/\1/p' "$out"); do
    case " $network_tests " in
      *" $t "*) echo "  skipped (needs the network for .deps/ggml): $t" ;;
      *)
        case " $also " in
          *" $t "*) echo "  skipped (by design in this build, run in the normal one): $t" ;;
          *) bad="$bad $t" ;;
        esac ;;
    esac
  done
  rm -f "$out"
  if [ -n "$bad" ]; then
    echo "error: skipped, though they need no network:$bad (see the skip reasons above)"
    status=1
  fi
  return $status
}

echo "== build (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
echo "== tests"
run_ctest build ""

echo "== build (AddressSanitizer + UBSan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTLSAN_SANITIZE=ON -DTLSAN_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
echo "== tests under AddressSanitizer + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  run_ctest build-asan "test_nomem cli_options cli_log_path cli_run_native" -E '^cli_install$'

# Only the shim's unit tests (and what they link) are built: they are the threaded code.
# With clang: gcc 12's libtsan crashes at thread exit when libunwind's per-thread cache
# destructor (which takes a mutex) runs after TSan has finished the thread; clang's runtime
# does not.
echo "== build (ThreadSanitizer: the shim's unit tests)"
CC=clang CXX=clang++ cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DTLSAN_TSAN=ON \
  -DTLSAN_BUILD_BENCH=OFF -DTLSAN_BUILD_EXAMPLES=OFF >/dev/null
cmake --build build-tsan -j"$jobs" --target shim_unit_tests
echo "== the shim's unit tests under ThreadSanitizer"
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 run_ctest build-tsan "" -R '^shim_test_'

# A Release build only compiles: gcc's -O3 flow analysis warns where -O2 does not (a user's
# `cmake -DCMAKE_BUILD_TYPE=Release` failed on four such warnings, as errors, before 2026-12-04).
echo "== build (Release: -O3 warnings are errors too)"
cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j"$jobs"

echo "== formatting (clang-format)"
files=$(git ls-files 'src/*.c' 'src/*.h' 'include/*.h' 'shim/*.c' 'shim/*.h' 'tests/*.c' 'tests/*.h' 'bench/*.c' 'examples/*.c' 'examples/*.h' 2>/dev/null || true)
if [ -n "$files" ]; then
  clang-format --dry-run --Werror $files
fi
echo "== all tests passed"
