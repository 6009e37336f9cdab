#!/usr/bin/env bash
# Set-up, then Conclave's main job on this repository: validate the conclave catalog,
# then review the latest change (the working tree, or the last commit when the tree is
# clean) with the light-code-review conclave.
#
# Until the embedded local model lands, the agents run against conclave-fake-llm, a
# scripted stand-in for an OpenAI-compatible server: the pipeline (tools, schema
# contract, contradiction and counts checks, reports) is real, the answers are not.
set -euo pipefail
cd "$(dirname "$0")/.."

CONCLAVE_SKIP_BROWSER=1 bash scripts/setup.sh
cargo build --bin conclave --bin conclave-fake-llm
bin="${CARGO_TARGET_DIR:-target}/debug"

echo "== conclave validate"
"$bin/conclave" validate

echo "== conclave review (agents answered by the scripted conclave-fake-llm)"
log=$(mktemp)
"$bin/conclave-fake-llm" --port 0 2>"$log" &
fake=$!
trap 'kill "$fake" 2>/dev/null || true; rm -f "$log"' EXIT
for _ in $(seq 100); do grep -q listening "$log" && break; sleep 0.1; done
base_url=$(grep -o 'http://[^ ]*' "$log")
range=()
if git diff --quiet HEAD -- && [ -z "$(git ls-files --others --exclude-standard)" ]; then
  range=(--base HEAD~1)
fi
OPENAI_BASE_URL="$base_url" OPENAI_API_KEY=not-needed-for-the-fake \
  "$bin/conclave" review . --provider openai "${range[@]}"
