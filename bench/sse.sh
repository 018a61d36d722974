#!/usr/bin/env bash
# SSE fan-out benchmark (issues #5 and #13), on each engine in turn: the release server on a
# fresh database, 1,000 `/v1/events` subscribers on one tenant, and an agent's actions at a
# fixed rate. Prints the commit-to-delivery latency and the server's memory as subscribers
# join. Then the same with a second instance on the same database: actions go to the first,
# the subscribers listen on the second, so each event crosses instances (on SQLite the
# second's follower publishes it; on PostgreSQL, LISTEN/NOTIFY). ENGINES picks the engines
# (default "sqlite postgres"; PostgreSQL is a throwaway cluster from scripts/pg.sh).
#   bench/sse.sh [subscribers] [actions per second] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
subs="${1:-1000}" rate="${2:-50}" secs="${3:-10}"
[ -n "${NO_BUILD:-}" ] || cargo build --release -p server --bin server --example sse_fanout
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
source bench/lib.sh

run_engine() { # label database-url
  local dir company base server base2 second profile key
  new_dir dir
  export DATABASE_URL="$2" NAIVE_NO_DEMO=true RUST_LOG=warn NAIVE_MASTER_KEY_FILE="$dir/master-key"
  company=$(target/release/server tenant create --name "SSE bench" --credit 1000000 | sed -n 's/.*company key: \(nv_[A-Za-z0-9_]*\).*/\1/p')
  start_server "$dir/server.log"
  profile=$(curl -sf -X POST "$base/v1/agent-profiles" -H "Authorization: Bearer $company" -H 'Content-Type: application/json' \
    -d '{"name":"fanout-agent","kit":"Default"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  key=$(curl -sf -X POST "$base/v1/agent-profiles/$profile/keys" -H "Authorization: Bearer $company" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')
  echo "== $1, one instance: subscribers and actions on the same server"
  target/release/examples/sse_fanout --base "$base" --company-key "$company" --agent-key "$key" \
    --profile "$profile" --subscribers "$subs" --rate "$rate" --seconds "$secs" --server-pid "$server"
  local first=$base first_pid=$server
  start_server "$dir/second.log"
  base2=$base second=$server
  base=$first server=$first_pid
  echo "== $1, two instances on one database: actions on the first, subscribers on the second"
  target/release/examples/sse_fanout --base "$base" --subscribe-base "$base2" --company-key "$company" \
    --agent-key "$key" --profile "$profile" --subscribers "$subs" --rate "$rate" --seconds "$secs" --server-pid "$second"
  kill "$server" "$second"
  while kill -0 "$server" 2>/dev/null || kill -0 "$second" 2>/dev/null; do sleep 0.1; done
}

for engine in ${ENGINES:-sqlite postgres}; do
  case "$engine" in
    sqlite)
      new_dir d
      run_engine SQLite "sqlite://$d/bench.db"
      ;;
    postgres)
      eval "$(scripts/pg.sh start)"
      psql "$NAIVE_TEST_POSTGRES_URL" -qc "CREATE DATABASE naive_sse"
      run_engine PostgreSQL "${NAIVE_TEST_POSTGRES_URL%/*}/naive_sse"
      ;;
    *) echo "unknown engine: $engine (sqlite or postgres)" >&2; exit 2 ;;
  esac
done
