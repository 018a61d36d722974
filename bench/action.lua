-- wrk script: governed web.read actions, each from the agent whose key and profile id the
-- environment gives (BENCH_KEY, BENCH_PROFILE).
local key = os.getenv("BENCH_KEY")
local profile = os.getenv("BENCH_PROFILE")
wrk.method = "POST"
wrk.path = "/v1/users/" .. profile .. "/web/read"
wrk.body = '{"url":"https://bench.example.test/page"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. key

local non200 = 0
response = function(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
end

done = function(summary, latency, requests)
  io.write(string.format("governed actions over HTTP: %.0f actions/s, p50 %.2f ms, p99 %.2f ms, %d errors, %d non-200\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout + summary.errors.status,
    non200))
end
