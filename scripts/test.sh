#!/usr/bin/env bash
# Set-up, then every check: formatting, lints, the wasm32 builds, and the whole test
# suite (unit, integration, end-to-end, the editor in headless Chromium, and the run
# store against a real PostgreSQL started here and stopped on exit). The third-party
# programs the tests run against are fetched (and llama.cpp built) beside the lints
# and builds, and waited for before the tests start. Ends with the time of each step.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/steps.sh
source scripts/lib/launcher.sh

step "set-up: system packages, Rust components, the model"
CONCLAVE_TEST_TOOLS=later bash scripts/setup.sh
tools_log=$(mktemp /tmp/conclave-test-tools.XXXXXX.log)
bash scripts/fetch-test-tools.sh >"$tools_log" 2>&1 &
tools=$!
postgres_dir=
fuzz=
cleanup() {
  pkill -P "$tools" 2>/dev/null || true
  kill "$tools" 2>/dev/null || true
  if [ -n "$fuzz" ]; then
    pkill -P "$fuzz" 2>/dev/null || true
    kill "$fuzz" 2>/dev/null || true
  fi
  if [ -n "$postgres_dir" ]; then
    bash scripts/postgres.sh stop "$postgres_dir" || true
    rm -rf "$postgres_dir"
  fi
  rm -f "$tools_log"
}
trap cleanup EXIT

step "cargo fmt --check"
cargo fmt --all -- --check
step "cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
step "Conclave's Semgrep rules: semgrep --test, a positive and a negative example per rule"
bash scripts/test-semgrep-rules.sh
step "conclave-shared and the editor build for wasm32"
cargo build -p conclave-shared --target wasm32-unknown-unknown
cargo clippy -p conclave-client --target wasm32-unknown-unknown -- -D warnings
step "build the editor (wasm32, for the browser tests)"
bash scripts/build-editor.sh
step "build the tests"
cargo test --workspace --no-run
step "wait for the test tools (Claude Code, SARIF Multitool, schemathesis, llama-cpp-python, MCP clients and servers)"
if ! wait "$tools"; then
  cat "$tools_log" >&2
  echo "test.sh: installing the test tools failed (their log is above)" >&2
  exit 1
fi
cat "$tools_log" >&2
step "start PostgreSQL for the store's tests"
postgres_dir=$(mktemp -d /tmp/conclave-postgres.XXXXXX)
chmod 755 "$postgres_dir"
CONCLAVE_TEST_POSTGRES_URL=$(bash scripts/postgres.sh start "$postgres_dir")
export CONCLAVE_TEST_POSTGRES_URL
step "cargo test (unit, integration, end-to-end, browser, PostgreSQL), with schemathesis beside it"
# Schemathesis fuzzes a `conclave serve` of its own (every check, against the API's
# OpenAPI document) while the test binaries run: both wait on processes and
# browsers much of the time, so together they take little longer than the tests.
fuzz_log=$(mktemp /tmp/conclave-api-fuzz.XXXXXX.log)
bash scripts/api-fuzz.sh >"$fuzz_log" 2>&1 &
fuzz=$!
tests_status=0
cargo test --workspace || tests_status=$?
fuzz_status=0
wait "$fuzz" || fuzz_status=$?
step "schemathesis against the HTTP API (every check): its output"
cat "$fuzz_log" >&2
rm -f "$fuzz_log"
steps_summary
if [ "$tests_status" -ne 0 ] || [ "$fuzz_status" -ne 0 ]; then
  echo "test.sh: cargo test exited $tests_status, schemathesis $fuzz_status" >&2
  exit 1
fi
