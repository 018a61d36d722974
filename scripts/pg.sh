#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb in a temporary directory, started on a
# free loopback port with trust authentication, stopped (and its directory deleted) by `stop`.
# Installs Debian's postgresql when its binaries are missing. initdb refuses to run as root, so
# as root the cluster runs as the `postgres` user the package creates.
#   eval "$(scripts/pg.sh start)"   exports NAIVE_PG_DIR and NAIVE_TEST_POSTGRES_URL
#   scripts/pg.sh stop               stops the cluster in $NAIVE_PG_DIR and deletes it
set -euo pipefail
cd "$(dirname "$0")/.."

bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
as_owner() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

start() {
  if [ -z "$(bin)" ]; then
    echo "==> installing PostgreSQL from Debian" >&2
    if [ "$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
    else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; fi
  fi
  local pg dir port
  pg="$(bin)"
  dir="$(mktemp -d /tmp/naive-pg.XXXXXX)"
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  as_owner "$pg/initdb" -D "$dir/data" -A trust -U postgres >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  as_owner "$pg/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null \
    || { cat "$dir/server.log" >&2; exit 1; }
  echo "export NAIVE_PG_DIR=$dir NAIVE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:$port/postgres"
}

stop() {
  local dir="${NAIVE_PG_DIR:?no cluster: NAIVE_PG_DIR is unset}"
  as_owner "$(bin)/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: scripts/pg.sh start|stop" >&2; exit 2 ;;
esac
