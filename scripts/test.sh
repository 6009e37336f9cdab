#!/usr/bin/env bash
# Set-up, then every check: formatting, lints, the wasm32 build of the shared crate,
# and the whole test suite (unit, integration and end-to-end).
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
step "cargo test"
cargo test --workspace
