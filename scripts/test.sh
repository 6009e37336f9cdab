#!/usr/bin/env bash
# Set-up, then every check: formatting, lints, the wasm32 builds, and the whole test
# suite (unit, integration, end-to-end, and the editor in headless Chromium).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

step() { printf '\n\033[1m== %s\033[0m\n' "$*" >&2; }

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
step "conclave-shared and the editor build for wasm32"
cargo build -p conclave-shared --target wasm32-unknown-unknown
cargo clippy -p conclave-client --target wasm32-unknown-unknown -- -D warnings
step "build the editor (wasm32, for the browser tests)"
bash scripts/build-editor.sh
step "cargo test (unit, integration, end-to-end, browser)"
cargo test --workspace
step "schemathesis against the HTTP API (every check)"
bash scripts/api-fuzz.sh
