#!/usr/bin/env bash
# Builds tlsan and runs every test: the normal build, then the checker's suite again under
# AddressSanitizer + UBSan, then the formatting check.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

# ctest only says "Skipped"; show what each test said about what it skipped and why.
show_skips() {
  local log=$1/Testing/Temporary/LastTest.log
  [ -f "$log" ] || return 0
  grep -h -E 'is absent|^SKIP:|: skipped:' "$log" | sort -u | sed 's/^/  skipped: /' || true
}

echo "== build (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
echo "== tests"
(cd build && ctest --output-on-failure -j"$jobs")
show_skips build

echo "== build (AddressSanitizer + UBSan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTLSAN_SANITIZE=ON -DTLSAN_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"$jobs"
echo "== tests under AddressSanitizer + UBSan"
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --output-on-failure -j"$jobs" -E '^cli_install$')
show_skips build-asan

echo "== formatting (clang-format)"
files=$(git ls-files 'src/*.c' 'src/*.h' 'include/*.h' 'shim/*.c' 'shim/*.h' 'tests/*.c' 'tests/*.h' 'bench/*.c' 'examples/*.c' 'examples/*.h' 2>/dev/null || true)
if [ -n "$files" ]; then
  clang-format --dry-run --Werror $files
fi
echo "== all tests passed"
