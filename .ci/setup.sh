#!/usr/bin/env bash
# Installs what tlsan needs to build and test on Debian 12 (run as root, or with sudo).
# Idempotent: packages already present are not reinstalled. Shows its progress: each step,
# and apt's download and install progress as one line per tenth (from apt's status stream,
# APT::Status-Fd), so that a 6-minute installation is never silent.
set -euo pipefail
packages=(
  build-essential cmake pkg-config clang-format   # toolchain, formatting check
  clang libclang-rt-14-dev                        # ThreadSanitizer tier (.ci/test.sh), fuzzing
  libyajl-dev libcmocka-dev libxxhash-dev libunwind-dev libdw-dev valgrind  # the project's libraries
  libflatbuffers-dev flatbuffers-compiler         # ExecuTorch programs: flatc writes the reader
  jq python3 time                                 # test scripts and benchmarks
  chromium                                        # headless, to test tlsan view's page
  # real programs the shim is tested on (tests/shim/real.sh): CPython's own test suite,
  # git, sqlite3, xz, zstd, perl
  libpython3.11-testsuite git sqlite3 xz-utils zstd perl
)
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"

# apt_progress: reads apt's status lines ("dlstatus:N:PERCENT:WHAT", "pmstatus:PKG:PERCENT:
# WHAT") and prints "setup:   downloading  40% ..." once per phase and tenth.
apt_progress() {
  awk -F: '
    $1 == "dlstatus" || $1 == "pmstatus" {
      phase = $1 == "dlstatus" ? "downloading" : "installing"
      tenth = int($3 / 10)
      if (phase != last || tenth > shown) {
        what = $4; for (i = 5; i <= NF; i++) what = what ":" $i
        printf "setup:   %-11s %3d%%  %s\n", phase, int($3), what
        fflush(); last = phase; shown = tenth
      }
    }
    $1 == "pmerror" { print "setup:   error: " $0; fflush() }'
}

# apt_install PACKAGE...: one update, then the install with compact progress on stdout and
# apt's own warnings and errors on stderr.
apt_install() {
  echo "setup: [1/2] apt-get update (the package lists)"
  $sudo apt-get update -q | sed -u 's/^/setup:   /'
  echo "setup: [2/2] apt-get install $# packages (with their dependencies): $*"
  # libunwind-dev replaces the LLVM libunwind-14-dev that some images ship: expected.
  # Status lines go to descriptor 3, which the pipe reads; apt's usual output is dropped.
  { DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
      -o APT::Status-Fd=3 "$@" 3>&1 1>/dev/null; } | apt_progress
}

echo "setup: checking ${#packages[@]} Debian packages"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  start=$SECONDS
  apt_install "${missing[@]}"
  echo "setup: installed ${#missing[@]} packages in $((SECONDS - start)) s"
fi
echo "setup: all packages present"

# The prebuilt ggml and llama.cpp (examples/ggml, tests/shim/ggml.sh) come from npm into the
# ignored .deps/ggml; a second run finds them there and fetches nothing. npm comes from
# Debian when the machine has no Node.js of its own. A failed fetch does not fail the set-up:
# the ggml examples and tests are then skipped, and .ci/test.sh says so.
if ! command -v npm >/dev/null 2>&1; then
  echo "setup: installing npm (for .ci/fetch-ggml.sh)"
  apt_install npm
fi
echo "setup: fetching the prebuilt ggml and llama.cpp from npm (.ci/fetch-ggml.sh)"
if ! bash "$(dirname "$0")/fetch-ggml.sh"; then
  echo "setup: WARNING: could not fetch the prebuilt ggml; the ggml examples and tests will be skipped"
fi
echo "setup: done"
