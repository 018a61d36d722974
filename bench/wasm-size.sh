#!/usr/bin/env bash
# The console's release wasm (issue #6: every island in one module, `policy` inside it,
# target ≤ 150 KB gzipped): its size raw and gzipped (-9).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
cargo leptos build --release >/dev/null
pkg=target/site/pkg
gz() { gzip -9c "$1" | wc -c; }
printf "%-12s %9s %9s\n" file raw gzipped
for f in "$pkg"/naive.wasm "$pkg"/naive.js; do
  printf "%-12s %9d %9d\n" "$(basename "$f")" "$(wc -c <"$f")" "$(gz "$f")"
done
wasm=$(gz "$pkg/naive.wasm")
echo "all islands, policy included: $wasm bytes gzipped ($(awk "BEGIN { printf \"%.1f\", $wasm / 1000 }") KB; target 150 KB)"
