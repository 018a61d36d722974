#!/usr/bin/env bash
# Server-side render time of the console's busiest pages (issues #6, #16, #34): the overview, the approval inbox and
# a profile's spend ledger, on a small database and on one with 100,000 approvals and
# 1,000,000 ledger entries, so the two can be compared, with and without a period filter. Each page is fetched one request at a
# time by a signed-in client (oha, -c 1), so the figures are render latency, not queueing.
#   bench/console.sh [requests per page]
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-500}"
command -v oha >/dev/null || { echo "installing oha from crates.io (a few minutes, once)"; cargo install oha --locked; }
cargo build --release -p server --bin server -p gateway --bin gateway-load
dir="$(mktemp -d)"
server=""
# `wait` answers a killed process's status, which errexit would take as a failure of the trap.
cleanup() { [ -z "$server" ] || { kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; } || true; rm -rf "$dir"; }
trap cleanup EXIT

run() {
  local label="$1" approvals="$2" ledger="$3" every="${4:-100}" db="$dir/$1.db"
  echo "== $label: $approvals approvals (1 in $every waiting), $ledger ledger entries"
  local out; out=$(target/release/gateway-load seed-console --db "$db" --approvals "$approvals" --ledger "$ledger" --waiting-every "$every")
  echo "$out" | head -1
  local password profile
  password=$(echo "$out" | sed -n 's/^admin password: //p')
  profile=$(echo "$out" | sed -n 's/^profile: //p')
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  DATABASE_URL="sqlite://$db" RUST_LOG=warn target/release/server --bind "127.0.0.1:$port" >"$dir/$label.log" 2>&1 &
  server=$!
  for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  local base="http://127.0.0.1:$port"
  local cookie; cookie=$(curl -s -o /dev/null -D - -X POST "$base/login" --data-urlencode "username=admin" --data-urlencode "password=$password" \
    | sed -n 's/^[Ss]et-[Cc]ookie: \(naive_session=[^;]*\).*/\1/p')
  [ -n "$cookie" ] || { echo "sign-in failed"; cat "$dir/$label.log"; exit 1; }
  # The ledger's period filter too: the last week, and a ten-day period six weeks back (the
  # seeded entries span 60 days).
  local week ago50 ago40
  week=$(date -u -d '7 days ago' +%F); ago50=$(date -u -d '50 days ago' +%F); ago40=$(date -u -d '40 days ago' +%F)
  for page in "/overview" "/" "/spend?profile=$profile" "/spend?profile=$profile&from=$week" "/spend?profile=$profile&from=$ago50&to=$ago40"; do
    # Warm the page cache and prepared statements first.
    oha --no-tui -n 50 -c 1 -H "Cookie: $cookie" "$base$page" >/dev/null
    echo "-- GET $page ($n requests, one at a time)"
    oha --no-tui -n "$n" -c 1 -H "Cookie: $cookie" "$base$page" | grep -E "Success rate|50.00%|99.00%|\[[0-9]{3}\]"
  done
  kill "$server"; wait "$server" 2>/dev/null || true; server=""
}

run small 10000 10000
run large 100000 1000000
# Issue #34: every one of 100,000 approvals waiting, half of them needing two approvers with
# one vote in (the inbox reads their progress).
run waiting 100000 10000 1
