-- bench/wrk/create_version.lua: benchmark (5), CreateTableVersion of a fresh
-- version of a random b5 table over HTTP.  Versions are
--   base + thread * 10^9 + n
-- with base from the command line (a different one per run) and n counting
-- each thread's requests, so that every request makes a new version.
--   LANCE_API_KEY=<key> wrk -t 2 -c 2 -d 5s --latency -s create_version.lua http://127.0.0.1:<port> -- <base>
-- (run.sh counts any non-2xx answer, which wrk reports, as a failure.)
-- The API key comes from LANCE_API_KEY (run.sh sets it), as x-api-key.
local headers = { ["Content-Type"] = "application/json", ["x-api-key"] = os.getenv("LANCE_API_KEY") or "" }
local threads = 0

setup = function(thread)
  thread:set("thread_id", threads)
  threads = threads + 1
end

local base, n = 0, 0

init = function(args)
  base = tonumber(args[1] or "0")
  math.randomseed(thread_id + 1)
end

request = function()
  local t = math.random(1, 100)
  n = n + 1
  local v = string.format("%d", base + thread_id * 1000000000 + n)
  return wrk.format("POST", "/v1/table/b5%24t" .. t .. "/version/create", headers,
    '{"id": ["b5", "t' .. t .. '"], "version": ' .. v ..
    ', "manifest_path": "lance-bench/b5/t' .. t .. '.lance/_versions/' .. v .. '.manifest"}')
end
