#!/usr/bin/env bash
# Load benchmark of governed actions over HTTP (issues #5 and #14), all on this machine's cores:
# the release server on a fresh SQLite file, the reference upstream (a card processor, its own
# process), the Portkey AI gateway as the peer, and 64 connections on loopback.
#   1. sandbox: governed web.read, wrk at saturation, then oha at a fixed rate (10,000/s, or
#      RATE) with latency corrected for coordinated omission;
#   2. HTTP connector: a governed $0.01 cards.charge whose connector calls the upstream;
#   3. the peer: the same charge through Portkey to the same upstream (no key, kit, budget,
#      hold or audit), loaded by the same wrk with the same connections;
# then the ratio of 2 to 3, and both again at a fixed rate (UPSTREAM_RATE, 500/s: within what both sustain).
#   bench/http.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-15}"
command -v wrk >/dev/null || { echo "installing wrk (Debian package)"; sudo_apt=""; [ "$(id -u)" = 0 ] || sudo_apt=sudo; $sudo_apt apt-get install -y wrk >/dev/null; }
command -v oha >/dev/null || { echo "installing oha from crates.io (a few minutes, once)"; cargo install oha --locked; }
# Portkey 1.15.2 with @hono/node-server pinned to 1.14.1 (bench/portkey/package.json): later
# 1.x releases hand Portkey an upstream response whose headers are immutable on Node 20, and
# Portkey appends to them, so every proxied call fails with "TypeError: immutable".
[ -d bench/portkey/node_modules/@portkey-ai/gateway ] || { echo "installing the Portkey gateway (npm)"; npm ci --prefix bench/portkey --ignore-scripts --no-audit --no-fund >/dev/null; }
cargo build --release -p server --bin server
dir="$(mktemp -d)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
pids=()
# `wait` answers a killed process's status, which errexit would take as a failure of the trap.
trap 'kill "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; rm -rf "$dir"' EXIT
upstream_secret="bench-upstream-$RANDOM$RANDOM"
NAIVE_UPSTREAM_SECRET="$upstream_secret" target/release/server upstream --listen 127.0.0.1:0 --records "$dir/up.db" >"$dir/upstream.log" 2>&1 &
pids+=($!)
export DATABASE_URL="sqlite://$dir/bench.db" NAIVE_NO_DEMO=true RUST_LOG=warn
company=$(target/release/server tenant create --name "HTTP bench" --credit 1000000 | sed -n 's/.*company key: \(nv_[A-Za-z0-9_]*\).*/\1/p')
target/release/server --bind "127.0.0.1:$port" >"$dir/server.log" 2>&1 &
server=$!
pids+=($server)
portkey_port=$(free_port)
NODE_ENV=production node bench/portkey/node_modules/@portkey-ai/gateway/build/start-server.js --port="$portkey_port" --headless >"$dir/portkey.log" 2>&1 &
pids+=($!)
base="http://127.0.0.1:$port"
portkey="http://127.0.0.1:$portkey_port"
for _ in $(seq 100); do
  curl -sf "$base/healthz" >/dev/null && curl -sf "$portkey/" >/dev/null && grep -q 'http://' "$dir/upstream.log" && break
  sleep 0.1
done
upstream=$(grep -o 'http://[0-9.:]*' "$dir/upstream.log" | head -1)
api() { curl -sf -X "$1" "$base$2" -H "Authorization: Bearer $company" -H 'Content-Type: application/json' ${3:+-d "$3"}; }
json() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }
# One agent per connection would need one wrk script per key; the pipeline's cost does not
# depend on which agent calls, so the 64 connections share one agent with a roomy budget.
agent() {
  local profile key
  profile=$(api POST /v1/agent-profiles "{\"name\":\"$1\",\"kit\":\"$2\"}" | json id)
  key=$(api POST "/v1/agent-profiles/$profile/keys" | json secret)
  echo "$profile $key"
}
read -r read_profile read_key < <(agent bench-reader Default)
api PUT /v1/kits/Charges '{"name":"Charges","primitives":["cards"],"limits":{"budget":{"hard_cap":"1000000"},"approve":{"above":"100"}}}' >/dev/null
read -r charge_profile charge_key < <(agent bench-buyer Charges)
api PUT /v1/vault/secrets/upstream "{\"value\":\"$upstream_secret\"}" >/dev/null
api PUT /v1/connectors/cards "{\"kind\":\"http\",\"url\":\"$upstream/cards/charge\",\"timeout_ms\":10000,\"auth\":{\"kind\":\"bearer\",\"secret\":\"upstream\"}}" >/dev/null

governed() { # verb profile key seconds
  BENCH_VERB="$1" BENCH_PROFILE="$2" BENCH_KEY="$3" wrk -t2 -c64 -d"$4s" --latency -s bench/action.lua "$base" | tail -1
}
peer() { # seconds run
  BENCH_RUN="$2" BENCH_UPSTREAM="$upstream" BENCH_UPSTREAM_SECRET="$upstream_secret" \
    wrk -t2 -c64 -d"$1s" --latency -s bench/portkey.lua "$portkey" | tail -1
}
fixed_rate() { # rate url body [oha arguments: headers]
  local rate="$1" url="$2" body="$3"
  shift 3
  oha --no-tui -z "${secs}s" -c 64 -q "$rate" --latency-correction -m POST -T application/json "$@" -d "$body" "$url" \
    | grep -E "Success rate|Requests/sec|Slowest|Fastest|Average|50.00%|90.00%|99.00%|99.90%|^ *\[[0-9]{3}\] "
}

echo "warming up"
governed web/read "$read_profile" "$read_key" 3 >/dev/null
governed cards/charge "$charge_profile" "$charge_key" 3 >/dev/null
peer 3 warm >/dev/null
echo "== 1. sandbox, saturation: wrk, 64 connections, as fast as the server answers"
governed web/read "$read_profile" "$read_key" "$secs"
echo "== 2. HTTP connector to the reference upstream, saturation (same wrk, same connections)"
gateway_line=$(governed cards/charge "$charge_profile" "$charge_key" "$secs")
echo "$gateway_line"
echo "== 3. peer: the Portkey gateway proxying the same charge to the same upstream, saturation"
peer_line=$(peer "$secs" run)
echo "$peer_line"
python3 - "$gateway_line" "$peer_line" <<'EOF'
import re, sys
def figures(line):
    rate, p99 = re.search(r"([0-9.]+) \w+/s", line), re.search(r"p99 ([0-9.]+) ms", line)
    return float(rate.group(1)), float(p99.group(1))
(g, gp99), (p, pp99) = figures(sys.argv[1]), figures(sys.argv[2])
print(f"== governed calls over the HTTP connector / Portkey hop: {g / p:.2f}x the requests/s "
      f"(target >= 1.5x), p99 {gp99:.2f} ms against {pp99:.2f} ms (target: lower)")
EOF
rate="${RATE:-10000}"
echo "== sandbox at a fixed rate: oha, 64 connections, $rate actions/s, latency corrected for coordinated omission"
fixed_rate "$rate" "$base/v1/users/$read_profile/web/read" '{"url":"https://bench.example.test/page"}' \
  -H "Authorization: Bearer $read_key"
up_rate="${UPSTREAM_RATE:-500}"
echo "== HTTP connector at a fixed rate: oha, 64 connections, $up_rate actions/s"
fixed_rate "$up_rate" "$base/v1/users/$charge_profile/cards/charge" '{"amount":"0.01","merchant":"acme"}' \
  -H "Authorization: Bearer $charge_key"
echo "== Portkey hop at a fixed rate: oha, 64 connections, $up_rate requests/s (one action id: the upstream replays it)"
fixed_rate "$up_rate" "$portkey/v1/cards/charge" \
  '{"action_id":"portkey-fixed","action":"cards.charge","args":{"amount":"0.01","merchant":"acme"}}' \
  -H "Authorization: Bearer $upstream_secret" -H "x-portkey-provider: openai" -H "x-portkey-custom-host: $upstream"
echo "server RSS: $(awk '/VmRSS/ {print $2/1024 " MB"}' /proc/$server/status)"
