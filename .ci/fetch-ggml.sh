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
#
# Layout: .deps/ggml/lib/*.so, .deps/ggml/include/*.h, .deps/ggml/packages.txt (what was
# fetched, with the integrity checked). `npm pack` only downloads the tarballs: no package
# script runs. Each tarball's SHA-512 must equal the integrity pinned below (the registry's
# own `dist.integrity` for that version), so a changed or tampered tarball is refused.
#
# Idempotent and fast: when .deps/ggml/packages.txt already names these exact pins, nothing is
# fetched. Usage: fetch-ggml.sh [DEST] (default: .deps/ggml at the top of the clone).
# Exit status 0 when the folder is ready, 1 on any failure (the folder is then left absent).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$top/.deps/ggml}

# name@version, then the registry's sha512 integrity of its tarball.
pins=(
  "@node-llama-cpp/linux-x64@3.21.1"
  "sha512-Totj6RTDMGo3FoK2yNUaz/oGmZD0olAqTrRluFUWmu0kW2i9TOzHSW0OWCAiGkzRCVX0WsU2CyUQo/W2NYtdPA=="
  "@fugood/llama.node@1.7.15"
  "sha512-Mm2Pd2EsLhgTxoX6N4CxtcXGmcB4jAabw915F6UdvYQbSf6dQmudaQDVWjnN4j/xBAja7QgYSadxZCMPAaJypA=="
)
stamp_text() {
  for ((i = 0; i < ${#pins[@]}; i += 2)); do
    printf '%s %s\n' "${pins[i]}" "${pins[i + 1]}"
  done
}

if [ -f "$dest/packages.txt" ] && [ "$(cat "$dest/packages.txt")" = "$(stamp_text)" ]; then
  echo "fetch-ggml: $dest is up to date"
  exit 0
fi
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

mkdir -p "$work/tgz" "$work/out/lib" "$work/out/include"
for ((i = 0; i < ${#pins[@]}; i += 2)); do
  spec=${pins[i]}
  want=${pins[i + 1]}
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

stamp_text >"$work/out/packages.txt"
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$work/out" "$dest"
echo "fetch-ggml: $dest ready ($(ls "$dest/lib" | grep -c '\.so$') libraries, $(ls "$dest/include" | grep -c '\.h$') headers)"
