#!/usr/bin/env bash
# Installs the real MCP servers the agent tests call, pinned, into Conclave's cache:
# mcp-server-git from PyPI in its own virtual environment, and
# @modelcontextprotocol/server-everything from npm. Safe to run again: each checks
# before it acts. Prints nothing to stdout.
set -euo pipefail

git_version=2026.10.19
everything_version=2026.8.31
cache="${XDG_CACHE_HOME:-$HOME/.cache}/conclave"
venv="$cache/mcp-servers-venv"
npm_dir="$cache/mcp-servers-npm"
everything="$npm_dir/node_modules/@modelcontextprotocol/server-everything"

log() { printf '\033[1mfetch-mcp-servers:\033[0m %s\n' "$*" >&2; }

if [ -x "$venv/bin/mcp-server-git" ] && [ "$("$venv/bin/pip" show mcp-server-git 2>/dev/null | sed -n "s/^Version: //p")" = "$git_version" ]; then
  log "mcp-server-git $git_version is installed in $venv"
else
  python3 -m venv "$venv"
  log "installing mcp-server-git==$git_version with pip"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp-server-git==$git_version" >&2
  log "installed $venv/bin/mcp-server-git"
fi

if [ -f "$everything/package.json" ] && [ "$(node -p "require('$everything/package.json').version" 2>/dev/null)" = "$everything_version" ]; then
  log "server-everything $everything_version is installed in $npm_dir"
else
  command -v npm >/dev/null 2>&1 || { log "npm is needed to install server-everything"; exit 1; }
  mkdir -p "$npm_dir"
  log "installing @modelcontextprotocol/server-everything@$everything_version with npm"
  npm install --silent --no-audit --no-fund --prefix "$npm_dir" "@modelcontextprotocol/server-everything@$everything_version" >&2
  log "installed $everything"
fi
