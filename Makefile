# The two commands a new user needs. Both install what is missing first.
#   make run    build and serve the console and gateway on data/naive.db, with a demo tenant
#   make test   formatting, lints, unit and service tests (some on a throwaway PostgreSQL),
#               the wasm build of policy, and the browser tests in Chromium
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)
export CHROMIUM_PATH ?= /usr/bin/chromium

.PHONY: run test setup setup-test fmt lint doc unit wasm wasm-budget api mcp scim e2e bench-mcp bench bench-gateway bench-http bench-sse bench-console bench-wasm bench-outbox bench-bulk bench-replay bench-archive bench-streams bench-phone bench-sso bench-slack build-site

run: setup
	@echo "Building the console; the URL is printed when it is ready."
	NAIVE_DEMO_AGENT=$${NAIVE_DEMO_AGENT:-1} NAIVE_DEMO_UPSTREAM=$${NAIVE_DEMO_UPSTREAM:-1} \
	  NAIVE_EGRESS_ALLOW=$${NAIVE_EGRESS_ALLOW:-127.0.0.1/32} cargo leptos serve

test: setup-test fmt lint doc unit wasm wasm-budget api mcp scim e2e
	@echo "make test: all checks passed"

setup:
	@scripts/bootstrap.sh run

setup-test:
	@scripts/bootstrap.sh test

fmt:
	cargo fmt --all --check

# The server side and the browser side are linted separately: `app` is built with `ssr` for
# the server and with `hydrate` for wasm, never both at once.
lint:
	cargo clippy -p policy -p store -p gateway -p server --all-targets --features server/test-switches -- -D warnings
	cargo clippy -p server --all-targets -- -D warnings
	cargo clippy -p app --features ssr --all-targets -- -D warnings
	cargo clippy -p frontend --target wasm32-unknown-unknown -- -D warnings

# The server's tests run with the `test-switches` feature (a clock the test moves); the
# binary's own tests run without it too, as a release is built, and check it refuses them.
# The server's tests each start a whole application; several Leptos apps rendering at once in
# one test process can stall a render (seen about once in a dozen runs, never with one app per
# process), so they run one at a time. They take a few seconds either way.
# One throwaway PostgreSQL cluster (scripts/pg.sh) serves every test that needs one, and is
# stopped however they end. The gateway's service tests and the server's HTTP tests run twice:
# on SQLite, then on PostgreSQL (NAIVE_TEST_ENGINE=postgres, a fresh database each); the few
# that exercise SQLite's own parts (its indexer, the crash soak's file) stay on SQLite.
unit:
	eval "$$(scripts/pg.sh start)" && trap 'scripts/pg.sh stop' EXIT \
	  && cargo test -p policy -p store -p gateway \
	  && NAIVE_TEST_ENGINE=postgres cargo test -p gateway --tests \
	  && cargo test -p app --features ssr --lib \
	  && cargo test -p server --features test-switches -- --test-threads=1 \
	  && NAIVE_TEST_ENGINE=postgres cargo test -p server --features test-switches -- --test-threads=1
	cargo test -p server --test binary
	cargo test -p policy --bench decide

# The docs build, and every intra-doc link (`[Type]`, `[module::item]`) names something that exists.
doc:
	RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" \
	  cargo doc --no-deps --document-private-items -p policy -p store -p gateway -p server
	RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links" \
	  cargo doc --no-deps --document-private-items -p app --features ssr

wasm:
	cargo build -p policy --target wasm32-unknown-unknown

# The console's release wasm against its budget (150 KB gzipped): fails above it.
wasm-budget:
	bench/wasm-size.sh --check

# schemathesis against /v1/openapi.json on the real server: no 5xx, every response as documented.
api:
	scripts/schemathesis.sh

# /mcp through the official Python SDK (PyPI `mcp`), in both protocol modes, against the real
# server binary on a free port with a fresh database; and, in the same suite, Slack's request
# signing checked against Slack's Python SDK (PyPI `slack_sdk`) and a log stream's OCSF events
# validated by ocsf-emitter (PyPI, the OCSF 1.5.0 schema's models).
mcp:
	cargo build -p server --bin server --features test-switches
	.venv/bin/pytest server/tests/mcp -q -p anyio

# /scim/v2 checked by scim2-tester (PyPI, an RFC 7643/7644 compliance checker), in .venv,
# against the real server binary (the one `mcp` built) on a free port with a fresh database.
scim:
	cargo build -p server --bin server --features test-switches
	.venv/bin/pytest server/tests/scim -q

build-site:
	cargo leptos build --bin-features test-switches

e2e: build-site
	npx playwright test --config end2end/playwright.config.ts

# Full benchmark figures (not part of `make test`).
bench:
	cargo bench -p policy --bench decide

# SQLite (group commit and one transaction per job), then PostgreSQL on a throwaway cluster
# sharing these two cores (one and two instances; one tenant, then 16), then pgbench on it.
# With the reference upstream (its own release process) for the HTTP-connector rows.
bench-gateway:
	cargo build --release -p gateway --bin gateway-load --features load-tracing
	cargo build --release -p server --bin server
	eval "$$(scripts/pg.sh start)" && up=$$(mktemp -d) \
	  && (NAIVE_UPSTREAM_SECRET=bench-upstream target/release/server upstream --listen 127.0.0.1:0 --records $$up/up.db > $$up/log & \
	      target/release/server otlp-receiver --listen 127.0.0.1:0 > $$up/otlp & echo $$! > $$up/otlp-pid; \
	      target/release/server webhook-receiver --listen 127.0.0.1:0 > $$up/streams & echo $$! > $$up/rx; sleep 1) \
	  && trap 'scripts/pg.sh stop; pkill -f "records $$up/up.db"; kill $$(cat $$up/otlp-pid) $$(cat $$up/rx); rm -rf $$up' EXIT \
	  && target/release/gateway-load bench --callers 64 --actions 60000 --engines sqlite \
	     --upstream "$$(grep -o 'http://[^ ]*' $$up/log)" --upstream-secret bench-upstream \
	     --otlp "$$(grep -o 'http://[^ ]*' $$up/otlp)" \
	     --stream-receiver "$$(grep -o 'http://[^ ]*' $$up/streams)" \
	  && bench/pg-targets.sh 60000

# The outbox: runtime writes queued per second in-process (64 callers, beside web.read), the
# delivery worker draining them into the reference runtime (its own release process), and
# enqueue-to-delivered latency at 1,000 commands/s.
bench-outbox:
	cargo build --release -p gateway --bin gateway-load
	cargo build --release -p server --bin server
	rt=$$(mktemp -d) \
	  && (NAIVE_RUNTIME_SECRET=bench-runtime-secret-0123 target/release/server team-runtime --listen 127.0.0.1:0 --seed-tasks 64 --board $$rt/board.db > $$rt/log & \
	      NAIVE_RUNTIME_SECRET=bench-runtime-secret-0123 target/release/server team-runtime --listen 127.0.0.1:0 --seed-tasks 64 --board $$rt/board2.db > $$rt/log2 & sleep 1) \
	  && trap 'pkill -f "board $$rt/board"; rm -rf $$rt' EXIT \
	  && target/release/gateway-load outbox --callers 64 --commands 60000 --rate 1000 --backlog 100000 \
	     --runtime "$$(grep -o 'http://[^ ]*' $$rt/log),$$(grep -o 'http://[^ ]*' $$rt/log2)" --runtime-secret bench-runtime-secret-0123

# Over HTTP: the release server under wrk (saturation) and oha (fixed rates): the sandbox, an
# HTTP connector to the reference upstream, and the Portkey gateway as the peer on that upstream;
# then the sandbox on PostgreSQL, one instance and two.
bench-http:
	bench/http.sh

# Governed calls over /mcp against /v1 and an ungoverned Python SDK MCP server, one client.
bench-mcp:
	bench/mcp.sh

# 1,000 event-stream subscribers while actions flow: delivery latency and memory.
bench-sse:
	bench/sse.sh

# Server-side render of the inbox and the spend ledger, small database against 100,000
# approvals and 1,000,000 ledger entries (seeded by `gateway-load seed-console`).
bench-console:
	bench/console.sh

# A bulk approval of 100 parked charges (one decide_many) beside 100 single approvals.
bench-bulk:
	cargo build --release -p gateway --bin gateway-load
	target/release/gateway-load bulk --items 100 --rounds 3

# Replay (issue #35): a million recorded calls decided again under the live kit and under a
# draft with lower caps, for 100 and for 10,000 profiles on the kit.
bench-replay:
	cargo build --release -p gateway --bin gateway-load
	target/release/gateway-load replay --calls 1000000 --profiles 100,10000

# The log's archive and retention (issue #54): a simulated month of 50,000 entries a day with
# a 7-day retention; the archive's rate, the database's size each day, the bytes per entry.
bench-archive:
	cargo build --release -p gateway --bin gateway-load
	target/release/gateway-load archive --per-day 50000 --days 40 --retention 7

# A log stream's catch-up (issue #54): a million entries to the reference receiver (its own
# release process), from the cursor to the end of the log.
bench-streams:
	cargo build --release -p gateway --bin gateway-load
	cargo build --release -p server --bin server
	rx=$$(mktemp -d) \
	  && (target/release/server webhook-receiver --listen 127.0.0.1:0 > $$rx/log & echo $$! > $$rx/pid; sleep 1) \
	  && trap 'kill $$(cat $$rx/pid); rm -rf $$rx' EXIT \
	  && target/release/gateway-load streams --entries 1000000 --receiver "$$(grep -o 'http://[^ ]*' $$rx/log)"

# Single sign-on (issue #49): the callback's time per sign-in and key fetches while cached;
# SCIM pages of 100 among 10,000 users.
bench-sso:
	cargo bench -p server --bench sso
	cargo bench -p server --bench scim

# Slack approvals (#51): from a park to Slack's chat.postMessage, and from a decision to the
# chat.update that says so, against the reference Slack Web API.
bench-slack:
	cargo bench -p server --bench slack

# The release wasm that hydrates every island, with `policy` inside it: bytes raw and gzipped.
bench-wasm:
	bench/wasm-size.sh

# The inbox on a phone (390 px, CPU 4x slower, 1.6 Mbps, 150 ms): bytes and time to working
# buttons, first visit and return visit (the release site, precompressed).
bench-phone:
	bench/phone.sh
