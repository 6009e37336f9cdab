#!/usr/bin/env bash
# Set-up, then every check: formatting, lints, the wasm32 builds, and the whole test
# suite (unit, integration, end-to-end, the editor in headless Chromium, and the run
# store against a real PostgreSQL started here and stopped on exit).
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
step "start PostgreSQL for the store's tests"
postgres_dir=$(mktemp -d /tmp/conclave-postgres.XXXXXX)
chmod 755 "$postgres_dir"
trap 'bash scripts/postgres.sh stop "$postgres_dir" || true; rm -rf "$postgres_dir"' EXIT
CONCLAVE_TEST_POSTGRES_URL=$(bash scripts/postgres.sh start "$postgres_dir")
export CONCLAVE_TEST_POSTGRES_URL
step "cargo test (unit, integration, end-to-end, browser, PostgreSQL)"
cargo test --workspace
step "schemathesis against the HTTP API (every check)"
bash scripts/api-fuzz.sh
