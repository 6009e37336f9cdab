#!/usr/bin/env bash
# Builds the editor into client/dist: a release wasm32 build of conclave-client, split
# by wasm_split_cli (pinned, installed when missing) into the module the page loads
# and the modules of the `#[lazy]` panels, fetched when first used (each
# `split_*.wasm` and `chunk_*.wasm`, with `__wasm_split.js`, which loads them), the
# wasm-bindgen CLI at exactly the version in Cargo.lock (installed when missing),
# wasm-opt from npm's binaryen (scripts/fetch-binaryen.sh; never Debian's, which breaks
# the module) over every module, and the static files, each beside a Brotli copy
# (`NAME.br`, quality 11 with the largest standard window, 16 MB; not brotli's
# large-window format, which browsers cannot read) and a gzip one (`NAME.gz`, by
# zopfli), which conclave serves to the browsers that accept them.
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

# wasm_split_cli, pinned: the split points' ABI is `wasm_split_helpers`' (0.2, which
# Leptos brings), and the CLI of the same series reads it. Installed into Conclave's
# cache under its version, so a changed pin installs the new one.
split_version=0.2.2
split_root="${XDG_CACHE_HOME:-$HOME/.cache}/conclave/wasm-split-$split_version"
wasm_split="$split_root/bin/wasm_split_cli"
if [ ! -x "$wasm_split" ]; then
  echo "build-editor: installing wasm_split_cli $split_version (a few minutes, once)" >&2
  # Not --locked, as above.
  cargo install --root "$split_root" wasm_split_cli_support --version "$split_version" --features build-binary
fi

cargo build -p conclave-client --target wasm32-unknown-unknown --profile wasm-release
target_dir="${CARGO_TARGET_DIR:-target}"
out=client/dist
rm -rf "$out"
mkdir -p "$out"
# The split: main.wasm (what the page loads, for wasm-bindgen), the panels' modules and
# __wasm_split.js beside it. The loader imports wasm-bindgen's glue by the name the
# CLI assumes, main.js; it is the editor's conclave-client.js.
# wasm_split_cli 0.2.2 knows wasm-bindgen's describe marker by its name before 0.2.128
# (scripts/wasm-rename-import.py says why it matters); the module gets that name for
# the split, and the main module its own back after it.
marker=__wbindgen_describe_generic_import
split=$(mktemp -d)
trap 'rm -rf "$split"' EXIT
cp "$target_dir/wasm32-unknown-unknown/wasm-release/conclave-client.wasm" "$split/whole.wasm"
python3 scripts/wasm-rename-import.py "$split/whole.wasm" "$marker" __wbindgen_describe_cast
"$wasm_split" "$split/whole.wasm" "$split"
rm "$split/whole.wasm"
python3 scripts/wasm-rename-import.py "$split/main.wasm" __wbindgen_describe_cast "$marker"
grep -q 'from "./main.js"' "$split/__wasm_split.js" || { echo "build-editor: $split/__wasm_split.js does not import ./main.js: has wasm_split_cli changed?" >&2; exit 1; }
sed -i 's#from "./main.js"#from "./conclave-client.js"#' "$split/__wasm_split.js"
# --keep-lld-exports keeps what the panels' modules import from the main one.
wasm-bindgen --target web --no-typescript --remove-name-section --remove-producers-section --keep-lld-exports \
  --out-name conclave-client --out-dir "$out" "$split/main.wasm"
rm "$split/main.wasm"
cp "$split"/* "$out/"
wasm="$out/conclave-client_bg.wasm"
wasm_opt=$(bash scripts/fetch-binaryen.sh)
# Every module; --strip-debug drops the name sections the split modules keep (wasm-bindgen
# already removed the main one's).
for module in "$out"/*.wasm; do
  "$wasm_opt" -O2 --strip-debug --enable-bulk-memory --enable-reference-types --enable-nontrapping-float-to-int \
    --enable-sign-ext --enable-mutable-globals --enable-multivalue "$module" -o "$module.opt"
  mv "$module.opt" "$module"
done
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
  "$(size "$wasm.br") with Brotli, $(size "$wasm.gz") with gzip; the split modules:" >&2
for module in "$out"/*.wasm; do
  [ "$module" = "$wasm" ] || echo "  $(basename "$module"): $(size "$module") bytes, $(size "$module.br") with Brotli" >&2
done
