# Shared by the bench scripts that start servers (sourced; the caller has `set -euo pipefail`
# and runs from the repository root): free ports, the processes and directories to clean up
# however the script ends, and a release server started on $DATABASE_URL.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
dirs=()
# `wait` answers a killed process's status, which errexit would take as a failure of the trap.
cleanup() {
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  [ -z "${NAIVE_PG_DIR:-}" ] || scripts/pg.sh stop
  rm -rf "${dirs[@]}"
}
trap cleanup EXIT

# A fresh temporary directory, deleted at exit: `new_dir dir` sets $dir.
new_dir() {
  local path
  path="$(mktemp -d)"
  dirs+=("$path")
  printf -v "$1" "%s" "$path"
}

# Starts a release server ($SERVER_BIN, target/release/server unless set) on $DATABASE_URL
# with its log at $1 and waits until it answers; sets $base and $server.
start_server() {
  local port
  port=$(free_port)
  "${SERVER_BIN:-target/release/server}" --bind "127.0.0.1:$port" >"$1" 2>&1 &
  server=$!
  pids+=($server)
  base="http://127.0.0.1:$port"
  for _ in $(seq 100); do curl -sf "$base/healthz" >/dev/null && return; sleep 0.1; done
  echo "the server did not start: $(cat "$1")" >&2
  exit 1
}

# A process's CPU time so far, in clock ticks (user + system).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# The CPU per call, in µs, process $2 spent since $1 ticks, for the wrk line $3 over $4 s.
cpu_per_call() {
  python3 - "$1" "$(cpu_ticks "$2")" "$3" "$4" "$(getconf CLK_TCK)" <<'PY'
import re, sys
before, after, line, secs, tck = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
calls = float(re.search(r"([0-9.]+) \w+/s", line).group(1)) * secs
print(f"{(after - before) * 1e6 / tck / calls:.1f}")
PY
}
