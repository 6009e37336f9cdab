#!/usr/bin/env bash
# Set-up, then Conclave's main job on this repository: validate the conclave catalog
# and run a sample conclave, storing the run in .conclave/conclave.db.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cargo build -p conclave-server --bin conclave
conclave="${CARGO_TARGET_DIR:-target}/debug/conclave"

echo "== conclave validate"
"$conclave" validate
echo "== conclave run hello"
"$conclave" run hello --input-json '{"message": "hello from Conclave"}'
echo "== conclave runs list"
"$conclave" runs list --limit 5
