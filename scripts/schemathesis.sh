#!/usr/bin/env bash
# Property-based API tests (issue #5): schemathesis, from PyPI, generates requests from
# /v1/openapi.json against the real server on a fresh SQLite file, first as the company
# (acting for the demo admin), then as an agent with its scoped key. Pass: no 5xx, and every
# response matches the document. Bounded examples per operation and a fixed seed, so a run
# takes a minute or two and a failure replays.
set -euo pipefail
cd "$(dirname "$0")/.."
ST=.venv/bin/st
[ -x "$ST" ] || scripts/bootstrap.sh test
server=target/debug/server
[ -x "$server" ] || cargo build -p server --bin server
dir="$(mktemp -d)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
company=nv_schema01_abcdefghijklmnopqrstuv
DATABASE_URL="sqlite://$dir/st.db" NAIVE_ADMIN_PASSWORD=schemathesis-admin NAIVE_COMPANY_KEY=$company \
  NAIVE_OPERATOR_KEY=schemathesis-operator-key-0123 RUST_LOG=warn "$server" --bind "127.0.0.1:$port" >"$dir/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
base="http://127.0.0.1:$port"
# HTTP through Python's standard library, so nothing beyond Python is needed.
http() { # METHOD URL [KEY] -> body on stdout
  python3 - "$@" <<'PY'
import sys, urllib.request
method, url = sys.argv[1], sys.argv[2]
req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
if len(sys.argv) > 3:
    req.add_header("Authorization", "Bearer " + sys.argv[3])
print(urllib.request.urlopen(req, timeout=10).read().decode())
PY
}
for _ in $(seq 100); do http GET "$base/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
# An agent of the demo tenant, with a key of its own.
profile=$(http GET "$base/v1/agent-profiles" "$company" \
  | python3 -c 'import json,sys; print(next(i["profile"]["id"] for i in json.load(sys.stdin)["items"] if i["profile"]["name"] == "research-crawler"))')
agent=$(http POST "$base/v1/agent-profiles/$profile/keys" "$company" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])')
run() {
  "$ST" ${config:+--config-file "$config"} run "$base/v1/openapi.json" --checks not_a_server_error,response_schema_conformance \
    --max-examples "${SCHEMATHESIS_EXAMPLES:-8}" --seed 20261130 --request-timeout 10 --workers 1 \
    --no-color "$@"
}
echo "== schemathesis as the company (X-Naive-User: admin)"
run -H "Authorization: Bearer $company" -H "X-Naive-User: admin" \
  --exclude-path-regex '^/v1/(users/\{user_id\}/\{primitive\}|events)'
echo "== schemathesis as an agent ($profile)"
# Real path values, so generated calls reach the pipeline rather than stopping at a 404.
cat >"$dir/agent.toml" <<TOML
[parameters]
"path.user_id" = "$profile"
"path.primitive" = "web"
"path.verb" = "read"
TOML
config="$dir/agent.toml" run -H "Authorization: Bearer $agent" --include-path-regex '^/v1/(users|policy|brain|approvals/\{id\}$|agent-profiles/\{id\}$)'
# An event stream never ends by itself: each request reads what arrives in two seconds.
echo "== schemathesis on the event stream"
run -H "Authorization: Bearer $company" --include-path-regex '^/v1/events$' --request-timeout 2 --max-examples 3
if grep -q "panicked" "$dir/server.log"; then
  echo "the server panicked during the run:"; grep -B2 -A10 panicked "$dir/server.log"; exit 1
fi
