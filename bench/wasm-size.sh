#!/usr/bin/env bash
# The console's release wasm: every island in one module, `policy` inside it, built exactly as
# `cargo leptos build --release` builds it (the wasm-release profile, the wasm-bindgen CLI, then
# wasm-opt with the workspace's own flags), without building the release server too. Prints its
# size raw and gzipped (-9). With --check, fails above the budget, WASM_BUDGET_BYTES gzipped
# (150 KB unless set): `make test` runs it so, and the budget cannot be passed silently.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
budget=${WASM_BUDGET_BYTES:-150000}
cargo build -p frontend --lib --target wasm32-unknown-unknown --profile wasm-release --quiet
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
wasm-bindgen --target web --no-typescript --out-dir "$out" --out-name naive \
  target/wasm32-unknown-unknown/wasm-release/frontend.wasm
# The same flags cargo-leptos passes (`wasm-opt-features` in Cargo.toml).
mapfile -t flags < <(sed -n 's/^wasm-opt-features = \[\(.*\)\]/\1/p' Cargo.toml | tr ',' '\n' | tr -d ' "')
wasm-opt "${flags[@]}" "$out/naive_bg.wasm" -o "$out/naive.wasm"
gz() { gzip -9c "$1" | wc -c; }
printf "%-12s %9s %9s\n" file raw gzipped
for f in "$out"/naive.wasm "$out"/naive.js; do
  printf "%-12s %9d %9d\n" "$(basename "$f")" "$(wc -c <"$f")" "$(gz "$f")"
done
wasm=$(gz "$out/naive.wasm")
echo "all islands, policy included: $wasm bytes gzipped ($(awk "BEGIN { printf \"%.1f\", $wasm / 1000 }") KB; budget $((budget / 1000)) KB)"
if [ "${1:-}" = --check ] && [ "$wasm" -gt "$budget" ]; then
  echo "error: the console's wasm is $wasm bytes gzipped, over its budget of $budget: keep markup server-rendered and islands small (docs/wasm.md)" >&2
  exit 1
fi
