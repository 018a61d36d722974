#!/usr/bin/env bash
# Installs what the build and the tests need, and skips what is already present.
#   scripts/bootstrap.sh run    the toolchain for `make run`
#   scripts/bootstrap.sh test   the same, plus Chromium for the browser tests
# Everything comes from the package registries (crates.io, npm, Debian); nothing is
# downloaded from anywhere else.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_LEPTOS_VERSION=0.3.10
# The wasm-bindgen CLI must equal the wasm-bindgen crate in Cargo.lock exactly.
WASM_BINDGEN_VERSION=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
# Building these tools with fat LTO takes ~20 minutes on two cores; without it, a few.
FAST_INSTALL=(env CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16)

say() { printf '\033[1;34m==>\033[0m %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
    echo "error: '$*' needs root; run it as root or install sudo" >&2; exit 1; fi
}

apt_install() {
  # Only refresh the package lists when something is actually missing.
  if [ -z "${APT_UPDATED:-}" ]; then as_root apt-get update -qq; APT_UPDATED=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ensure_rust() {
  command -v cargo >/dev/null || { echo "error: cargo is missing; install Rust with rustup first" >&2; exit 1; }
  local installed; installed=$(rustup component list --installed 2>/dev/null || true)
  for c in clippy rustfmt; do
    grep -q "^$c" <<<"$installed" || { say "adding rustup component $c"; rustup component add "$c"; }
  done
  rustup target list --installed | grep -qx wasm32-unknown-unknown || {
    say "adding the wasm32-unknown-unknown target"; rustup target add wasm32-unknown-unknown; }
}

ensure_cargo_leptos() {
  if [ "$(cargo leptos --version 2>/dev/null | awk '{print $2}')" != "$CARGO_LEPTOS_VERSION" ]; then
    say "installing cargo-leptos $CARGO_LEPTOS_VERSION (a few minutes)"
    "${FAST_INSTALL[@]}" cargo install cargo-leptos --version "$CARGO_LEPTOS_VERSION" --locked --features no_downloads
  fi
}

ensure_wasm_bindgen() {
  if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
    say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (matches Cargo.lock)"
    "${FAST_INSTALL[@]}" cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --force
  fi
}

ensure_npm() {
  command -v npm >/dev/null || { say "installing Node.js and npm"; apt_install nodejs npm; }
  # Reinstall when package-lock.json is newer than the last install.
  if [ ! -x node_modules/.bin/tailwindcss ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    say "installing npm packages (Tailwind CLI, wasm-opt, Playwright, axe-core)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
}

ensure_chromium() {
  if [ ! -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ]; then
    say "installing Chromium from Debian"
    apt_install chromium
  fi
}

# schemathesis (PyPI) for the API tests, pinned, in a project-local virtualenv.
SCHEMATHESIS_VERSION=4.32.5
ensure_schemathesis() {
  if ! .venv/bin/st --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
    say "installing schemathesis $SCHEMATHESIS_VERSION from PyPI into .venv"
    python3 -m venv .venv 2>/dev/null || { apt_install python3-venv && python3 -m venv .venv; }
    .venv/bin/pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
  fi
}

# The official MCP SDK (PyPI `mcp`) and pytest, for the MCP suite, in the same virtualenv;
# and Slack's Python SDK (PyPI `slack_sdk`), whose request-signature verifier the suite checks
# the gateway and the reference Slack against; and ocsf-emitter (PyPI, pydantic models generated
# from the OCSF 1.5.0 schema, with its invariant checks), which validates a log stream's OCSF
# events.
MCP_SDK_VERSION=2.3.0
PYTEST_VERSION=9.2.0
SLACK_SDK_VERSION=3.47.0
OCSF_EMITTER_VERSION=0.3.0
ensure_mcp_sdk() {
  if ! .venv/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_SDK_VERSION' or m.version('pytest') != '$PYTEST_VERSION' or m.version('slack_sdk') != '$SLACK_SDK_VERSION' or m.version('ocsf-emitter') != '$OCSF_EMITTER_VERSION')" 2>/dev/null; then
    say "installing the MCP Python SDK $MCP_SDK_VERSION, slack_sdk $SLACK_SDK_VERSION, ocsf-emitter $OCSF_EMITTER_VERSION and pytest $PYTEST_VERSION from PyPI into .venv"
    .venv/bin/pip install --quiet --disable-pip-version-check "mcp==$MCP_SDK_VERSION" "pytest==$PYTEST_VERSION" "slack_sdk==$SLACK_SDK_VERSION" "ocsf-emitter==$OCSF_EMITTER_VERSION"
  fi
}

# scim2-tester (PyPI, an RFC 7643/7644 compliance checker) and its client's HTTP engine, for
# the SCIM suite, in the same virtualenv.
SCIM2_TESTER_VERSION=0.5.2
SCIM2_CLIENT_VERSION=0.13.2
ensure_scim2_tester() {
  if ! .venv/bin/python -c "import importlib.metadata as m, sys; sys.exit(m.version('scim2-tester') != '$SCIM2_TESTER_VERSION' or m.version('scim2-client') != '$SCIM2_CLIENT_VERSION')" 2>/dev/null; then
    say "installing scim2-tester $SCIM2_TESTER_VERSION from PyPI into .venv"
    .venv/bin/pip install --quiet --disable-pip-version-check "scim2-tester==$SCIM2_TESTER_VERSION" "scim2-client[httpx2]==$SCIM2_CLIENT_VERSION"
  fi
}

# PostgreSQL from Debian, for the tests' throwaway clusters (scripts/pg.sh); none is started
# here and none is assumed to be running.
ensure_postgres() {
  if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
    say "installing PostgreSQL from Debian"
    apt_install postgresql
  fi
}

# promtool (Debian's prometheus package), to check the alert rules in ops/ the way Prometheus
# loads them (server/tests/dashboards.rs). Only the tool is used; no Prometheus is started.
ensure_promtool() {
  if ! command -v promtool >/dev/null 2>&1; then
    say "installing promtool (Debian's prometheus package)"
    apt_install --no-install-recommends prometheus
  fi
}

# s3s-fs (crates.io), an S3-compatible server over a directory: the log archive's store in
# the PostgreSQL pass (server/tests/archive.rs). 0.14.1 is the last that builds on rustc 1.95.
S3S_FS_VERSION=0.14.1
ensure_s3s_fs() {
  if [ "$(s3s-fs --version 2>/dev/null | awk '{print $2}')" != "$S3S_FS_VERSION" ]; then
    say "installing s3s-fs $S3S_FS_VERSION (a few minutes)"
    "${FAST_INSTALL[@]}" cargo install s3s-fs --version "$S3S_FS_VERSION" --locked --features binary
  fi
}

ensure_rust
ensure_cargo_leptos
ensure_wasm_bindgen
ensure_npm
case "${1:-run}" in
  run) ;;
  test) ensure_chromium; ensure_postgres; ensure_schemathesis; ensure_mcp_sdk; ensure_scim2_tester; ensure_promtool; ensure_s3s_fs ;;
  *) echo "usage: $0 [run|test]" >&2; exit 2 ;;
esac
