#!/usr/bin/env bash
# Installs what tlsan needs to build and test on Debian 12 (run as root, or with sudo).
# Idempotent: packages already present are not reinstalled.
set -euo pipefail
packages=(
  build-essential cmake pkg-config clang-format   # toolchain, formatting check
  libyajl-dev libcmocka-dev libxxhash-dev libunwind-dev libdw-dev valgrind  # the project's libraries
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
