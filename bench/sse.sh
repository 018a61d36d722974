#!/usr/bin/env bash
# SSE fan-out benchmark (issue #5): the release server on a fresh SQLite file, 1,000
# `/v1/events` subscribers on one tenant, and an agent's actions at a fixed rate. Prints the
# commit-to-delivery latency and the server's memory as subscribers join. Then the same with
# a second instance on the same file: actions go to the first, the subscribers listen on the
# second, so each event crosses instances (the second's follower publishes it).
#   bench/sse.sh [subscribers] [actions per second] [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
subs="${1:-1000}" rate="${2:-50}" secs="${3:-10}"
cargo build --release -p server --bin server --example sse_fanout
dir="$(mktemp -d)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export DATABASE_URL="sqlite://$dir/bench.db" NAIVE_NO_DEMO=true RUST_LOG=warn
company=$(target/release/server tenant create --name "SSE bench" --credit 1000000 | sed -n 's/.*company key: \(nv_[A-Za-z0-9_]*\).*/\1/p')
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
target/release/server --bind "127.0.0.1:$port" >"$dir/server.log" 2>&1 &
server=$!
second=""
trap 'kill $server $second 2>/dev/null; wait $server $second 2>/dev/null; rm -rf "$dir"' EXIT
base="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && break; sleep 0.1; done
profile=$(curl -sf -X POST "$base/v1/agent-profiles" -H "Authorization: Bearer $company" -H 'Content-Type: application/json' \
  -d '{"name":"fanout-agent","kit":"Default"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
key=$(curl -sf -X POST "$base/v1/agent-profiles/$profile/keys" -H "Authorization: Bearer $company" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')
echo "== one instance: subscribers and actions on the same server"
target/release/examples/sse_fanout --base "$base" --company-key "$company" --agent-key "$key" \
  --profile "$profile" --subscribers "$subs" --rate "$rate" --seconds "$secs" --server-pid "$server"
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
target/release/server --bind "127.0.0.1:$port2" >"$dir/second.log" 2>&1 &
second=$!
base2="http://127.0.0.1:$port2"
for _ in $(seq 100); do curl -sf "$base2/healthz" >/dev/null && break; sleep 0.1; done
echo "== two instances on one database: actions on the first, subscribers on the second"
target/release/examples/sse_fanout --base "$base" --subscribe-base "$base2" --company-key "$company" \
  --agent-key "$key" --profile "$profile" --subscribers "$subs" --rate "$rate" --seconds "$secs" --server-pid "$second"
