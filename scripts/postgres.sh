#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests, without Docker.
#
#   bash scripts/postgres.sh start DIR   # prints the URL to export as CONCLAVE_TEST_POSTGRES_URL
#   bash scripts/postgres.sh stop DIR
#
# `start` installs Debian's postgresql with apt-get when initdb and pg_ctl are missing,
# creates a cluster in DIR/data (trust authentication for the local user `conclave`),
# and starts it on a free loopback port with its Unix socket in DIR. It is idempotent:
# a cluster already running in DIR is reused and its URL printed again. PostgreSQL
# refuses to run as root, so as root the server runs as the user `postgres` (or
# `nobody` when there is none), which then owns DIR.
set -euo pipefail

log() { printf '\033[1mpostgres:\033[0m %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

usage() { die "usage: $0 start DIR | stop DIR"; }

# The directory holding initdb and pg_ctl: from PATH, else Debian's newest version.
postgres_bin() {
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v pg_ctl)")"
    return
  fi
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$dir" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
    echo "$dir"
    return
  fi
  [ "$(id -u)" -eq 0 ] || die "initdb and pg_ctl not found: install PostgreSQL (Debian: apt-get install postgresql) or run this script as root"
  log "installing postgresql with apt-get"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$dir" ] || die "postgresql installed but no /usr/lib/postgresql/*/bin/initdb found"
  echo "$dir"
}

# Who runs the server: this user, or an unprivileged one when this is root.
server_user() {
  if [ "$(id -u)" -ne 0 ]; then
    id -un
  elif id postgres >/dev/null 2>&1; then
    echo postgres
  else
    echo nobody
  fi
}

# Runs a command as the server's user.
as_server() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$SERVER_USER" -- "$@"
  else
    "$@"
  fi
}

# A loopback TCP port nothing listens on now.
free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  die "no free loopback port found"
}

start() {
  local dir=$1 bin port
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  bin=$(postgres_bin)
  if [ "$(id -u)" -eq 0 ]; then
    chown "$SERVER_USER" "$dir"
    as_server test -w "$dir" ||
      die "$SERVER_USER cannot write to $dir: pick a directory every user can reach (for example under /tmp)"
  fi
  if as_server "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1 && [ -f "$dir/url" ]; then
    cat "$dir/url"
    return
  fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    as_server "$bin/initdb" -D "$dir/data" -U conclave --auth=trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
      die "initdb failed; see $dir/initdb.log"
  fi
  for _ in 1 2 3; do
    port=$(free_port)
    # fsync off: a throwaway cluster for tests needs no durability across crashes.
    if as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
      -o "-h 127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=200" start >/dev/null 2>&1; then
      echo "postgresql://conclave@127.0.0.1:$port/postgres" | tee "$dir/url"
      log "running in $dir (stop it with: bash scripts/postgres.sh stop $dir)"
      return
    fi
  done
  die "pg_ctl could not start PostgreSQL; see $dir/postgres.log"
}

stop() {
  local dir=$1 bin
  [ -d "$dir/data" ] || { log "no cluster in $dir"; return; }
  bin=$(postgres_bin)
  if as_server "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    as_server "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    log "stopped the cluster in $dir"
  fi
  rm -f "$dir/url"
}

[ $# -eq 2 ] || usage
SERVER_USER=$(server_user)
case "$1" in
  start) start "$2" ;;
  stop) stop "$2" ;;
  *) usage ;;
esac
