#!/usr/bin/env bash
# Set-up, then Conclave's main job on this repository: build conclave with its editor
# inside, validate the conclave catalog, review the latest change (the working tree,
# or the last commit when the tree is clean) with the light-code-review conclave, and
# say how to open the editor. Agents whose provider has no key run on the embedded
# local model (installed by the set-up), so this works offline.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/steps.sh
source scripts/lib/launcher.sh

step "set-up: system packages, Rust components, the model"
CONCLAVE_SKIP_TEST_TOOLS=1 bash scripts/setup.sh
# The editor first: conclave embeds the bundle it finds in client/dist when it is built.
step "build the editor"
bash scripts/build-editor.sh
step "build conclave"
# Built with the features the test build gives every crate (the root Cargo.toml sees
# to it, and tidy checks it), so scripts/test.sh afterwards reuses every library.
cargo build --bin conclave
conclave="${CARGO_TARGET_DIR:-target}/debug/conclave"

step "the editor built into conclave"
python3 scripts/check-editor.py "$conclave"

step "conclave validate"
"$conclave" validate

step "conclave review"
range=()
if git diff --quiet HEAD -- && [ -z "$(git ls-files --others --exclude-standard)" ]; then
  range=(--base HEAD~1)
fi
status=0
# On the embedded model the Writer's input is fitted to SmolLM2's trained 8,192-token
# window (the reviewers' findings cut in a stated order when they do not fit, and the
# report says so), so the try-out needs no larger window.
# This is a local try-out, not a CI gate: keep the fallback to the local model even
# where CI is set (in CI, `conclave review` refuses to fall back).
CI= "$conclave" review . "${range[@]}" || status=$?

steps_summary
echo
echo "Open the editor: run \`$conclave serve\` and open the URL it prints (http://127.0.0.1:7700/#token=...)."
echo "Next: the README's one-minute tour (README.md, \"A one-minute tour\") reviews your own change with your key"
echo "and opens the editor; the manual, one chapter per concern, is docs/README.md."
exit "$status"
