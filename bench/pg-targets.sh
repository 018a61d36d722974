#!/usr/bin/env bash
# One big tenant on PostgreSQL (issue #52, after #32), side by side in one run on the cluster
# in NAIVE_TEST_POSTGRES_URL (scripts/pg.sh): `gateway-load bench` on SQLite and PostgreSQL
# (one and two instances) for one tenant, PostgreSQL for 16 tenants, then pgbench on the same
# cluster; each row as measured, then the ratios the issue asks for:
#   one tenant / pgbench -N (target >= 0.6), one tenant / 16 tenants (>= 0.9),
#   two instances / one (>= 1.0), PostgreSQL p99 / SQLite p99 at 64 callers (<= 3),
#   a tenant's lock held per action (<= 50 µs, measured by the runners).
#   eval "$(scripts/pg.sh start)"; bench/pg-targets.sh [actions=60000]; scripts/pg.sh stop
set -euo pipefail
cd "$(dirname "$0")/.."
: "${NAIVE_TEST_POSTGRES_URL:?start a cluster first: eval \"\$(scripts/pg.sh start)\"}"
actions="${1:-60000}"
bin="${GATEWAY_LOAD:-target/release/gateway-load}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$bin" bench --callers 64 --actions "$actions" --engines sqlite,postgres | tee "$out"
"$bin" bench --callers 64 --tenants 16 --actions "$actions" --engines postgres \
  | sed 's/^PostgreSQL, one instance /PostgreSQL, 16 tenants, one instance/; s/^PostgreSQL, two instances/PostgreSQL, 16 tenants, two instances/' \
  | tee -a "$out"
SECS="${SECS:-10}" bench/pgbench.sh | tee -a "$out"
# A row's figure: the number before "actions/s" (or "txn/s"), or after "p99".
rate() { grep -m1 "^$1" "$out" | sed -n 's/.* \([0-9.]*\) \(actions\|txn\)\/s.*/\1/p'; }
p99() { grep -m1 "^$1" "$out" | sed -n 's/.* p99 *\([0-9.]*\) ms.*/\1/p'; }
held=$(grep -m2 "lock held" "$out" | head -1 | sed -n 's/.*lock held \([0-9.]*\) µs.*/\1/p')
one=$(rate "PostgreSQL, one instance") two=$(rate "PostgreSQL, two instances")
sixteen=$(rate "PostgreSQL, 16 tenants, one instance") pgb=$(rate "pgbench simple update")
echo
echo "issue #52 targets, this run:"
awk -v one="$one" -v two="$two" -v sixteen="$sixteen" -v pgb="$pgb" -v held="$held" \
  -v pp="$(p99 "PostgreSQL, one instance")" -v sp="$(p99 "SQLite, group commit")" 'BEGIN {
  printf "  one tenant / pgbench -N        %6.2f  (%s / %s; target >= 0.6)\n", one / pgb, one, pgb
  printf "  one tenant / 16 tenants        %6.2f  (%s / %s; target >= 0.9)\n", one / sixteen, one, sixteen
  printf "  two instances / one            %6.2f  (%s / %s; target >= 1.0)\n", two / one, two, one
  printf "  p99 PostgreSQL / SQLite        %6.2f  (%s ms / %s ms; target <= 3)\n", pp / sp, pp, sp
  printf "  tenant lock held per action    %6.1f µs (one tenant, one instance; target <= 50)\n", held
}'
# Issue #33: a kit with three period limits and a rate limit against today's lifetime kit,
# the same reads in the same run (target: within 10 %).
awk -v sl="$(rate "SQLite, group commit ")" -v sp="$(rate "SQLite, group commit, 3 periods")" \
  -v pl="$one" -v pp="$(rate "PostgreSQL, one instance, 3 periods")" 'BEGIN {
  printf "issue #33 target, this run:\n"
  printf "  SQLite, periods kit / lifetime kit      %6.2f  (%s / %s; target >= 0.9)\n", sp / sl, sp, sl
  printf "  PostgreSQL, periods kit / lifetime kit  %6.2f  (%s / %s; target >= 0.9)\n", pp / pl, pp, pl
}'
