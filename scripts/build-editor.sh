#!/usr/bin/env bash
# Builds the editor into client/dist: a release wasm32 build of conclave-client, the
# wasm-bindgen CLI at exactly the version in Cargo.lock (installed when missing), and
# the static files. wasm-opt is not used: Debian's binaryen breaks the module.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(awk '$0 == "name = \"wasm-bindgen\"" { getline; gsub(/"/, "", $3); print $3 }' Cargo.lock)
if ! command -v wasm-bindgen >/dev/null 2>&1 || [ "$(wasm-bindgen --version | awk '{print $2}')" != "$version" ]; then
  echo "build-editor: installing wasm-bindgen-cli $version (a minute or two, once)" >&2
  # Not --locked: it fails against the registry mirror this project is built with.
  # An unoptimized build without debug information compiles in well under half the
  # time of a release build, and still turns the editor's module around in seconds.
  CARGO_PROFILE_DEV_DEBUG=0 cargo install --debug wasm-bindgen-cli --version "$version"
fi

cargo build -p conclave-client --target wasm32-unknown-unknown --profile wasm-release
target_dir="${CARGO_TARGET_DIR:-target}"
out=client/dist
rm -rf "$out"
mkdir -p "$out"
wasm-bindgen --target web --no-typescript --remove-name-section --remove-producers-section --out-dir "$out" "$target_dir/wasm32-unknown-unknown/wasm-release/conclave-client.wasm"
cp client/index.html client/*.css client/boot.js "$out/"
echo "build-editor: $(du -sh "$out" | cut -f1) in $out" >&2
