-- wrk script: the peer hop of make bench-http. The same $0.01 charge as the governed run,
-- sent through the Portkey gateway to the same reference upstream (BENCH_UPSTREAM, with its
-- credential BENCH_UPSTREAM_SECRET). Every request carries its own action id, as the
-- gateway's calls do, so the upstream records each one instead of replaying a stored answer.
local run = os.getenv("BENCH_RUN") or "0"
local threads = {}
setup = function(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_UPSTREAM_SECRET")
wrk.headers["x-portkey-provider"] = "openai"
wrk.headers["x-portkey-custom-host"] = os.getenv("BENCH_UPSTREAM")

local n = 0
request = function()
  n = n + 1
  local body = string.format(
    '{"action_id":"portkey-%s-%d-%d","action":"cards.charge","args":{"amount":"0.01","merchant":"acme"}}',
    run, tid, n)
  return wrk.format(nil, "/v1/cards/charge", nil, body)
end

non200 = 0
response = function(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
end

-- Each thread counts its own answers; the main state sums them.
done = function(summary, latency, requests)
  local non200 = 0
  for _, thread in ipairs(threads) do non200 = non200 + (thread:get("non200") or 0) end
  io.write(string.format("Portkey hop to the upstream: %.0f requests/s, p50 %.2f ms, p99 %.2f ms, %d errors, %d non-200\n",
    summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout + summary.errors.status,
    non200))
end
