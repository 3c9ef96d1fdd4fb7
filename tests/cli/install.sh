#!/usr/bin/env bash
# The install rules work for an engine: install to a temporary prefix, build the API example
# against it with find_package(tlsan) and with pkg-config, run both, compare exact output.
set -u
tlsan=$1 src=$3
build=$(dirname "$tlsan")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { if [ "$2" = "$3" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL: $1"; echo " got: $2"; echo "want: $3"; fi; }

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null || { echo "install failed"; exit 1; }
want="live-overlap: h g steps 1..2 bytes [4096, 8192)"
cmake -S "$src/examples/api" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null &&
  cmake --build "$tmp/cm" >/dev/null || { echo "find_package consumer failed to build"; exit 1; }
out=$(LD_LIBRARY_PATH="$tmp/prefix/lib" "$tmp/cm/check_in_memory"); rc=$?
check "find_package consumer output" "$out" "$want"
check "find_package consumer exit" "$rc" 1

pcdir=$(dirname "$(find "$tmp/prefix" -name tlsan.pc | head -n 1)")
cflags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags tlsan) || { echo "pkg-config failed"; exit 1; }
libs=$(PKG_CONFIG_PATH="$pcdir" pkg-config --libs tlsan) || { echo "pkg-config failed"; exit 1; }
# Private dependencies stay private: nothing of yajl in what a consumer compiles or links with.
case "$cflags $libs" in *yajl*) check "pkg-config flags name no yajl" "$cflags $libs" "(no yajl)" ;; *) pass=$((pass+1)) ;; esac
check "pkg-config --cflags is the include folder only" "$(printf '%s\n' $cflags | grep -c '^-I')" 1
case "$(PKG_CONFIG_PATH="$pcdir" pkg-config --static --libs tlsan)" in
  *-lyajl*) pass=$((pass+1)) ;; *) check "pkg-config --static names yajl" "no -lyajl" "-lyajl" ;; esac
# shellcheck disable=SC2086
cc -std=c11 -Wall -Wextra -Werror "$src/examples/api/check_in_memory.c" $cflags $libs -o "$tmp/pc" ||
  { echo "pkg-config consumer failed to build"; exit 1; }
# Run it as a user of a private prefix would: no LD_LIBRARY_PATH, no ldconfig (the .pc's
# run path finds the library).
out=$(env -u LD_LIBRARY_PATH "$tmp/pc"); rc=$?
check "pkg-config consumer output (no LD_LIBRARY_PATH)" "$out" "$want"
check "pkg-config consumer exit" "$rc" 1
# The run path is the library folder itself, written plainly: it still resolves when
# lib/pkgconfig is gone (a packager removing development files).
check "pkg-config run path" "$(printf '%s\n' $libs | grep '^-Wl,-rpath,')" "-Wl,-rpath,$(cd "$tmp/prefix" && pwd)/lib"
rm -r "$pcdir"
out=$(env -u LD_LIBRARY_PATH "$tmp/pc"); rc=$?
check "pkg-config consumer without lib/pkgconfig" "$out" "$want"
check "installed tlsan --version" "$("$tmp/prefix/bin/tlsan" --version | head -n 1 | cut -d' ' -f1)" tlsan
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
