-- wrk script: governed actions, each from the agent whose key and profile id the environment
-- gives (BENCH_KEY, BENCH_PROFILE). BENCH_VERB picks the action: web/read (the sandbox,
-- the default) or cards/charge (a $0.01 charge, on whatever connector the tenant set).
local key = os.getenv("BENCH_KEY")
local profile = os.getenv("BENCH_PROFILE")
local verb = os.getenv("BENCH_VERB") or "web/read"
local bodies = {
  ["web/read"] = '{"url":"https://bench.example.test/page"}',
  ["cards/charge"] = '{"amount":"0.01","merchant":"acme"}',
}
local threads = {}
setup = function(thread)
  table.insert(threads, thread)
end

wrk.method = "POST"
wrk.path = "/v1/users/" .. profile .. "/" .. verb
wrk.body = assert(bodies[verb], "BENCH_VERB is web/read or cards/charge")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. key

non200 = 0
response = function(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
end

-- Each thread counts its own answers; the main state sums them.
done = function(summary, latency, requests)
  local non200 = 0
  for _, thread in ipairs(threads) do non200 = non200 + (thread:get("non200") or 0) end
  io.write(string.format("governed %s over HTTP: %.0f actions/s, p50 %.2f ms, p99 %.2f ms, %d errors, %d non-200\n",
    verb, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout + summary.errors.status,
    non200))
end
