#!/usr/bin/env bash
# Installs Ruff, pinned, from PyPI into a virtual environment in Conclave's cache and
# links it into Conclave's tool directory (~/.cache/conclave/bin), where `conclave
# review` looks for an analyzer's program that is not on PATH. ShellCheck comes from
# the system packages (scripts/setup.sh). Safe to run again; quick when done.
set -euo pipefail

version=0.17.5
cache="${XDG_CACHE_HOME:-$HOME/.cache}/conclave"
venv="$cache/analyzers"
tools="${CONCLAVE_TOOLS_DIR:-$cache/bin}"

log() { printf '\033[1mfetch-analyzers:\033[0m %s\n' "$*" >&2; }

if [ -x "$venv/bin/ruff" ] && [ "$("$venv/bin/ruff" --version 2>/dev/null)" = "ruff $version" ]; then
  log "ruff $version is installed in $venv"
else
  python3 -m venv "$venv"
  log "installing ruff==$version with pip"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "ruff==$version"
fi
mkdir -p "$tools"
ln -sf "$venv/bin/ruff" "$tools/ruff"
log "ruff is linked at $tools/ruff"
