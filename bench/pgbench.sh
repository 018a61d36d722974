#!/usr/bin/env bash
# PostgreSQL's own ceiling on this machine, beside `gateway-load bench --engines postgres`:
# pgbench (shipped with PostgreSQL) at the same 64 clients, on the cluster in
# NAIVE_TEST_POSTGRES_URL (scripts/pg.sh: fsync off, as SQLite's synchronous=NORMAL does not
# sync each commit either). `-N` is a 7-statement write transaction; a governed action costs
# two statements in a batch of its tenant's (bench/pg-targets.sh compares the two).
#   eval "$(scripts/pg.sh start)"; bench/pgbench.sh; scripts/pg.sh stop
set -euo pipefail
url="${NAIVE_TEST_POSTGRES_URL:?start a cluster first: eval \"\$(scripts/pg.sh start)\"}"
pgbench="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/pgbench"
base="${url%/*}"
export PGOPTIONS=--client-min-messages=warning
psql "$url" -qc "DROP DATABASE IF EXISTS naive_pgbench" -c "CREATE DATABASE naive_pgbench"
trap 'psql "$url" -qc "DROP DATABASE IF EXISTS naive_pgbench"' EXIT
"$pgbench" -q -i -s 10 "$base/naive_pgbench" >/dev/null 2>&1
for mode in N S; do
  out=$("$pgbench" -c 64 -j 2 -T "${SECS:-10}" "-$mode" "$base/naive_pgbench" 2>&1)
  tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  lat=$(echo "$out" | sed -n 's/^latency average = \([0-9.]*\).*/\1/p')
  label=$([ "$mode" = N ] && echo "simple update (-N), 7 statements" || echo "select only (-S), 1 statement")
  printf 'pgbench %-36s %9.0f txn/s   mean %6.2f ms\n' "$label" "$tps" "$lat"
done
