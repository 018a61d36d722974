#!/usr/bin/env bash
# Load benchmark of governed actions over HTTP (issues #5, #13 and #14), all on this machine's
# cores, with 64 connections on loopback.
# On SQLite (the release server on a fresh file):
#   1. sandbox: governed web.read, wrk at saturation;
#   2. HTTP connector: a governed $0.01 cards.charge whose connector calls the reference
#      upstream (a card processor, its own process);
#   3. the peer: the same charge through the Portkey AI gateway to the same upstream (no key,
#      kit, budget, hold or audit), loaded by the same wrk with the same connections;
#   then the ratio of 2 to 3, and oha at fixed rates with latency corrected for coordinated
#   omission: the sandbox at RATE (10,000/s), 2 and 3 at UPSTREAM_RATE (500/s: within what
#   both sustain).
# On PostgreSQL (a throwaway cluster from scripts/pg.sh, sharing the same cores):
#   4. the sandbox web.read on one instance, then 5. on two instances on the same database,
#   32 connections to each at once, their sum printed.
# Then the egress guard's cost (#30): the same charge over the HTTP connector on a second
#   release server whose outbound client is unguarded (a benchmark-only setting), in five
#   interleaved rounds against the first; the medians and their ratio.
# Then what metrics and traces cost (#36): the sandbox web.read with metrics off, on, and on
#   with traces exported to the reference OTLP receiver, five interleaved rounds (TELEMETRY=no
#   skips it).
# ENGINES picks the engines (default "sqlite postgres").
#   bench/http.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-15}"
engines=" ${ENGINES-sqlite postgres} "
command -v wrk >/dev/null || { echo "installing wrk (Debian package)"; sudo_apt=""; [ "$(id -u)" = 0 ] || sudo_apt=sudo; $sudo_apt apt-get install -y wrk >/dev/null; }
cargo build --release -p server --bin server --features test-switches
source bench/lib.sh
new_dir dir
# The reference upstream listens on loopback, which egress refuses unless allowed.
export NAIVE_NO_DEMO=true RUST_LOG=warn NAIVE_EGRESS_ALLOW=127.0.0.1/32

new_tenant() {
  company=$(target/release/server tenant create --name "HTTP bench" --credit 1000000 | sed -n 's/.*company key: \(nv_[A-Za-z0-9_]*\).*/\1/p')
}
api() { curl -sf -X "$1" "$base$2" -H "Authorization: Bearer $company" -H 'Content-Type: application/json' ${3:+-d "$3"}; }
json() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }
# One agent per connection would need one wrk script per key; the pipeline's cost does not
# depend on which agent calls, so the connections share one agent with a roomy budget.
agent() {
  local profile key
  profile=$(api POST /v1/agent-profiles "{\"name\":\"$1\",\"kit\":\"$2\"}" | json id)
  key=$(api POST "/v1/agent-profiles/$profile/keys" | json secret)
  echo "$profile $key"
}
governed() { # verb profile key seconds [base] [connections]
  BENCH_VERB="$1" BENCH_PROFILE="$2" BENCH_KEY="$3" \
    wrk -t2 -c"${6:-64}" -d"$4s" --latency -s bench/action.lua "${5:-$base}" | tail -1
}
fixed_rate() { # rate url body [oha arguments: headers]
  local rate="$1" url="$2" body="$3"
  shift 3
  oha --no-tui -z "${secs}s" -c 64 -q "$rate" --latency-correction -m POST -T application/json "$@" -d "$body" "$url" \
    | grep -E "Success rate|Requests/sec|Slowest|Fastest|Average|50.00%|90.00%|99.00%|99.90%|^ *\[[0-9]{3}\] "
}

sqlite_runs() {
  local upstream_secret upstream portkey portkey_port read_profile read_key charge_profile charge_key
  command -v oha >/dev/null || { echo "installing oha from crates.io (a few minutes, once)"; cargo install oha --locked; }
  # Portkey 1.15.2 with @hono/node-server pinned to 1.14.1 (bench/portkey/package.json): later
  # 1.x releases hand Portkey an upstream response whose headers are immutable on Node 20, and
  # Portkey appends to them, so every proxied call fails with "TypeError: immutable".
  [ -d bench/portkey/node_modules/@portkey-ai/gateway ] || { echo "installing the Portkey gateway (npm)"; npm ci --prefix bench/portkey --ignore-scripts --no-audit --no-fund >/dev/null; }
  upstream_secret="bench-upstream-$RANDOM$RANDOM"
  NAIVE_UPSTREAM_SECRET="$upstream_secret" target/release/server upstream --listen 127.0.0.1:0 --records "$dir/up.db" >"$dir/upstream.log" 2>&1 &
  pids+=($!)
  portkey_port=$(free_port)
  NODE_ENV=production node bench/portkey/node_modules/@portkey-ai/gateway/build/start-server.js --port="$portkey_port" --headless >"$dir/portkey.log" 2>&1 &
  pids+=($!)
  portkey="http://127.0.0.1:$portkey_port"
  export DATABASE_URL="sqlite://$dir/bench.db" NAIVE_MASTER_KEY_FILE="$dir/sqlite.master-key"
  new_tenant
  start_server "$dir/server.log"
  for _ in $(seq 100); do
    curl -sf "$portkey/" >/dev/null && grep -q 'http://' "$dir/upstream.log" && break
    sleep 0.1
  done
  upstream=$(grep -o 'http://[0-9.:]*' "$dir/upstream.log" | head -1)
  read -r read_profile read_key < <(agent bench-reader Default)
  api PUT /v1/kits/Charges '{"name":"Charges","primitives":["cards"],"limits":{"budget":{"hard_cap":"1000000"},"approve":{"above":"100"}}}' >/dev/null
  read -r charge_profile charge_key < <(agent bench-buyer Charges)
  api PUT /v1/vault/secrets/upstream "{\"value\":\"$upstream_secret\"}" >/dev/null
  api PUT /v1/connectors/cards "{\"kind\":\"http\",\"url\":\"$upstream/cards/charge\",\"timeout_ms\":10000,\"auth\":{\"kind\":\"bearer\",\"secret\":\"upstream\"}}" >/dev/null
  peer() { # seconds run
    BENCH_RUN="$2" BENCH_UPSTREAM="$upstream" BENCH_UPSTREAM_SECRET="$upstream_secret" \
      wrk -t2 -c64 -d"$1s" --latency -s bench/portkey.lua "$portkey" | tail -1
  }

  echo "warming up"
  governed web/read "$read_profile" "$read_key" 3 >/dev/null
  governed cards/charge "$charge_profile" "$charge_key" 3 >/dev/null
  peer 3 warm >/dev/null
  echo "== 1. SQLite, sandbox, saturation: wrk, 64 connections, as fast as the server answers"
  governed web/read "$read_profile" "$read_key" "$secs"
  echo "== 2. SQLite, HTTP connector to the reference upstream, saturation (same wrk, same connections)"
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
  local rate="${RATE:-10000}" up_rate="${UPSTREAM_RATE:-500}"
  echo "== sandbox at a fixed rate: oha, 64 connections, $rate actions/s, latency corrected for coordinated omission"
  fixed_rate "$rate" "$base/v1/users/$read_profile/web/read" '{"url":"https://bench.example.test/page"}' \
    -H "Authorization: Bearer $read_key"
  echo "== HTTP connector at a fixed rate: oha, 64 connections, $up_rate actions/s"
  fixed_rate "$up_rate" "$base/v1/users/$charge_profile/cards/charge" '{"amount":"0.01","merchant":"acme"}' \
    -H "Authorization: Bearer $charge_key"
  echo "== Portkey hop at a fixed rate: oha, 64 connections, $up_rate requests/s (one action id: the upstream replays it)"
  fixed_rate "$up_rate" "$portkey/v1/cards/charge" \
    '{"action_id":"portkey-fixed","action":"cards.charge","args":{"amount":"0.01","merchant":"acme"}}' \
    -H "Authorization: Bearer $upstream_secret" -H "x-portkey-provider: openai" -H "x-portkey-custom-host: $upstream"
  echo "server RSS: $(awk '/VmRSS/ {print $2/1024 " MB"}' /proc/$server/status)"
  egress_runs "$charge_profile" "$charge_key" "$upstream" "$upstream_secret"
}

# The same charge on a second server whose outbound client is unguarded, rounds interleaved
# with the first (guarded) one: how much the egress guard costs a governed call.
egress_runs() {
  local guarded="$base" profile_on="$1" key_on="$2" upstream="$3" upstream_secret="$4" profile_off key_off round
  local on=() off=()
  export DATABASE_URL="sqlite://$dir/unguarded.db" NAIVE_MASTER_KEY_FILE="$dir/unguarded.master-key"
  new_tenant
  NAIVE_EGRESS_UNGUARDED_FOR_BENCHMARKS=1 start_server "$dir/unguarded.log"
  api PUT /v1/kits/Charges '{"name":"Charges","primitives":["cards"],"limits":{"budget":{"hard_cap":"1000000"},"approve":{"above":"100"}}}' >/dev/null
  read -r profile_off key_off < <(agent bench-buyer Charges)
  api PUT /v1/vault/secrets/upstream "{\"value\":\"$upstream_secret\"}" >/dev/null
  api PUT /v1/connectors/cards "{\"kind\":\"http\",\"url\":\"$upstream/cards/charge\",\"timeout_ms\":10000,\"auth\":{\"kind\":\"bearer\",\"secret\":\"upstream\"}}" >/dev/null
  governed cards/charge "$profile_off" "$key_off" 3 >/dev/null
  echo "== egress guard on / off: the HTTP-connector charge, 5 interleaved rounds of ${EGRESS_SECS:-8} s"
  for round in 1 2 3 4 5; do
    on+=("$(governed cards/charge "$profile_on" "$key_on" "${EGRESS_SECS:-8}" "$guarded")")
    off+=("$(governed cards/charge "$profile_off" "$key_off" "${EGRESS_SECS:-8}" "$base")")
    echo "  round $round: guarded   ${on[-1]}"
    echo "  round $round: unguarded ${off[-1]}"
  done
  python3 - "${on[@]}" "${off[@]}" <<'EOF'
import re, statistics, sys
lines = sys.argv[1:]
rate = lambda l: float(re.search(r"([0-9.]+) \w+/s", l).group(1))
p99 = lambda l: float(re.search(r"p99 ([0-9.]+) ms", l).group(1))
on, off = lines[:len(lines) // 2], lines[len(lines) // 2:]
r_on, r_off = statistics.median(map(rate, on)), statistics.median(map(rate, off))
print(f"== egress guard on / off: {r_on:.0f} / {r_off:.0f} charges/s = {r_on / r_off:.3f}x "
      f"(target: within 3 %), p99 {statistics.median(map(p99, on)):.2f} / {statistics.median(map(p99, off)):.2f} ms")
EOF
  base="$guarded"
}

# What metrics and traces cost a governed call (#36): the sandbox web.read on four servers
# on fresh SQLite files (metrics off; metrics on, the default; metrics on with every trace
# exported to the reference OTLP receiver, its own process; the same with one trace in ten
# sampled; the same with none sampled, what an unsampled call costs) in five interleaved
# rounds; the medians and their ratios to metrics off. `ENGINES= bench/http.sh` runs only this.
telemetry_runs() {
  local otlp profile key round before line sides=(off metrics traced sampled unsampled) bases=() profiles=() keys=() servers=() lines=()
  target/release/server otlp-receiver --listen 127.0.0.1:0 >"$dir/otlp.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q 'http://' "$dir/otlp.log" && break; sleep 0.1; done
  otlp=$(grep -o 'http://[0-9.:]*' "$dir/otlp.log" | head -1)
  for side in "${sides[@]}"; do
    export DATABASE_URL="sqlite://$dir/telemetry-$side.db" NAIVE_MASTER_KEY_FILE="$dir/telemetry-$side.master-key"
    new_tenant
    case "$side" in
      off) NAIVE_METRICS=off start_server "$dir/telemetry-$side.log" ;;
      metrics) start_server "$dir/telemetry-$side.log" ;;
      traced) OTEL_EXPORTER_OTLP_ENDPOINT="$otlp" start_server "$dir/telemetry-$side.log" ;;
      # What an operator at this rate would set: one trace in ten, whole (parent-based).
      sampled) OTEL_EXPORTER_OTLP_ENDPOINT="$otlp" OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.1 \
        start_server "$dir/telemetry-$side.log" ;;
      unsampled) OTEL_EXPORTER_OTLP_ENDPOINT="$otlp" OTEL_TRACES_SAMPLER=always_off start_server "$dir/telemetry-$side.log" ;;
    esac
    read -r profile key < <(agent bench-reader Default)
    governed web/read "$profile" "$key" 3 >/dev/null
    bases+=("$base") profiles+=("$profile") keys+=("$key") servers+=("$server")
  done
  echo "== metrics off / on / on with traces to a local OTLP receiver: sandbox web.read, 5 interleaved rounds of ${TELEMETRY_SECS:-8} s"
  for round in 1 2 3 4 5; do
    for i in "${!sides[@]}"; do
      # The server's CPU per call beside the rate: the load client and the OTLP receiver
      # share these cores, so calls/s swings with them; the server's own CPU per call less so.
      before=$(cpu_ticks "${servers[$i]}")
      line=$(governed web/read "${profiles[$i]}" "${keys[$i]}" "${TELEMETRY_SECS:-8}" "${bases[$i]}")
      lines+=("${sides[$i]} $line, server CPU $(cpu_per_call "$before" "${servers[$i]}" "$line" "${TELEMETRY_SECS:-8}") µs/call")
      echo "  round $round: ${lines[-1]}"
    done
  done
  echo "  spans the receiver got: $(curl -sf "$otlp/spans")"
  python3 - "${lines[@]}" <<'EOF'
import re, statistics, sys
rates, cpus = {}, {}
for line in sys.argv[1:]:
    side = line.split()[0]
    rates.setdefault(side, []).append(float(re.search(r"([0-9.]+) \w+/s", line).group(1)))
    cpus.setdefault(side, []).append(float(re.search(r"server CPU ([0-9.]+)", line).group(1)))
off, on, traced, sampled, unsampled = (statistics.median(rates[s]) for s in ("off", "metrics", "traced", "sampled", "unsampled"))
cpu = {s: statistics.median(v) for s, v in cpus.items()}
print("== server CPU per call (median): " + ", ".join(f"{s} {c:.1f} µs" for s, c in cpu.items())
      + f"; as calls/s on the same CPU, traced / off {cpu['off'] / cpu['traced']:.3f}x, "
      f"one in ten / off {cpu['off'] / cpu['sampled']:.3f}x, none sampled / off {cpu['off'] / cpu['unsampled']:.3f}x")
print(f"== over HTTP, metrics on / off: {on:.0f} / {off:.0f} actions/s = {on / off:.3f}x (target: within 3 %); "
      f"traced / off: {traced:.0f} / {off:.0f} = {traced / off:.3f}x (target: at least 0.92x); "
      f"one trace in ten / off: {sampled:.0f} / {off:.0f} = {sampled / off:.3f}x; "
      f"none sampled / off: {unsampled:.0f} / {off:.0f} = {unsampled / off:.3f}x (target: within 3 %)")
EOF
}

postgres_runs() {
  local profile key first second a b
  eval "$(scripts/pg.sh start)"
  psql "$NAIVE_TEST_POSTGRES_URL" -qc "CREATE DATABASE naive_http"
  export DATABASE_URL="${NAIVE_TEST_POSTGRES_URL%/*}/naive_http" NAIVE_MASTER_KEY_FILE="$dir/postgres.master-key"
  new_tenant
  start_server "$dir/pg-first.log"
  first=$base
  read -r profile key < <(agent bench-reader Default)
  governed web/read "$profile" "$key" 3 >/dev/null
  echo "== 4. PostgreSQL, one instance, sandbox, saturation: wrk, 64 connections"
  governed web/read "$profile" "$key" "$secs"
  start_server "$dir/pg-second.log"
  second=$base
  echo "== 5. PostgreSQL, two instances on one database: 32 connections to each at once"
  governed web/read "$profile" "$key" "$secs" "$first" 32 >"$dir/a" &
  a=$!
  governed web/read "$profile" "$key" "$secs" "$second" 32 >"$dir/b"
  wait "$a"
  sed 's/^/  first:  /' "$dir/a"
  sed 's/^/  second: /' "$dir/b"
  python3 - "$(cat "$dir/a")" "$(cat "$dir/b")" <<'EOF'
import re, sys
rates = [float(re.search(r"([0-9.]+) actions/s", line).group(1)) for line in sys.argv[1:]]
p99s = [float(re.search(r"p99 ([0-9.]+) ms", line).group(1)) for line in sys.argv[1:]]
print(f"  both: {sum(rates):.0f} actions/s, the worse p99 {max(p99s):.2f} ms")
EOF
}

case "$engines" in *" sqlite "*) sqlite_runs ;; esac
case " ${TELEMETRY:-yes} " in *" yes "*) telemetry_runs ;; esac
case "$engines" in *" postgres "*) postgres_runs ;; esac
