#!/usr/bin/env bash
# The rows of `make bench-gateway` for two builds side by side, in one run on these cores
# (issue #31: a refactor must leave them within noise). OLD and NEW are two `gateway-load`
# release binaries (build one in a worktree and copy it aside); they take turns, round after
# round, against one throwaway PostgreSQL cluster and one reference upstream, so drift of
# this machine falls on both. Then each row's median actions/s and CPU per action, and
# NEW/OLD.
#   bench/gateway-compare.sh OLD NEW [rounds=3] [actions=60000]
set -euo pipefail
cd "$(dirname "$0")/.."
old="$1" new="$2" rounds="${3:-3}" actions="${4:-60000}"
cargo build --release -p server --bin server
eval "$(scripts/pg.sh start)"
work=$(mktemp -d)
NAIVE_UPSTREAM_SECRET=bench-upstream target/release/server upstream --listen 127.0.0.1:0 \
  --records "$work/up.db" >"$work/up.log" 2>&1 &
upstream_pid=$!
trap 'scripts/pg.sh stop; kill $upstream_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do grep -q 'http://' "$work/up.log" && break; sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$work/up.log")
for round in $(seq "$rounds"); do
  for tag in old new; do
    bin=$old
    [ "$tag" = new ] && bin=$new
    echo "round $round: $tag ($bin)"
    "$bin" bench --callers 64 --actions "$actions" --engines sqlite,postgres \
      --upstream "$url" --upstream-secret bench-upstream \
      | grep 'actions/s' | while IFS= read -r row; do echo "$row"; echo "$tag|$row" >>"$work/rows"; done
  done
done
python3 - "$work/rows" <<'EOF'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tag, rest = line.rstrip("\n").split("|", 1)
    m = re.match(r"(.*?)\s+(\d+) actions/s .*?(\d+) µs CPU each", rest)
    if m:
        rows.setdefault(m.group(1).strip(), {}).setdefault(tag, []).append((int(m.group(2)), int(m.group(3))))
print(f"\n{'row':<36} {'old actions/s':>14} {'new actions/s':>14} {'new/old':>8} {'old µs CPU':>11} {'new µs CPU':>11} {'new/old':>8}")
for label, by in rows.items():
    if "old" not in by or "new" not in by:
        continue
    med = {t: (statistics.median(r for r, _ in v), statistics.median(c for _, c in v)) for t, v in by.items()}
    (ro, co), (rn, cn) = med["old"], med["new"]
    print(f"{label:<36} {ro:>14.0f} {rn:>14.0f} {rn / ro:>8.2f} {co:>11.0f} {cn:>11.0f} {cn / co:>8.2f}")
EOF
