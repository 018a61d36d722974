#!/usr/bin/env bash
# The phone figure (issue #48): the release site, precompressed as a deployment builds it, and
# the release server on a fresh database with 50 waiting approvals; then bench/phone.mjs opens
# the inbox as a phone would, first visit and return visit.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
[ -n "${NO_BUILD:-}" ] || cargo leptos build --release --precompress >/dev/null
source bench/lib.sh
new_dir dir
export DATABASE_URL="sqlite://$dir/phone.db" LEPTOS_SITE_ROOT=target/site
export NAIVE_ADMIN_PASSWORD=phone-bench-password NAIVE_COMPANY_KEY=nv_phonebch_abcdefghijklmnopqrstuv
export NAIVE_DEMO_AGENT=0 NAIVE_DEMO_UPSTREAM=0
start_server "$dir/server.log"
api() { curl -sf -X "$1" "$base$2" -H "authorization: Bearer ${3:-$NAIVE_COMPANY_KEY}" -H 'content-type: application/json' ${4:+-d "$4"}; }
api PUT /v1/kits/Phone '' '{"name":"Phone","primitives":["cards"],"limits":{"approve":{"always":["cards.charge"]}}}' >/dev/null
profile=$(api POST /v1/agent-profiles '' '{"name":"phone-agent","kit":"Phone"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
key=$(api POST "/v1/agent-profiles/$profile/keys" | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')
for i in $(seq 50); do
  api POST "/v1/users/$profile/cards/charge" "$key" "{\"amount\":\"$i.00\",\"merchant\":\"acme\"}" >/dev/null || true
done
node bench/phone.mjs "$base" "$NAIVE_ADMIN_PASSWORD"
