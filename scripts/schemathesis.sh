#!/usr/bin/env bash
# Property-based API tests: schemathesis, from PyPI, generates requests from
# /v1/openapi.json against the real server on a fresh SQLite file, as the company, as a human
# with a personal API token (decisions), and as an agent with its scoped key. Every check
# schemathesis has runs: no 5xx, every status code, content type, header and body as
# documented, schema-invalid input refused with a 4xx, authentication enforced. Bounded
# examples per operation and a fixed seed, so a run takes a few minutes and a failure replays.
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
  NAIVE_OPERATOR_KEY=schemathesis-operator-key-0123 NAIVE_EGRESS_ALLOW=127.0.0.1/32 RUST_LOG=warn "$server" --bind "127.0.0.1:$port" >"$dir/server.log" 2>&1 &
pid=$!
# The reference team runtime, which the agent's runtime tools reach once it is registered.
runtime_secret=schemathesis-runtime-secret
NAIVE_RUNTIME_SECRET=$runtime_secret "$server" team-runtime --listen 127.0.0.1:0 --board "$dir/board.db" >"$dir/runtime.log" 2>&1 &
rt=$!
trap 'kill $pid $rt 2>/dev/null; wait $pid $rt 2>/dev/null || true; rm -rf "$dir"' EXIT
base="http://127.0.0.1:$port"
# HTTP through Python's standard library, so nothing beyond Python is needed.
http() { # METHOD URL [KEY [JSON]] -> body on stdout
  python3 - "$@" <<'PY'
import sys, urllib.request
method, url = sys.argv[1], sys.argv[2]
body = sys.argv[4].encode() if len(sys.argv) > 4 else (b"" if method == "POST" else None)
req = urllib.request.Request(url, method=method, data=body)
if len(sys.argv) > 3:
    req.add_header("Authorization", "Bearer " + sys.argv[3])
req.add_header("Content-Type", "application/json")
print(urllib.request.urlopen(req, timeout=10).read().decode())
PY
}
secret() { python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])'; }
# A personal API token of the demo admin, made the way the admin makes one: signed in, on the
# account page, where the secret is shown once.
personal_token() { # BASE USER PASSWORD -> token on stdout
  python3 - "$@" <<'PY'
import re, sys, urllib.parse, urllib.request
base, user, password = sys.argv[1:4]
class Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k): return None
opener = urllib.request.build_opener(Stay)
def post(path, fields, cookie=None):
    req = urllib.request.Request(base + path, data=urllib.parse.urlencode(fields).encode(), method="POST")
    req.add_header("Accept", "text/html"); req.add_header("Referer", base + "/account")
    if cookie: req.add_header("Cookie", cookie)
    try: opener.open(req, timeout=10)
    except urllib.error.HTTPError as e: return e.headers
    raise SystemExit(path + " did not redirect")
cookie = post("/login", {"username": user, "password": password, "next": "/"})["Set-Cookie"].split(";")[0]
to = post("/api/create_token", {"label": "schemathesis", "admin": "on", "approver": "on", "reviewer": "on", "finance": "on"}, cookie)["Location"]
req = urllib.request.Request(base + to); req.add_header("Cookie", cookie)
page = urllib.request.urlopen(req, timeout=10).read().decode()
print(re.search(r'data-testid="new-secret"[^>]*>([^<]+)(?:<!>)?</code>', page).group(1))
PY
}
for _ in $(seq 100); do http GET "$base/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
# A company key of its own for the company-keys run, which may rotate or revoke the key it
# holds; the other runs keep theirs.
keys_key=$(http POST "$base/v1/company-keys" "$company" | secret)
run() {
  "$ST" --config-file "${config:-scripts/schemathesis.toml}" run "$base/v1/openapi.json" \
    --max-examples "${SCHEMATHESIS_EXAMPLES:-8}" --seed "${SCHEMATHESIS_SEED:-20261130}" --request-timeout 10 --workers 1 \
    --no-color "$@"
}
echo "== schemathesis as the company"
run -H "Authorization: Bearer $company" \
  --exclude-path-regex '^/v1/(users/\{user_id\}/(?!budget$|logs$|ledger$)|events|company-keys/\{id\})'
echo "== schemathesis as a human deciding with a personal API token"
human=$(personal_token "$base" admin schemathesis-admin)
run -H "Authorization: Bearer $human" --include-path-regex '^/v1/(approvals/\{id\}/(approve|deny)|brain/proposals/\{id\}/decision)$'
# A fresh agent on the demo's Research kit (every primitive), created after the company's run
# (which may revoke profiles), with a key of its own.
profile=$(http POST "$base/v1/agent-profiles" "$company" '{"name": "schemathesis-agent", "kit": "Research"}' \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
agent=$(http POST "$base/v1/agent-profiles/$profile/keys" "$company" | secret)
# The company's run may have registered anything as the runtime: register the reference one.
for _ in $(seq 100); do grep -q 'http://' "$dir/runtime.log" && break; sleep 0.1; done
runtime_url=$(grep -o 'http://[^ ]*' "$dir/runtime.log")
http PUT "$base/v1/runtime" "$company" "{\"url\": \"$runtime_url\", \"secret\": \"$runtime_secret\"}" >/dev/null
# It may also have left the tenant a rate limit of one call an hour: the agent's run is about
# its calls' inputs, so take it away.
http PUT "$base/v1/tenant/settings" "$company" '{"time_zone": "UTC", "rate_limit": null}' >/dev/null
echo "== schemathesis as an agent ($profile)"
# The agent's own profile, so generated calls reach the pipeline rather than stopping at a 404.
cp scripts/schemathesis.toml "$dir/agent.toml"
cat >>"$dir/agent.toml" <<TOML
[parameters]
"path.user_id" = "$profile"
TOML
config="$dir/agent.toml" run -H "Authorization: Bearer $agent" --include-path-regex '^/v1/(users|policy|brain|approvals/\{id\}$|agent-profiles/\{id\}$)'
# An event stream never ends by itself: each request reads what arrives in two seconds.
echo "== schemathesis on the event stream"
run -H "Authorization: Bearer $company" --include-path-regex '^/v1/events$' --request-timeout 2 --max-examples 3
echo "== schemathesis on company keys, with a key that may rotate or revoke itself"
run -H "Authorization: Bearer $keys_key" --include-path-regex '^/v1/company-keys'
if grep -q "panicked" "$dir/server.log"; then
  echo "the server panicked during the run:"; grep -B2 -A10 panicked "$dir/server.log"; exit 1
fi
