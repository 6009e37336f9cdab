#!/usr/bin/env bash
# Builds the editor into client/dist: a release wasm32 build of conclave-client, the
# wasm-bindgen CLI at exactly the version in Cargo.lock (installed when missing),
# wasm-opt from npm's binaryen (scripts/fetch-binaryen.sh; never Debian's, which breaks
# the module), and the static files, each beside a Brotli copy (`NAME.br`, quality 11
# with the largest standard window, 16 MB; not brotli's large-window format, which
# browsers cannot read) and a gzip one (`NAME.gz`, by zopfli), which conclave serves to
# the browsers that accept them.
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
wasm="$out/conclave-client_bg.wasm"
wasm_opt=$(bash scripts/fetch-binaryen.sh)
"$wasm_opt" -O2 --enable-bulk-memory --enable-reference-types --enable-nontrapping-float-to-int \
  --enable-sign-ext --enable-mutable-globals --enable-multivalue "$wasm" -o "$wasm.opt"
mv "$wasm.opt" "$wasm"
cp client/index.html client/*.css client/boot.js "$out/"

# The compressed copies, Brotli and zopfli side by side (two cores, a few seconds each
# for the wasm module).
for tool in brotli zopfli; do
  command -v "$tool" >/dev/null 2>&1 || { echo "build-editor: $tool is missing: run bash scripts/setup.sh" >&2; exit 1; }
done
files=("$out"/*)
brotli --best --lgwin=24 --keep --force "${files[@]}" &
compressing=$!
zopfli "${files[@]}"
wait "$compressing"
size() { stat -c %s "$1"; }
echo "build-editor: $(du -sh "$out" | cut -f1) in $out; the wasm module is $(size "$wasm") bytes," \
  "$(size "$wasm.br") with Brotli, $(size "$wasm.gz") with gzip" >&2
