#!/usr/bin/env bash
# Installs the real MCP clients the tests of `conclave mcp` and `/mcp` drive, pinned,
# into Conclave's cache: the official MCP Python SDK (`mcp` from PyPI) in its own
# virtual environment, and the MCP Inspector (`@modelcontextprotocol/inspector` from
# npm), whose CLI mode lists a server's tools. Safe to run again: each install checks
# its version first. Prints nothing to stdout.
set -euo pipefail

sdk_version=2.3.0
inspector_version=2.12.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/conclave"
venv="$cache/mcp-sdk-venv"
inspector="$cache/mcp-inspector"

log() { printf '\033[1mfetch-mcp-sdk:\033[0m %s\n' "$*" >&2; }

installed_sdk() { "$venv/bin/pip" show mcp 2>/dev/null | sed -n "s/^Version: //p"; }
if [ -x "$venv/bin/python" ] && [ "$(installed_sdk)" = "$sdk_version" ]; then
  log "the MCP Python SDK $sdk_version is installed in $venv"
else
  python3 -m venv "$venv"
  log "installing mcp==$sdk_version with pip"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==$sdk_version" >&2
  [ "$(installed_sdk)" = "$sdk_version" ] || { log "pip did not install mcp $sdk_version"; exit 1; }
  log "installed the MCP Python SDK in $venv"
fi

installed_inspector() {
  sed -n 's/^  "version": "\(.*\)",$/\1/p' "$inspector/node_modules/@modelcontextprotocol/inspector/package.json" 2>/dev/null
}
if [ "$(installed_inspector)" = "$inspector_version" ]; then
  log "the MCP Inspector $inspector_version is installed in $inspector"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { log "npm is needed to install the MCP Inspector"; exit 1; }
mkdir -p "$inspector"
log "installing @modelcontextprotocol/inspector@$inspector_version with npm"
npm install --silent --no-audit --no-fund --prefix "$inspector" "@modelcontextprotocol/inspector@$inspector_version" >&2
[ "$(installed_inspector)" = "$inspector_version" ] || { log "npm did not install the Inspector $inspector_version"; exit 1; }
log "installed the MCP Inspector in $inspector"
