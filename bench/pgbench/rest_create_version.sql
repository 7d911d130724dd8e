-- (5) CreateTableVersion through lance_rest() in SQL: the call the gateway
-- makes for each HTTP request (the same headers as wrk sends, the API key
-- included), without nginx, Lua and HTTP.
\set t random(1, 100)
SELECT status, response_headers::text, response_body,
       1 / (status = 200)::int AS ok  -- any other status fails the run
  FROM (SELECT format('{"id": ["b5", "t%s"], "version": %s, "manifest_path": "lance-bench/b5/t%s.lance/_versions/%s.manifest"}',
                      :t::int, v, :t::int, v) AS body
          FROM nextval('bench.v5_seq') AS v) AS r,
       lance_rest('POST', '/v1/table/b5%24t' || :t::int || '/version/create', '', r.body,
                  format('{"host": "127.0.0.1:%s", "content-type": "application/json", "content-length": "%s", "x-api-key": "%s"}',
                         :gateway_port::int, length(r.body), :api_key::text)::jsonb);
