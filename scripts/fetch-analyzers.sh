#!/usr/bin/env bash
# Installs the analyzers the review conclaves run that do not come from the system
# packages, pinned, from PyPI: Ruff and Semgrep, each in its own virtual environment
# in Conclave's cache, linked into Conclave's tool directory (~/.cache/conclave/bin),
# where `conclave review` looks for an analyzer's program that is not on PATH.
# ShellCheck comes from the system packages (scripts/setup.sh). Safe to run again;
# quick when done.
#
# A lane's sandbox reads a program's virtual environment and the Python it was made
# from (the `home` of its pyvenv.cfg), so Semgrep, a Python program, runs confined
# wherever that Python lives.
set -euo pipefail

ruff_version=0.17.5
semgrep_version=1.185.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/conclave"
tools="${CONCLAVE_TOOLS_DIR:-$cache/bin}"

log() { printf '\033[1mfetch-analyzers:\033[0m %s\n' "$*" >&2; }

# install VENV PACKAGE VERSION PROGRAM EXPECTED_VERSION_LINE
install() {
  local venv=$1 package=$2 version=$3 program=$4 expected=$5
  if [ -x "$venv/bin/$program" ] && [ "$("$venv/bin/$program" --version 2>/dev/null | tail -n 1)" = "$expected" ]; then
    log "$package $version is installed in $venv"
  else
    python3 -m venv "$venv"
    log "installing $package==$version with pip"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$package==$version"
  fi
  mkdir -p "$tools"
  ln -sf "$venv/bin/$program" "$tools/$program"
  log "$program is linked at $tools/$program"
}

install "$cache/analyzers" ruff "$ruff_version" ruff "ruff $ruff_version"
# Semgrep checks for a newer version and sends metrics unless told not to; the lanes
# tell it (`--metrics off`, SEMGREP_ENABLE_VERSION_CHECK=0), and so does this check.
SEMGREP_ENABLE_VERSION_CHECK=0 SEMGREP_SEND_METRICS=off \
  install "$cache/semgrep" semgrep "$semgrep_version" semgrep "$semgrep_version"
