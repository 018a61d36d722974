-- Shared by the wrk scripts (loaded with dofile from the repository root): each thread
-- counts its answers that are not 200, and report(label, unit) makes the `done` that prints
-- the run's figures with the threads' counts summed (done runs in the main state, which
-- counts nothing itself).
local threads = {}
setup = function(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

non200 = 0
response = function(status, headers, body)
  if status ~= 200 then non200 = non200 + 1 end
end

function report(label, unit)
  return function(summary, latency, requests)
    local bad = 0
    for _, thread in ipairs(threads) do bad = bad + (thread:get("non200") or 0) end
    io.write(string.format("%s: %.0f %s/s, p50 %.2f ms, p99 %.2f ms, %d errors, %d non-200\n",
      label, summary.requests / (summary.duration / 1e6), unit,
      latency:percentile(50) / 1000, latency:percentile(99) / 1000,
      summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout + summary.errors.status,
      bad))
  end
end
