-- bench/wrk/describe_table.lua: benchmark (5), DescribeTable of a random b5
-- table over HTTP, with the body the client sends.
--   LANCE_API_KEY=<key> wrk -t 2 -c 2 -d 5s --latency -s describe_table.lua http://127.0.0.1:<port>
-- The API key comes from LANCE_API_KEY (run.sh sets it), as x-api-key.
local headers = { ["Content-Type"] = "application/json", ["x-api-key"] = os.getenv("LANCE_API_KEY") or "" }

request = function()
  local t = math.random(1, 100)
  return wrk.format("POST", "/v1/table/b5%24t" .. t .. "/describe", headers,
    '{"id": ["b5", "t' .. t .. '"]}')
end

