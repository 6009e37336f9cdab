#!/usr/bin/env bash
# Fuzzes conclave serve's HTTP API from its own OpenAPI document with schemathesis,
# every check on: any server error (5xx), any answer that does not match the
# document, any schema-valid request refused or schema-violating request accepted
# fails the step. Runs the debug binary built by `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."

conclave=$(realpath -m "${CARGO_TARGET_DIR:-target}/debug/conclave")
st="${XDG_CACHE_HOME:-$HOME/.cache}/conclave/venv/bin/schemathesis"
[ -x "$conclave" ] || cargo build --bin conclave
[ -x "$st" ] || bash scripts/fetch-schemathesis.sh

work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
mkdir -p "$work/conclaves"
cp conclaves/*.conclave.json "$work/conclaves/"
git -C "$work" init -q
(cd "$work" && CONCLAVE_TOKEN="$token" CONCLAVE_DB="$work/runs.db" exec "$conclave" serve --bind "127.0.0.1:$port") 2>"$work/serve.log" &
server=$!
# Stop the server and keep the script's own exit status (not the killed server's).
trap 'status=$?; kill $server 2>/dev/null; wait $server 2>/dev/null || true; rm -rf "$work"; exit $status' EXIT
up=
for _ in $(seq 100); do
  if curl -fsS -o /dev/null "http://127.0.0.1:$port/api/openapi.json" -H "Authorization: Bearer $token" 2>/dev/null; then
    up=1
    break
  fi
  sleep 0.2
done
if [ -z "$up" ]; then
  echo "api-fuzz: conclave serve did not answer on port $port within 20 s; its log:" >&2
  cat "$work/serve.log" >&2
  exit 1
fi
"$st" --config-file tests/api/schemathesis.toml run "http://127.0.0.1:$port/api/openapi.json" \
  --checks all -H "Authorization: Bearer $token" --max-examples 50 --seed 20261123 --no-color
