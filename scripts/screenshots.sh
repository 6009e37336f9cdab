#!/usr/bin/env bash
# Retakes the editor's screenshots in docs/ (docs/editor-*.png, the README's picture
# among them): the editor tests in headless Chromium save each one from its fixture
# when CONCLAVE_SCREENSHOTS is set. Needs what scripts/test.sh installs (Chromium,
# chromedriver, the editor's build tools).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-editor.sh
CONCLAVE_SCREENSHOTS=1 cargo test -p conclave-tests --test it editor_browser
git status --short docs/*.png
