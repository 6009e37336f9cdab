#!/usr/bin/env bash
# Installs the third-party programs the tests run against, each pinned and cached
# under ~/.cache/conclave: the real Claude Code CLI and Microsoft's SARIF Multitool
# (npm), schemathesis (PyPI) and llama-cpp-python's OpenAI-compatible server (PyPI,
# built from source once). The two npm installs and schemathesis only download, so
# they run beside the llama.cpp build. Safe to run again: each checks before it acts.
set -euo pipefail
here="$(dirname "$0")"

pids=()
bash "$here/fetch-claude.sh" & pids+=($!)
bash "$here/fetch-sarif-multitool.sh" & pids+=($!)
bash "$here/fetch-schemathesis.sh" & pids+=($!)
bash "$here/fetch-mcp-servers.sh" & pids+=($!)
status=0
bash "$here/fetch-llama-server.sh" || status=$?
for pid in "${pids[@]}"; do
  wait "$pid" || status=$?
done
exit "$status"
