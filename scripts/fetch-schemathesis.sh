#!/usr/bin/env bash
# Installs schemathesis, pinned, from PyPI into a virtual environment in Conclave's
# cache, for the API fuzzing step of the tests (scripts/api-fuzz.sh). Safe to run
# again.
set -euo pipefail

version=4.32.5
venv="${XDG_CACHE_HOME:-$HOME/.cache}/conclave/venv"

log() { printf '\033[1mfetch-schemathesis:\033[0m %s\n' "$*" >&2; }

if [ -x "$venv/bin/schemathesis" ] && [ "$("$venv/bin/pip" show schemathesis 2>/dev/null | sed -n "s/^Version: //p")" = "$version" ]; then
  log "schemathesis $version is installed in $venv"
  exit 0
fi
python3 -m venv "$venv"
log "installing schemathesis==$version with pip"
"$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$version"
log "installed $venv/bin/schemathesis"
