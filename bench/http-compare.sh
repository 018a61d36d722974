#!/usr/bin/env bash
# The governed rows of `make bench-http` for two builds side by side, in one run on these
# cores (issue #31: a refactor must leave them within noise). OLD and NEW are two `server`
# release binaries (build one in a worktree and copy it aside). Each gets its own servers:
# SQLite on a fresh file, and PostgreSQL on its own database in one throwaway cluster, all
# beside one reference upstream (a card processor, its own process). Rounds alternate the
# two builds row by row, the order swapping each round, so this machine's drift falls on
# both; then each row's median requests/s, p99 and server CPU per request (wrk and the
# upstream share these cores, so CPU per request moves less than requests/s), and NEW/OLD.
# Rows: 1. the sandbox web.read on SQLite, 2. a $0.01 cards.charge over the HTTP connector
# to the upstream on SQLite, 3. the sandbox web.read on PostgreSQL; wrk, 64 connections.
#   bench/http-compare.sh OLD NEW [rounds=5] [seconds=8]
set -euo pipefail
cd "$(dirname "$0")/.."
old="$1" new="$2" rounds="${3:-5}" secs="${4:-8}"
command -v wrk >/dev/null || { echo "installing wrk (Debian package)"; sudo_apt=""; [ "$(id -u)" = 0 ] || sudo_apt=sudo; $sudo_apt apt-get install -y wrk >/dev/null; }
cargo build --release -p server --bin server
source bench/lib.sh
new_dir dir
# The reference upstream listens on loopback, which egress refuses unless allowed.
export NAIVE_NO_DEMO=true RUST_LOG=warn NAIVE_EGRESS_ALLOW=127.0.0.1/32
eval "$(scripts/pg.sh start)"
secret="bench-upstream-$RANDOM$RANDOM"
NAIVE_UPSTREAM_SECRET="$secret" target/release/server upstream --listen 127.0.0.1:0 --records "$dir/up.db" >"$dir/upstream.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'http://' "$dir/upstream.log" && break; sleep 0.1; done
upstream=$(grep -o 'http://[0-9.:]*' "$dir/upstream.log" | head -1)

api() { curl -sf -X "$1" "$base$2" -H "Authorization: Bearer $company" -H 'Content-Type: application/json' ${3:+-d "$3"}; }
json() { python3 -c "import json,sys; print(json.load(sys.stdin)[\"$1\"])"; }
agent() { # name kit -> "profile key"
  local profile key
  profile=$(api POST /v1/agent-profiles "{\"name\":\"$1\",\"kit\":\"$2\"}" | json id)
  key=$(api POST "/v1/agent-profiles/$profile/keys" | json secret)
  echo "$profile $key"
}

# Starts BIN on DATABASE_URL with a tenant, a reader and a buyer whose charges go to the
# upstream; appends "tag engine base reader key buyer key" to $dir/targets.
serve() { # tag bin engine
  company=$("$2" tenant create --name "HTTP compare" --credit 1000000 | sed -n 's/.*company key: \(nv_[A-Za-z0-9_]*\).*/\1/p')
  SERVER_BIN="$2" start_server "$dir/$1-$3.log"
  local reader buyer
  reader=$(agent bench-reader Default)
  api PUT /v1/kits/Charges '{"name":"Charges","primitives":["cards"],"limits":{"budget":{"hard_cap":"1000000"},"approve":{"above":"100"}}}' >/dev/null
  buyer=$(agent bench-buyer Charges)
  api PUT /v1/vault/secrets/upstream "{\"value\":\"$secret\"}" >/dev/null
  api PUT /v1/connectors/cards "{\"kind\":\"http\",\"url\":\"$upstream/cards/charge\",\"timeout_ms\":10000,\"auth\":{\"kind\":\"bearer\",\"secret\":\"upstream\"}}" >/dev/null
  echo "$1 $3 $base $reader $buyer $server" >>"$dir/targets"
}
for tag in old new; do
  bin=$old
  [ "$tag" = new ] && bin=$new
  DATABASE_URL="sqlite://$dir/$tag.db" NAIVE_MASTER_KEY_FILE="$dir/$tag-sqlite.key" serve "$tag" "$bin" sqlite
  psql "$NAIVE_TEST_POSTGRES_URL" -qc "CREATE DATABASE compare_$tag"
  DATABASE_URL="${NAIVE_TEST_POSTGRES_URL%/*}/compare_$tag" NAIVE_MASTER_KEY_FILE="$dir/$tag-pg.key" serve "$tag" "$bin" postgres
done

load() { # tag engine verb seconds: wrk's summary line, then the server's CPU per request
  local _t _e url reader rkey buyer bkey pid profile key before line
  read -r _t _e url reader rkey buyer bkey pid < <(grep "^$1 $2 " "$dir/targets")
  profile=$reader key=$rkey
  [ "$3" = cards/charge ] && profile=$buyer key=$bkey
  before=$(cpu_ticks "$pid")
  line=$(BENCH_VERB="$3" BENCH_PROFILE="$profile" BENCH_KEY="$key" \
    wrk -t2 -c64 -d"$4s" --latency -s bench/action.lua "$url" | tail -1)
  echo "$line, server CPU $(cpu_per_call "$before" "$pid" "$line" "$4") µs/request"
}
rows=("sqlite web/read" "sqlite cards/charge" "postgres web/read")
echo "warming up"
for row in "${rows[@]}"; do for tag in old new; do load $tag $row 3 >/dev/null; done; done
for round in $(seq "$rounds"); do
  order="old new"
  [ $((round % 2)) = 0 ] && order="new old"
  for row in "${rows[@]}"; do
    for tag in $order; do
      line=$(load $tag $row "$secs")
      echo "round $round $tag $row: $line"
      echo "$tag|$row|$line" >>"$dir/rows"
    done
  done
done
python3 - "$dir/rows" <<'PY'
import re, statistics, sys
by = {}
for line in open(sys.argv[1]):
    tag, row, rest = line.rstrip("\n").split("|", 2)
    rate = float(re.search(r"([0-9.]+) \w+/s", rest).group(1))
    p99 = float(re.search(r"p99 ([0-9.]+) ms", rest).group(1))
    cpu = float(re.search(r"server CPU ([0-9.]+) µs", rest).group(1))
    by.setdefault(row, {}).setdefault(tag, []).append((rate, p99, cpu))
print(f"\n{'row':<22} {'old req/s':>10} {'new req/s':>10} {'new/old':>8} {'old p99 ms':>11} {'new p99 ms':>11} {'new/old':>8} {'old CPU µs':>11} {'new CPU µs':>11} {'new/old':>8}")
for row, t in by.items():
    (ro, po, co), (rn, pn, cn) = [tuple(statistics.median(r[i] for r in t[k]) for i in range(3)) for k in ("old", "new")]
    print(f"{row:<22} {ro:>10.0f} {rn:>10.0f} {rn / ro:>8.2f} {po:>11.2f} {pn:>11.2f} {pn / po:>8.2f} {co:>11.1f} {cn:>11.1f} {cn / co:>8.2f}")
PY
