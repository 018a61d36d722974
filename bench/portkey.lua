-- wrk script: the peer hop of make bench-http. The same $0.01 charge as the governed run,
-- sent through the Portkey gateway to the same reference upstream (BENCH_UPSTREAM, with its
-- credential BENCH_UPSTREAM_SECRET). Every request carries its own action id, as the
-- gateway's calls do, so the upstream records each one instead of replaying a stored answer.
dofile("bench/wrk_report.lua")
local run = os.getenv("BENCH_RUN") or "0"
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_UPSTREAM_SECRET")
wrk.headers["x-portkey-provider"] = "openai"
wrk.headers["x-portkey-custom-host"] = os.getenv("BENCH_UPSTREAM")

local n = 0
request = function()
  n = n + 1
  -- tid: this thread's number, set by wrk_report's setup.
  local body = string.format(
    '{"action_id":"portkey-%s-%d-%d","action":"cards.charge","args":{"amount":"0.01","merchant":"acme"}}',
    run, tid, n)
  return wrk.format(nil, "/v1/cards/charge", nil, body)
end

done = report("Portkey hop to the upstream", "requests")
