#!/usr/bin/env bash
# The console's release wasm, split into lazily loaded chunks (issue #6): the size of each
# file raw and gzipped (-9), and what each page with a lazy island fetches in all.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
cargo leptos build --release --split >/dev/null
pkg=target/site/pkg
gz() { gzip -9c "$1" | wc -c; }
printf "%-60s %9s %9s\n" file raw gzipped
total=0
for f in "$pkg"/*.wasm "$pkg"/naive.js; do
  printf "%-60s %9d %9d\n" "$(basename "$f")" "$(wc -c <"$f")" "$(gz "$f")"
  case "$f" in *.wasm) total=$((total + $(gz "$f")));; esac
done
echo "every island's wasm together: $total bytes gzipped"
main=$(gz "$pkg/naive.wasm")
python3 - "$pkg" "$main" <<'PY'
import json, os, subprocess, sys
pkg, main = sys.argv[1], int(sys.argv[2])
manifest = json.load(open(os.path.join(pkg, "__wasm_split_manifest.json")))
gz = lambda f: len(subprocess.run(["gzip", "-9c", os.path.join(pkg, f + ".wasm")], capture_output=True).stdout)
print(f"every page: naive.wasm {main} bytes gzipped")
for island, files in manifest.items():
    name = island.rsplit("_loader", 1)[0]
    extra = sum(gz(f) for f in files)
    print(f"a page with {name}: {main + extra} bytes gzipped ({extra} fetched when it hydrates)")
PY
