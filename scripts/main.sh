#!/usr/bin/env bash
# Set-up, then Conclave's main job on this repository: validate the conclave catalog,
# then review the latest change (the working tree, or the last commit when the tree is
# clean) with the light-code-review conclave. Agents whose provider has no key run on
# the embedded local model (installed by the set-up), so this works offline.
set -euo pipefail
cd "$(dirname "$0")/.."

CONCLAVE_SKIP_TEST_TOOLS=1 bash scripts/setup.sh
cargo build --bin conclave
conclave="${CARGO_TARGET_DIR:-target}/debug/conclave"

echo "== conclave validate"
"$conclave" validate

echo "== conclave review"
range=()
if git diff --quiet HEAD -- && [ -z "$(git ls-files --others --exclude-standard)" ]; then
  range=(--base HEAD~1)
fi
"$conclave" review . "${range[@]}"
