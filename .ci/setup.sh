#!/usr/bin/env bash
# Installs what tlsan needs to build and test on Debian 12 (run as root, or with sudo).
# Idempotent: packages already present are not reinstalled.
set -euo pipefail
packages=(
  build-essential cmake pkg-config clang-format   # toolchain, formatting check
  libyajl-dev libcmocka-dev libxxhash-dev libunwind-dev libdw-dev valgrind  # the project's libraries
  libflatbuffers-dev flatbuffers-compiler         # ExecuTorch programs: flatc writes the reader
  jq python3 time                                 # test scripts and benchmarks
  chromium                                        # headless, to test tlsan view's page
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  # libunwind-dev replaces the LLVM libunwind-14-dev that some images ship: expected.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "setup: all packages present"

# The prebuilt ggml and llama.cpp (examples/ggml, tests/shim/ggml.sh) come from npm into the
# ignored .deps/ggml; a second run finds them there and fetches nothing. npm comes from
# Debian when the machine has no Node.js of its own. A failed fetch does not fail the set-up:
# the ggml examples and tests are then skipped, and .ci/test.sh says so.
if ! command -v npm >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup: installing npm (for .ci/fetch-ggml.sh)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
if ! bash "$(dirname "$0")/fetch-ggml.sh"; then
  echo "setup: WARNING: could not fetch the prebuilt ggml; the ggml examples and tests will be skipped"
fi
