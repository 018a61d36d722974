-- wrk script: governed actions, each from the agent whose key and profile id the environment
-- gives (BENCH_KEY, BENCH_PROFILE). BENCH_VERB picks the action: web/read (the sandbox,
-- the default) or cards/charge (a $0.01 charge, on whatever connector the tenant set).
dofile("bench/wrk_report.lua")
local key = os.getenv("BENCH_KEY")
local profile = os.getenv("BENCH_PROFILE")
local verb = os.getenv("BENCH_VERB") or "web/read"
local bodies = {
  ["web/read"] = '{"url":"https://bench.example.test/page"}',
  ["cards/charge"] = '{"amount":"0.01","merchant":"acme"}',
}
wrk.method = "POST"
wrk.path = "/v1/users/" .. profile .. "/" .. verb
wrk.body = assert(bodies[verb], "BENCH_VERB is web/read or cards/charge")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. key

done = report("governed " .. verb .. " over HTTP", "actions")
