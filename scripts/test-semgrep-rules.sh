#!/usr/bin/env bash
# Tests Conclave's Semgrep rule pack (analyzers/semgrep/conclave): every rule must
# have at least one positive (`ruleid:`) and one negative (`ok:`) example in the test
# files beside its YAML file, and `semgrep --test` must find exactly the positives.
# Semgrep is the one scripts/fetch-analyzers.sh installs (Conclave's tool directory),
# else one on PATH; it runs without the network.
set -euo pipefail
cd "$(dirname "$0")/.."

pack=analyzers/semgrep/conclave
tools="${CONCLAVE_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave/bin}"
semgrep="$tools/semgrep"
[ -x "$semgrep" ] || semgrep=$(command -v semgrep || true)
if [ -z "$semgrep" ]; then
  echo "test-semgrep-rules: semgrep is not installed; run scripts/fetch-analyzers.sh (or scripts/setup.sh)" >&2
  exit 1
fi

missing=()
for rules in "$pack"/*.yaml; do
  stem=${rules%.yaml}
  examples=("$stem".*)
  for id in $(sed -n 's/^  - id: \(.*\)$/\1/p' "$rules"); do
    grep -q "ruleid: $id\$" "${examples[@]}" || missing+=("$id has no positive example (ruleid:)")
    grep -q "ok: $id\$" "${examples[@]}" || missing+=("$id has no negative example (ok:)")
  done
done
if [ ${#missing[@]} -gt 0 ]; then
  printf 'test-semgrep-rules: %s\n' "${missing[@]}" >&2
  exit 1
fi

SEMGREP_ENABLE_VERSION_CHECK=0 SEMGREP_SEND_METRICS=off "$semgrep" scan --test --metrics off --disable-version-check "$pack"
