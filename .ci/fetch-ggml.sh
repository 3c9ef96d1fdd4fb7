#!/usr/bin/env bash
# Fetches the prebuilt ggml and llama.cpp libraries and their public headers into .deps/ggml/
# (ignored by git, never committed), for the ggml examples and the shim's ggml tests.
#
#   @node-llama-cpp/linux-x64@3.21.1  bins/linux-x64/: libggml-base.so, libggml.v0.4.0.so,
#                                     the CPU backends libggml-cpu-*.so (one per x86-64 level,
#                                     picked at run time by ggml_backend_load_all_from_path),
#                                     libllama.v0.4.0.so, libllama-common.so; ggml 0.23.0
#   @fugood/llama.node@1.7.15         src/llama.cpp/ggml/include/ and src/llama.cpp/include/
#                                     (llama.cpp build 10257, commit 22dc605c4)
# and, into .deps/whisper/, a real ggml host for the shim's tests:
#   @fugood/node-whisper-linux-x64@1.1.3  index.node: whisper.cpp's Node addon, ggml 0.22.0
#                                     (commit 9781133) built in and exported, no libggml*.so
#
# Layout: .deps/ggml/lib/*.so, .deps/ggml/include/*.h, .deps/ggml/packages.txt (what was
# fetched, with the integrity checked); .deps/whisper/index.node, package.json, packages.txt.
# The two folders are fetched and stamped separately, so that a copy of this script that
# knows only the first (an older checkout run on the same .deps) leaves the second alone. `npm pack` only downloads the tarballs: no package
# script runs. Each tarball's SHA-512 must equal the integrity pinned below (the registry's
# own `dist.integrity` for that version), so a changed or tampered tarball is refused.
#
# Idempotent and fast: a folder whose packages.txt already names these exact pins is not
# fetched again; a folder is replaced only once its new contents are complete (a rename).
# Usage: fetch-ggml.sh [DEST [WHISPER_DEST]] (default: .deps/ggml and .deps/whisper at the top
# of the clone). Exit status 0 when both folders are ready, 1 on any failure (a folder that
# could not be fetched is left as it was).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$top/.deps/ggml}
wdest=${2:-$top/.deps/whisper}

# name@version, then the registry's sha512 integrity of its tarball.
pins=(
  "@node-llama-cpp/linux-x64@3.21.1"
  "sha512-Totj6RTDMGo3FoK2yNUaz/oGmZD0olAqTrRluFUWmu0kW2i9TOzHSW0OWCAiGkzRCVX0WsU2CyUQo/W2NYtdPA=="
  "@fugood/llama.node@1.7.15"
  "sha512-Mm2Pd2EsLhgTxoX6N4CxtcXGmcB4jAabw915F6UdvYQbSf6dQmudaQDVWjnN4j/xBAja7QgYSadxZCMPAaJypA=="
)
wpins=(
  "@fugood/node-whisper-linux-x64@1.1.3"
  "sha512-hm//o20nioHQ+7s/idIvnYStz+QdN3n9/psbNJdUf7PciV2orpf6OuWwfDBcme22IwgDOSrCYsWDdO0/08pf5w=="
)
stamp_text() { # PIN INTEGRITY ...
  while [ $# -ge 2 ]; do
    printf '%s %s\n' "$1" "$2"
    shift 2
  done
}
up_to_date() { # FOLDER PIN INTEGRITY ...
  local folder=$1
  shift
  [ -f "$folder/packages.txt" ] && [ "$(cat "$folder/packages.txt")" = "$(stamp_text "$@")" ]
}

need_core=1
need_whisper=1
if up_to_date "$dest" "${pins[@]}"; then
  echo "fetch-ggml: $dest is up to date"
  need_core=0
fi
if up_to_date "$wdest" "${wpins[@]}"; then
  echo "fetch-ggml: $wdest is up to date"
  need_whisper=0
fi
[ "$need_core$need_whisper" != 00 ] || exit 0
for tool in npm node tar; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fetch-ggml: $tool is needed (Node.js 18 or later and npm)" >&2
    exit 1
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Trust what the system trusts, as apt and curl do (Node.js otherwise has its own list, which
# misses a site's or proxy's own certificate authority); and give up on a dead network quickly.
if [ -z "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
fi
npm_opts=(--ignore-scripts --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=5000)
# The tarball's integrity in npm's notation: "sha512-" + base64 of the raw digest.
integrity_of() {
  node -e 'const c = require("crypto"), fs = require("fs");
    process.stdout.write("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"));' "$1"
}

# Fetches each PIN INTEGRITY pair's tarball into $work/tgz and checks its integrity.
fetch_pins() {
  local spec want file got
  while [ $# -ge 2 ]; do
    spec=$1
    want=$2
    shift 2
    echo "fetch-ggml: npm pack $spec"
    # --ignore-scripts: pack never runs the package's own scripts; only the tarball is fetched.
    if ! file=$(cd "$work/tgz" && npm pack --loglevel=error "${npm_opts[@]}" "$spec" 2>"$work/npm.err" | tail -n 1) ||
      [ -z "$file" ] || [ ! -f "$work/tgz/$file" ]; then
      echo "fetch-ggml: npm pack $spec failed:" >&2
      sed 's/^/  /' "$work/npm.err" | head -n 20 >&2
      exit 1
    fi
    got=$(integrity_of "$work/tgz/$file")
    if [ "$got" != "$want" ]; then
      echo "fetch-ggml: $spec: integrity $got, expected $want" >&2
      exit 1
    fi
  done
}
# Puts the finished folder $1 at $2: the old one goes only once the new one is complete.
install_folder() {
  mkdir -p "$(dirname "$2")"
  rm -rf "$2.old"
  [ ! -e "$2" ] || mv "$2" "$2.old"
  mv "$1" "$2"
  rm -rf "$2.old"
}
mkdir -p "$work/tgz"

if [ "$need_whisper" = 1 ]; then
  fetch_pins "${wpins[@]}"
  mkdir -p "$work/wout"
  # The addon itself and its package.json (name, version, the whisper.node repository).
  tar -xzf "$work/tgz/fugood-node-whisper-linux-x64-1.1.3.tgz" -C "$work" package/index.node \
    package/package.json
  mv "$work/package/index.node" "$work/package/package.json" "$work/wout/"
  rm -rf "$work/package"
  stamp_text "${wpins[@]}" >"$work/wout/packages.txt"
  install_folder "$work/wout" "$wdest"
  echo "fetch-ggml: $wdest ready (index.node, $(wc -c <"$wdest/index.node") bytes)"
fi
[ "$need_core" = 1 ] || exit 0

fetch_pins "${pins[@]}"
mkdir -p "$work/out/lib" "$work/out/include"

# The libraries (not the Node addon, llama-addon.node, which the examples do not need).
tar -xzf "$work/tgz/node-llama-cpp-linux-x64-3.21.1.tgz" -C "$work" package/bins/linux-x64
for so in "$work"/package/bins/linux-x64/*.so; do
  cp "$so" "$work/out/lib/"
done
cp "$work/package/bins/linux-x64/_nlcBuildMetadata.json" "$work/out/lib/"
rm -rf "$work/package"

# The headers, flattened into one include folder (ggml's and llama's names do not collide).
tar -xzf "$work/tgz/fugood-llama.node-1.7.15.tgz" -C "$work" package/src/llama.cpp/ggml/include \
  package/src/llama.cpp/include package/lib/version.js
cp "$work"/package/src/llama.cpp/ggml/include/*.h "$work/out/include/"
cp "$work"/package/src/llama.cpp/include/*.h "$work/out/include/"
cp "$work/package/lib/version.js" "$work/out/include/llama.node-version.js"

stamp_text "${pins[@]}" >"$work/out/packages.txt"
install_folder "$work/out" "$dest"
echo "fetch-ggml: $dest ready ($(ls "$dest/lib" | grep -c '\.so$') libraries, $(ls "$dest/include" | grep -c '\.h$') headers)"
