#!/usr/bin/env bash
# Load benchmark of governed actions over HTTP (issue #5): the release server on a fresh
# SQLite file, and 64 connections on loopback, all on this machine's cores: wrk at saturation
# (the most actions/s), then oha at a fixed rate (10,000/s, or RATE) with latency corrected for
# coordinated omission. Prints actions/s and latency percentiles.
#   bench/http.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-15}"
command -v wrk >/dev/null || { echo "installing wrk (Debian package)"; sudo_apt=""; [ "$(id -u)" = 0 ] || sudo_apt=sudo; $sudo_apt apt-get install -y wrk >/dev/null; }
command -v oha >/dev/null || { echo "installing oha from crates.io (a few minutes, once)"; cargo install oha --locked; }
cargo build --release -p server --bin server
dir="$(mktemp -d)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export DATABASE_URL="sqlite://$dir/bench.db" NAIVE_NO_DEMO=true RUST_LOG=warn
company=$(target/release/server tenant create --name "HTTP bench" --credit 1000000 | sed -n 's/.*company key: \(nv_[A-Za-z0-9_]*\).*/\1/p')
target/release/server --bind "127.0.0.1:$port" >"$dir/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
base="http://127.0.0.1:$port"
# One agent per connection would need one wrk script per key; the pipeline's cost does not
# depend on which agent calls, so the 64 connections share one agent with a roomy budget.
profile=$(curl -sf -X POST "$base/v1/agent-profiles" -H "Authorization: Bearer $company" -H 'Content-Type: application/json' \
  -d '{"name":"bench-agent","kit":"Default"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
key=$(curl -sf -X POST "$base/v1/agent-profiles/$profile/keys" -H "Authorization: Bearer $company" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')
export BENCH_KEY="$key" BENCH_PROFILE="$profile"
echo "warming up"
wrk -t2 -c64 -d3s -s bench/action.lua "$base" >/dev/null
echo "== saturation: wrk, 64 connections, as fast as the server answers"
wrk -t2 -c64 -d"${secs}s" --latency -s bench/action.lua "$base"
rate="${RATE:-10000}"
echo "== fixed rate: oha, 64 connections, $rate actions/s, latency corrected for coordinated omission"
oha --no-tui -z "${secs}s" -c 64 -q "$rate" --latency-correction -m POST -T application/json \
  -H "Authorization: Bearer $key" -d '{"url":"https://bench.example.test/page"}' \
  "$base/v1/users/$profile/web/read" | grep -E "Success rate|Requests/sec|Slowest|Fastest|Average|50.00%|90.00%|99.00%|99.90%|\[[0-9]{3}\]"
echo "server RSS: $(awk '/VmRSS/ {print $2/1024 " MB"}' /proc/$server/status)"
