#!/usr/bin/env bash
# Installs the real Claude Code CLI from npm, pinned, into Conclave's cache, for the
# test that runs the claude-code provider against it (not logged in, no network).
# Safe to run again. Prints nothing to stdout.
set -euo pipefail

version=2.1.330
dir="${XDG_CACHE_HOME:-$HOME/.cache}/conclave/claude-code"
bin="$dir/node_modules/.bin/claude"

log() { printf '\033[1mfetch-claude:\033[0m %s\n' "$*" >&2; }

if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null | awk '{print $1}')" = "$version" ]; then
  log "Claude Code $version is installed in $dir"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { log "npm is needed to install the Claude Code CLI"; exit 1; }
mkdir -p "$dir"
log "installing @anthropic-ai/claude-code@$version with npm (about 380 MB, once)"
npm install --silent --no-audit --no-fund --prefix "$dir" "@anthropic-ai/claude-code@$version" >&2
if [ "$("$bin" --version 2>/dev/null | awk '{print $1}')" != "$version" ]; then
  log "the installed CLI does not report version $version"
  exit 1
fi
log "installed $bin"
