#!/usr/bin/env bash
# Installs llama-cpp-python's OpenAI-compatible server, pinned, from PyPI into a
# virtual environment in Conclave's cache, for the tests that run `conclave review
# --provider openai` against a real local model server. PyPI has only its source, so
# pip builds llama.cpp here once (a few minutes on two cores); later runs reuse the
# cached environment. Safe to run again.
set -euo pipefail

version=0.3.36
venv="${XDG_CACHE_HOME:-$HOME/.cache}/conclave/llama-server-venv"

log() { printf '\033[1mfetch-llama-server:\033[0m %s\n' "$*" >&2; }

installed() {
  [ -x "$venv/bin/python" ] &&
    [ "$("$venv/bin/pip" show llama-cpp-python 2>/dev/null | sed -n "s/^Version: //p")" = "$version" ] &&
    "$venv/bin/python" -c 'import llama_cpp.server.app, uvicorn' >/dev/null 2>&1
}

if installed; then
  log "llama-cpp-python[server] $version is installed in $venv"
  exit 0
fi
command -v cmake >/dev/null 2>&1 || { log "cmake is needed to build llama-cpp-python (scripts/setup.sh installs it)"; exit 1; }
rm -rf "$venv"
python3 -m venv "$venv"
log "building llama-cpp-python[server]==$version with pip (llama.cpp is compiled: a few minutes)"
started=$(date +%s)
# A portable CPU build without the examples, tests and the multimodal (llava) library
# llama.cpp would also compile; scripts/llama-cc compiles ggml's kernels as configured
# and the rest at -O1, which roughly halves the compile time.
launcher=$(realpath "$(dirname "$0")/llama-cc")
CMAKE_C_COMPILER_LAUNCHER="$launcher" CMAKE_CXX_COMPILER_LAUNCHER="$launcher" \
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DLLAVA_BUILD=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir "llama-cpp-python[server]==$version"
installed || { log "llama-cpp-python installed but its server does not import"; exit 1; }
log "installed $venv in $(($(date +%s) - started)) s"
