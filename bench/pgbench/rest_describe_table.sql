-- (5) DescribeTable through lance_rest() in SQL: the call the gateway makes
-- for each HTTP request (same statement, same headers as wrk sends, the API
-- key included), without nginx, Lua and HTTP.
\set t random(1, 100)
SELECT status, response_headers::text, response_body,
       1 / (status = 200)::int AS ok  -- any other status fails the run
  FROM lance_rest('POST', '/v1/table/b5%24t' || :t::int || '/describe', '',
                  format('{"id": ["b5", "t%s"]}', :t::int),
                  format('{"host": "127.0.0.1:%s", "content-type": "application/json", "content-length": "%s", "x-api-key": "%s"}',
                         :gateway_port::int, length(format('{"id": ["b5", "t%s"]}', :t::int)), :api_key::text)::jsonb);
