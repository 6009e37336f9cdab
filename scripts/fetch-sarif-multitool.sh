#!/usr/bin/env bash
# Installs Microsoft's SARIF Multitool from npm, pinned, into Conclave's cache, for
# the tests that validate Conclave's SARIF with it as well as with the official JSON
# schema. Safe to run again. Prints nothing to stdout.
set -euo pipefail

version=5.7.0
dir="${XDG_CACHE_HOME:-$HOME/.cache}/conclave/sarif-multitool"
bin="$dir/node_modules/.bin/sarif-multitool"

log() { printf '\033[1mfetch-sarif-multitool:\033[0m %s\n' "$*" >&2; }

installed() { [ -x "$bin" ] && "$bin" --version 2>&1 | grep -q "^SARIF Multitool $version+"; }

if installed; then
  log "SARIF Multitool $version is installed in $dir"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { log "npm is needed to install the SARIF Multitool"; exit 1; }
mkdir -p "$dir"
log "installing @microsoft/sarif-multitool@$version with npm (about 100 MB, once)"
npm install --silent --no-audit --no-fund --prefix "$dir" "@microsoft/sarif-multitool@$version" >&2
installed || { log "the installed multitool does not report version $version"; exit 1; }
log "installed $bin"
