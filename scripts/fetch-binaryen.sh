#!/usr/bin/env bash
# Installs npm's binaryen, pinned, into Conclave's cache, for the wasm-opt step of
# scripts/build-editor.sh, and prints the path of its wasm-opt. npm's build runs under
# node; Debian's binaryen (108) must never be used: it rewrites wasm-bindgen's
# externref table and the editor never mounts. Safe to run again.
set -euo pipefail

version=132.0.0
dir="${XDG_CACHE_HOME:-$HOME/.cache}/conclave/binaryen"
bin="$dir/node_modules/.bin/wasm-opt"

log() { printf '\033[1mfetch-binaryen:\033[0m %s\n' "$*" >&2; }

if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null | awk '{print $3}')" = "${version%%.*}" ]; then
  echo "$bin"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { log "npm is needed to install binaryen (scripts/setup.sh installs it)"; exit 1; }
mkdir -p "$dir"
log "installing binaryen@$version with npm (about 100 MB, once)"
npm install --silent --no-audit --no-fund --prefix "$dir" "binaryen@$version" >&2
if [ "$("$bin" --version 2>/dev/null | awk '{print $3}')" != "${version%%.*}" ]; then
  log "the installed wasm-opt does not report version ${version%%.*}"
  exit 1
fi
log "installed $bin"
echo "$bin"
