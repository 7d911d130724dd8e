-- lance_gateway: nginx (lua module) in front of the lance_namespace extension.
--
-- The gateway knows nothing of Lance: it hands each /v1/ request (method, raw
-- path, raw query string, body, headers) to the SQL function lance_rest(),
-- named in the extension's schema (never found by the role's search_path),
-- as escaped literals, and writes back the status, headers and body it
-- answers.  The database calls are lance_db's: they run in nginx's thread
-- pool (or, for a database on this host, on the worker's event loop, whose
-- protocol client lance_db_wire is) over a bounded pool of connections per
-- worker, as the database role
-- of LN_DATABASE_URL (lance_gateway), so a request that waits never holds up
-- another, and each has a deadline (LN_REQUEST_TIMEOUT).  Authentication is
-- the database's: lance_rest() checks
-- the request's API key and runs the request as the key's role, and answers
-- the id of the key it authenticated, which the gateway writes to its access
-- log (never an id merely sent: "lnk_<someone's id>_junk" is logged as "-").
--
-- Beside /v1/: GET /healthz (nginx answers it alone), GET /readyz (the
-- database answers, at the library's version), GET /metrics (Prometheus's
-- text format, for an administrator's key; it never waits for a
-- connection).  Every request has an id ($lance_request_id, a map in
-- nginx.conf.in), answered as X-Request-Id, logged, and carried into the
-- database as application_name lance_gateway/<id> and header x-request-id.
local cjson = require("cjson.safe")
local lance_db = require("lance_db")
local replicas = require("lance_replicas")
local limits = require("lance_limits")

local M = {}

-- This worker's pool of database connections (init_worker).
local pool
-- LN_REQUEST_TIMEOUT: seconds a request may take, from its arrival.
local request_timeout = 30

-- The call, in the extension's schema (@SCHEMA@: lance_replicas.schema),
-- each argument of its type: no function of another schema on the role's
-- search_path, nor one of the same name with other argument types, runs.
-- Run only while the extension is in that schema (replicas.GUARD, $6).
local SQL = "SELECT status, response_headers::pg_catalog.text, response_body, key_id"
	.. " FROM @SCHEMA@.lance_rest($1::pg_catalog.text, $2::pg_catalog.text, $3::pg_catalog.text,"
	.. " $4::pg_catalog.text, $5::pg_catalog.jsonb)" .. string.format(replicas.GUARD, 6)

-- The application_name of a request's database transaction: this and its
-- request id, so that log_line_prefix's %a puts the id on every line the
-- database writes for the request (PostgreSQL keeps 63 bytes of it: the
-- first 49 characters of an id).
local APPLICATION_PREFIX = "lance_gateway/"

-- How soon a client may try again after a 503 or a 429, in seconds
-- (Retry-After).
local RETRY_AFTER = "1"

-- The most headers a request may carry.  The gateway hands the catalog
-- every header or refuses the request (431, code 13): one it did not read
-- (an API key after 100 others) must not be dropped silently, which would
-- run the request without it.
local MAX_HEADERS = 100

-- init_worker{database_url_file, connections, timeout}: the settings
-- start_gateway (scripts/common.sh) wrote into nginx.conf.  The database's
-- URL is kept in a file of its own (it may hold a password), read once per
-- worker.
function M.init_worker(conf)
	local f = assert(io.open(conf.database_url_file, "r"))
	local url = (f:read("*a") or ""):gsub("%s+$", "")
	f:close()
	request_timeout = conf.timeout or 30
	pool = lance_db.new_pool({
		name = "primary",
		conninfo = url,
		size = conf.connections,
		thread_pool = "lance_db",
		connect_timeout = math.min(10, request_timeout),
	})
	-- reads on the standbys of LN_DATABASE_READ_URL, if any (lance_replicas)
	replicas.init_worker({
		primary = pool,
		read_url_file = conf.database_read_url_file,
		max_lag = conf.read_max_lag,
		connections = conf.connections,
	})
	-- LN_KEY_CONCURRENCY (lance_limits)
	limits.init_worker({ key_concurrency = conf.key_concurrency })
end

-- The Lance code of an error answer's body ({"code": N, ...}), for the
-- access log's "code" and the metrics' lance_errors_total.
local function note_code(status, body)
	if status < 400 or type(body) ~= "string" then
		return
	end
	local decoded = cjson.decode(body)
	local code = type(decoded) == "table" and tonumber(decoded.code)
	if code and code >= 0 and code == math.floor(code) then
		ngx.var.lance_code = tostring(code)
	end
end

-- Every 503 says when to try again, and so does every 429 or code 21
-- (the gateway's limits, or the database's: its Retry-After, if it gave
-- one, stands).  An answer without a body has its headers sent before it
-- ends: an error status would otherwise make nginx answer its own page
-- (or one of nginx.conf's error_page) in its place.
local function reply(status, headers, body)
	note_code(status, body)
	ngx.status = status
	for name, value in pairs(headers) do
		ngx.header[name] = value
	end
	if status == 503 then
		ngx.header["retry-after"] = RETRY_AFTER
	elseif (status == 429 or ngx.var.lance_code == "21") and not ngx.header["retry-after"] then
		ngx.header["retry-after"] = RETRY_AFTER
	end
	if body then
		ngx.print(body)
	elseif status >= 300 then
		ngx.send_headers()
	end
	return ngx.exit(status)
end

-- A Lance error body, {"code": N, "error": "..."}, with code first as the
-- catalog writes its own (a Lua table has no order).
local function error_body(code, message)
	return '{"code":' .. code .. ',"error":' .. cjson.encode(message) .. "}"
end

-- A 503 (code 17): the client is told which case it is, in a fixed text,
-- and the request's id; what went wrong (libpq's or the server's message,
-- which may name hosts, roles, files, and for a malformed URL part of a
-- password) goes to error.log alone.
local function unavailable(public, detail)
	local id = ngx.var.lance_request_id or "-"
	ngx.log(ngx.ERR, "lance_gateway: ", public, detail and (": " .. tostring(detail)) or "",
		" (request ", id, ")")
	return reply(503, { ["content-type"] = "application/json" },
		error_body(17, public .. " (request " .. id .. "; the gateway's error.log has more)"))
end

-- The HTTP status of a Lance error code, as lance_rest() answers it
-- (status_of_code in src/http/rest.c).
local STATUS_OF_CODE = {
	[0] = 406, [1] = 404, [2] = 409, [3] = 409, [4] = 404, [5] = 409, [6] = 404, [7] = 409,
	[8] = 404, [9] = 409, [10] = 404, [11] = 404, [12] = 404, [13] = 400, [14] = 409,
	[15] = 403, [16] = 401, [17] = 503, [18] = 500, [19] = 409, [20] = 400, [21] = 429,
	[22] = 404, [23] = 409,
}

-- A statement lance_rest() did not answer with a row: the database ended it
-- with an error, and the transaction was rolled back whole.  A cancel
-- (statement_timeout past the request's deadline, pg_cancel_backend) or a
-- shutdown reaches here as the Lance error lance_rest() raised for it
-- (LN017, its ErrorResponse JSON as the detail), or raw if it struck
-- outside lance_rest(): both are 503 with code 17.
local function database_error(e)
	local state = e.sqlstate or ""
	if state:sub(1, 2) == "LN" and e.detail then
		local body = cjson.decode(e.detail)
		local code = type(body) == "table" and tonumber(body.code)
		if code and STATUS_OF_CODE[code] then
			if code == 17 then
				ngx.log(ngx.WARN, "lance_gateway: ", e.message or "", " (", state, ")")
			end
			return reply(STATUS_OF_CODE[code], { ["content-type"] = "application/json" }, e.detail)
		end
	end
	if state == "57014" then
		return reply(503, { ["content-type"] = "application/json" },
			error_body(17, "the request took longer than the gateway allows (LN_REQUEST_TIMEOUT): cancelled and rolled back"))
	end
	if state == "22021" then
		return reply(400, { ["content-type"] = "application/json" },
			error_body(13, "the request is not valid UTF-8"))
	end
	return unavailable("the catalog database is unavailable",
		(e.message or "error") .. (state ~= "" and " (SQLSTATE " .. state .. ")" or ""))
end

-- Run lance_rest once, before the request's deadline.  A statement that
-- may have reached the database is never sent again (lance_db): a commit
-- must not run twice.
-- A call whose GUARD found the extension moved answered no row and ran
-- nothing: it goes again, once, in the schema looked up anew.
local function call(method, path, query, body, headers, header_table)
	local deadline = ngx.req.start_time() + request_timeout
	local rows, outcome, detail
	for _ = 1, 2 do
		local schema
		schema, outcome, detail = replicas.schema(deadline)
		if not schema then
			return nil, outcome, detail
		end
		rows, outcome, detail = replicas.call(replicas.sql_in(SQL, schema),
			{ method, path, query, body or false, headers, schema }, deadline,
			APPLICATION_PREFIX .. ngx.var.lance_request_id, header_table)
		replicas.forget_schema(outcome, detail)
		if not rows or rows[1] then
			break
		end
		replicas.schema_moved()
	end
	return rows, outcome, detail
end

local function refuse(status, code, message)
	return reply(status, { ["content-type"] = "application/json" },
		error_body(code, message))
end

-- A space-separated nginx variable as a set.  The variables are the
-- server's settings ($lance_allowed_hosts, $lance_allowed_origins): each
-- set is made once and kept (a few at most; never more than 16).
local word_sets = {}
local word_set_count = 0

local function word_set(text)
	text = text or ""
	local set = word_sets[text]
	if set then
		return set
	end
	set = {}
	for word in text:gmatch("%S+") do
		set[word:lower()] = true
	end
	if word_set_count >= 16 then
		word_sets, word_set_count = {}, 0
	end
	word_sets[text] = set
	word_set_count = word_set_count + 1
	return set
end

-- A body is JSON (application/json, or a +json type), or Arrow IPC, which
-- the spec's data-plane routes take (they answer 406: the catalog serves no
-- table data); anything else is refused.  The types a web page can send to
-- any origin without asking first (CORS "simple" requests: text/plain,
-- forms), or a body without a type, may come from a page the user merely
-- visits.
local ARROW_TYPES = {
	["application/vnd.apache.arrow.stream"] = true,
	["application/vnd.apache.arrow.file"] = true,
}

local function is_accepted_type(ctype)
	return ctype == "application/json" or ctype:match("^application/[%w%.%-]+%+json$") ~= nil
		or ARROW_TYPES[ctype] == true
end

-- Refuse what a browser may send on a web page's behalf: a foreign Host (DNS
-- rebinding), a foreign Origin, a body of a type a page may post anywhere.
local function refusal(body)
	local host = (ngx.var.http_host or ""):lower()
	local name = host:match("^%[[^%]]*%]") or host:match("^[^:]*")
	if host ~= "" and not word_set(ngx.var.lance_allowed_hosts)[name] then
		return 421, 13, "host \"" .. host .. "\" is not served here"
	end
	local origin = ngx.var.http_origin
	if origin and not word_set(ngx.var.lance_allowed_origins)[origin:lower()] then
		return 403, 15, "requests from web pages of " .. origin .. " are not allowed"
	end
	if body and body ~= "" then
		local ctype = (ngx.var.content_type or ""):lower():match("^%s*([^;%s]*)")
		if not is_accepted_type(ctype) then
			return 415, 13, "a request body must be JSON (content-type application/json)"
		end
	end
	return nil
end

-- The request's headers for lance_rest, as JSON text, with its request id,
-- and as a table (name: value, a repeated header's values joined by ", ");
-- nil when it carries more than MAX_HEADERS.
local function headers_json()
	-- get_headers answers "truncated" as a second value when there were more
	local request_headers, truncated = ngx.req.get_headers(MAX_HEADERS)
	if truncated then
		return nil
	end
	local headers = {}
	for name, value in pairs(request_headers) do
		headers[name] = type(value) == "table" and table.concat(value, ", ") or value
	end
	-- the change log keeps the request's id among its headers: the client's
	-- when sane, else the gateway's own
	headers["x-request-id"] = ngx.var.lance_request_id
	return cjson.encode(headers), headers
end

-- The API key a request sends, as lance_rest() reads it (request_role in
-- src/http/rest.c): x-api-key, else the Authorization header's after
-- "bearer " (in any case) and the spaces that follow; nil without one.
local function sent_key(headers)
	local key = headers["x-api-key"]
	if key then
		return key
	end
	local authorization = headers["authorization"]
	if authorization and authorization:sub(1, 7):lower() == "bearer " then
		return authorization:sub(8):match("^ *(.*)$")
	end
	return nil
end

local function random_salt()
	local f = io.open("/dev/urandom", "rb")
	local bytes = f and f:read(16)
	if f then
		f:close()
	end
	-- nginx's $request_id is 16 random bytes (OpenSSL's) in hex
	return bytes or ngx.var.request_id
end

-- The dicts that keep something of keys (lance_metrics_keys,
-- lance_keys_verified) keep it under key_digest(dict, key, what): base64 of
-- SHA-1(salt .. key), the salt random and the dict's own (SALT_ENTRY), never
-- the key; nil when the dict has no room for a salt (<what> is then not
-- kept).
local SALT_ENTRY = "\tsalt"

local function key_digest(dict, key, what)
	local salt = dict:get(SALT_ENTRY)
	if not salt then
		-- the first worker's salt stays (add never replaces one)
		local ok, err = dict:add(SALT_ENTRY, random_salt())
		salt = dict:get(SALT_ENTRY)
		if not salt then
			ngx.log(ngx.WARN, "lance_gateway: no salt for ", what, ", none kept: ", tostring(err or ok))
			return nil
		end
	end
	return ngx.encode_base64(ngx.sha1_bin(salt .. key))
end

-- LN_KEY_CONCURRENCY (lance_limits): the bucket a request counts in.  A
-- key is known by its id (lnk_<12 hex>, as lance_replicas reads it); the
-- requests without a key (or with one not of a key's form) share the
-- bucket "-".  An id is anyone's to write (lnk_<someone's id>_junk), so a
-- key counts as its id only once the database has authenticated it: its
-- digest is in the dict lance_keys_verified, with its id, for
-- KEY_VERIFIED seconds after the last request the database authenticated
-- it for that came in unverified.  Until then (the first request after
-- the gateway starts, a forged key) it counts apart, in "?<id>": forged
-- keys never take the slots of the key they name, and a key's requests
-- may briefly count in both buckets (twice the limit).
-- key_bucket(headers): the bucket, and the key's digest when unverified.
local KEY_VERIFIED = 600

local function key_bucket(headers)
	local id = replicas.request_key(headers)
	if id == "-" then
		return "-"
	end
	local verified = ngx.shared.lance_keys_verified
	local digest = verified and key_digest(verified, sent_key(headers), "the keys verified")
	if digest and verified:get(digest) == id then
		return id, digest
	end
	-- by the key itself, not the id it names: a forged lnk_<id>_junk never
	-- shares a bucket with the real key's own requests before they verify
	return "?" .. (digest or id), digest
end

-- The ngx.ctx fields of a request's slots, given back by the log phase:
-- its key's, and for a key not verified (or none) its address's too.
local SLOT_FIELDS = { "lance_slot", "lance_address_slot" }

function M.handle()
	local headers, header_table = headers_json()
	if not headers then
		return refuse(431, 13, "a request may carry at most " .. MAX_HEADERS .. " headers")
	end
	ngx.req.read_body()
	local body = ngx.req.get_body_data()
	if not body then
		local file = ngx.req.get_body_file()
		if file then
			local f = io.open(file, "rb")
			if not f then
				return unavailable("could not read the request body")
			end
			body = f:read("*a")
			f:close()
		end
	end
	-- the database takes text: a NUL would end the body there, and the
	-- catalog would run and record another request than the one sent
	if body and body:find("\0", 1, true) then
		return refuse(400, 13, "the request body holds a NUL byte")
	end

	local status, code, message = refusal(body)
	if status then
		return refuse(status, code, message)
	end

	local path = ngx.var.request_uri:match("^[^?]*")
	local method = ngx.req.get_method()
	-- LN_KEY_CONCURRENCY: a slot of the key's bucket, given back by the
	-- log phase (M.log), which every request runs whatever its end.  No
	-- internal redirect follows (reply sends its headers itself), which
	-- would drop ngx.ctx and the slot with it.
	local bucket, digest = key_bucket(header_table)
	-- a request the database has not vouched for (no key, a key not yet
	-- seen, a forged or random one, each of its own bucket) counts against
	-- its address as well: one client cannot make up keys for more slots
	local address = bucket:sub(1, 1) ~= "l" and ("@" .. (ngx.var.binary_remote_addr or "-")) or nil
	local taken = limits.acquire(bucket)
	if taken and address and not limits.acquire(address) then
		-- the key's slot was taken, the address's was not: give it back
		limits.release(bucket)
		taken = false
	end
	if not taken then
		ngx.var.lance_operation = replicas.operation(method, path) or "-"
		ngx.var.lance_throttled = "key_concurrency"
		return refuse(429, 21, "too many requests of this API key in flight at once (LN_KEY_CONCURRENCY: "
			.. limits.limit() .. "): try again later")
	end
	ngx.ctx.lance_slot = bucket
	ngx.ctx.lance_address_slot = address
	local rows, outcome, detail = call(method, path, ngx.var.args or "", body, headers, header_table)
	-- the access log's and the metrics' operation (lance_replicas)
	if rows then
		replicas.ensure_routes(ngx.req.start_time() + request_timeout)
	end
	ngx.var.lance_operation = replicas.operation(method, path) or "-"
	if not rows then
		if outcome == "error" then
			return database_error(detail)
		elseif outcome == "busy" then
			return unavailable("the request waited past LN_REQUEST_TIMEOUT (" .. request_timeout
				.. " s) for a connection", detail)
		elseif outcome == "unknown" then
			return unavailable("the outcome of the request is unknown, it was not repeated", detail)
		end
		return unavailable("the catalog database is unavailable", detail)
	end
	local row = rows[1]
	if not row then
		return unavailable("the catalog database is unavailable", "lance_rest answered no row")
	end
	local status, response_headers, response_body, key_id = tonumber(row[1]), row[2], row[3], row[4]
	-- the access log's key= (nginx.conf.in): the key the catalog authenticated, else "-"
	if type(key_id) == "string" and key_id ~= "" then
		ngx.var.lance_key_id = key_id
		-- the key is who its id says: from now on it counts as its id, for
		-- KEY_VERIFIED seconds after its last request the database vouched
		-- for (a busy key never falls back into the unverified buckets)
		if digest and (bucket == key_id or bucket == "?" .. digest) then
			ngx.shared.lance_keys_verified:set(digest, key_id, KEY_VERIFIED)
		end
	end
	return reply(status, cjson.decode(response_headers) or {}, response_body)
end

-- Counted per gateway (its workers share the dict lance_metrics, which
-- outlives a worker's restart): each /v1/ request by operation and status,
-- its duration in a histogram by operation, and each Lance error code
-- answered.
local BUCKETS = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30 }

-- The bytes of a path the access log shows as %XX (nginx.conf.in,
-- $lance_log_path).
local LOG_PATH_ESCAPED = "[^%w%-%._~!%$&'%(%)%*%+,;=:@/]"

local function log_path_byte(c)
	return string.format("%%%02X", string.byte(c))
end

-- The log phase (log_by_lua, every request's, before the access log's
-- line is written): the path that line shows, and the counts above.
function M.log()
	local uri = ngx.var.uri or ""
	local shown = uri
	if shown:find(LOG_PATH_ESCAPED) then
		shown = shown:gsub(LOG_PATH_ESCAPED, log_path_byte)
	end
	-- an API key's shape in the path (refused: nginx.conf.in) is never logged
	if shown:find("[lL][nN][kK]_") then
		shown = shown:gsub("([lL][nN][kK]_" .. ("%x"):rep(12) .. "_)%x+", "%1****")
	end
	ngx.var.lance_log_path = shown
	-- the request's slots of LN_KEY_CONCURRENCY, if it took them
	local ctx = ngx.ctx
	for _, name in ipairs(SLOT_FIELDS) do
		local slot = ctx[name]
		if slot then
			ctx[name] = nil
			limits.release(slot)
		end
	end
	-- A request nginx refused before the server's rewrite phase (a
	-- malformed request line, a path or headers too long) has none of the
	-- values its set directives give: without them its line would not be
	-- JSON ("code":,)
	if ngx.var.lance_code == "" then
		ngx.var.lance_code = "null"
		if ngx.var.lance_operation == "" then
			ngx.var.lance_operation = "-"
		end
		if ngx.var.lance_key_id == "" then
			ngx.var.lance_key_id = "-"
		end
	end
	local metrics = ngx.shared.lance_metrics
	if not metrics then
		return
	end
	-- every 429 (code 21), whatever the path: by the gateway's limit that
	-- refused it, else the database's (its rate limits)
	local code = ngx.var.lance_code
	if ngx.var.status == "429" or code == "21" then
		local reason = ngx.var.lance_throttled
		metrics:incr("t\t" .. ((reason and reason ~= "") and reason or "rate"), 1, 0)
	end
	if uri:sub(1, 4) ~= "/v1/" then
		return
	end
	local operation = ngx.var.lance_operation
	if not operation or operation == "-" then
		operation = "none"
	end
	local seconds = tonumber(ngx.var.request_time) or 0
	metrics:incr("r\t" .. operation .. "\t" .. (ngx.var.status or "0"), 1, 0)
	-- the first bucket the duration fits (render sums them up): one count
	-- per request, not one per bucket above it
	for i, le in ipairs(BUCKETS) do
		if seconds <= le then
			metrics:incr("h\t" .. operation .. "\t" .. i, 1, 0)
			break
		end
	end
	metrics:incr("n\t" .. operation, 1, 0)
	metrics:incr("s\t" .. operation, seconds, 0)
	if code and code ~= "null" then
		metrics:incr("e\t" .. code, 1, 0)
	end
end

-- GET /metrics: the counts above and the gauges of lance_db (connections in
-- use, requests waiting for one) in Prometheus's text format, for a key of
-- an administrator: the database decides, by GET /v1/stats (lance_stats(),
-- an administrator's), asked with the request's headers; its 401 or 403 is
-- the answer otherwise (without a key: 401 at once; see M.metrics for when
-- the database cannot answer).
local function sorted_keys(set)
	local list = {}
	for k in pairs(set) do
		list[#list + 1] = k
	end
	table.sort(list)
	return list
end

local function render()
	local metrics = ngx.shared.lance_metrics
	local requests, counts, sums, buckets, errors, gauges = {}, {}, {}, {}, {}, {}
	-- every reason shown, 0 until a refusal of it
	local throttled = { connections_per_address = 0, key_concurrency = 0, rate = 0 }
	-- b<TAB>operation<TAB>i: the cumulative counts of workers before the
	-- buckets were counted once per request (the dict outlives a reload)
	local legacy = {}
	local workers = ngx.worker.count()
	for _, key in ipairs(metrics:get_keys(0)) do
		local value = metrics:get(key) or 0
		-- g<TAB>name<TAB>pool<TAB>worker: summed over the workers running;
		-- the figures of a worker id no longer there (nginx reloaded with
		-- fewer workers, or one ended before it could write 0) are not
		local kind, a, b, worker = key:match("^(%a)\t([^\t]*)\t?([^\t]*)\t?([^\t]*)")
		if kind == "g" and not (tonumber(worker) and tonumber(worker) < workers) then
			kind = nil
		end
		if kind == "r" then
			requests[a .. "\t" .. b] = value
		elseif kind == "n" then
			counts[a] = value
		elseif kind == "s" then
			sums[a] = value
		elseif kind == "h" then
			buckets[a .. "\t" .. b] = value
		elseif kind == "b" and tonumber(b) then
			legacy[a] = legacy[a] or {}
			legacy[a][tonumber(b)] = value
		elseif kind == "e" then
			errors[a] = value
		elseif kind == "t" then
			throttled[a] = value
		elseif kind == "g" then
			gauges[a .. "\t" .. b] = (gauges[a .. "\t" .. b] or 0) + value
		end
	end
	for operation, cumulative in pairs(legacy) do
		local below = 0
		for i = 1, #BUCKETS do
			local key = operation .. "\t" .. i
			local upto = math.max(cumulative[i] or 0, below)
			buckets[key] = (buckets[key] or 0) + upto - below
			below = upto
		end
	end
	local out = {
		"# HELP lance_requests_total Requests to /v1/ answered, by the spec's operation and HTTP status.",
		"# TYPE lance_requests_total counter",
	}
	for _, key in ipairs(sorted_keys(requests)) do
		local operation, status = key:match("^([^\t]*)\t(.*)$")
		out[#out + 1] = string.format('lance_requests_total{operation="%s",status="%s"} %d', operation, status,
			requests[key])
	end
	out[#out + 1] = "# HELP lance_request_duration_seconds Time from a request's arrival to its answer, by operation."
	out[#out + 1] = "# TYPE lance_request_duration_seconds histogram"
	for _, operation in ipairs(sorted_keys(counts)) do
		local below = 0
		for i, le in ipairs(BUCKETS) do
			below = below + (buckets[operation .. "\t" .. i] or 0)
			out[#out + 1] = string.format('lance_request_duration_seconds_bucket{operation="%s",le="%s"} %d',
				operation, tostring(le), below)
		end
		out[#out + 1] = string.format('lance_request_duration_seconds_bucket{operation="%s",le="+Inf"} %d',
			operation, counts[operation])
		out[#out + 1] = string.format('lance_request_duration_seconds_sum{operation="%s"} %.6f', operation,
			sums[operation] or 0)
		out[#out + 1] = string.format('lance_request_duration_seconds_count{operation="%s"} %d', operation,
			counts[operation])
	end
	out[#out + 1] = "# HELP lance_errors_total Error answers by Lance error code."
	out[#out + 1] = "# TYPE lance_errors_total counter"
	for _, code in ipairs(sorted_keys(errors)) do
		out[#out + 1] = string.format('lance_errors_total{code="%s"} %d', code, errors[code])
	end
	out[#out + 1] = "# HELP lance_throttled_total Requests answered 429 (code 21), by the limit that refused them:"
		.. " connections_per_address (LN_GATEWAY_CONNECTIONS_PER_ADDRESS), key_concurrency (LN_KEY_CONCURRENCY),"
		.. " rate (the database's own: its rate limits, a store that asks for fewer requests)."
	out[#out + 1] = "# TYPE lance_throttled_total counter"
	for _, reason in ipairs(sorted_keys(throttled)) do
		out[#out + 1] = string.format('lance_throttled_total{reason="%s"} %d', reason, throttled[reason])
	end
	for _, gauge in ipairs({ { "in_use", "lance_db_connections_in_use", "Database connections running a call now." },
		{ "waiting", "lance_db_connections_waiting", "Calls waiting for a free database connection." } }) do
		out[#out + 1] = "# HELP " .. gauge[2] .. " " .. gauge[3]
		out[#out + 1] = "# TYPE " .. gauge[2] .. " gauge"
		for _, key in ipairs(sorted_keys(gauges)) do
			local name, pool_name = key:match("^([^\t]*)\t(.*)$")
			if name == gauge[1] then
				out[#out + 1] = string.format('%s{pool="%s"} %d', gauge[2], pool_name, gauges[key])
			end
		end
	end
	return table.concat(out, "\n") .. "\n"
end

local STATS_SQL = "SELECT status, response_headers::pg_catalog.text, response_body, key_id"
	.. " FROM @SCHEMA@.lance_rest('GET'::pg_catalog.text, '/v1/stats'::pg_catalog.text, NULL::pg_catalog.text,"
	.. " NULL::pg_catalog.text, $1::pg_catalog.jsonb)" .. string.format(replicas.GUARD, 2)

-- The metrics are most needed when the database is down or every
-- connection is busy, so a scrape never waits for one: without a key it is
-- 401 at once; with one, the database is asked only on a connection free at
-- once, within METRICS_TIMEOUT seconds (Prometheus gives a scrape 10 s);
-- and a key it authorized within the last METRICS_AUTHORIZED seconds still
-- reads the metrics while it gives no answer (a revoked key, at most that
-- long): no connection free, none made, no answer in time, a cancel
-- (57014, LN017).  Any answer it gives stands: 401 or 403 (which also
-- forgets the key's authorization), another error or refusal as
-- lance_rest or database_error answers it.  The dict lance_metrics_keys
-- keeps those authorizations under a salted hash of the key (the salt:
-- random, the gateway's own), never the key, with the id of the key for
-- the access log.
local METRICS_TIMEOUT = 2
local METRICS_AUTHORIZED = 60

-- The dict entry of <key>'s authorization for /metrics (key_digest).
local function authorization_entry(authorized, key)
	local digest = key_digest(authorized, key, "the authorizations of /metrics")
	return digest and "k\t" .. digest
end

local function metrics_answer()
	return reply(200, { ["content-type"] = "text/plain; version=0.0.4; charset=utf-8",
		["cache-control"] = "no-store" }, render())
end

-- True for a call that got no answer of the database's (see M.metrics).
local function unanswered(outcome, detail)
	if outcome == "busy" or outcome == "not_sent" or outcome == "unknown" then
		return true
	end
	local state = outcome == "error" and type(detail) == "table" and detail.sqlstate
	return state == "57014" or state == "LN017"
end

function M.metrics()
	local headers, header_table = headers_json()
	if not headers then
		return refuse(431, 13, "a request may carry at most " .. MAX_HEADERS .. " headers")
	end
	local status, code, message = refusal(nil)
	if status then
		return refuse(status, code, message)
	end
	local key = sent_key(header_table)
	if not key then
		return refuse(401, 16,
			"GET /metrics needs an administrator's API key (x-api-key or Authorization: Bearer)")
	end
	local authorized = ngx.shared.lance_metrics_keys
	local entry = authorized and authorization_entry(authorized, key)
	local deadline = ngx.now() + math.min(METRICS_TIMEOUT, request_timeout)
	local app_name = APPLICATION_PREFIX .. ngx.var.lance_request_id
	-- only a connection free at once: a scrape never queues
	local schema, outcome, detail = replicas.schema(deadline, true)
	local rows
	if schema then
		rows, outcome, detail = pool:call(replicas.sql_in(STATS_SQL, schema), { headers, schema }, deadline,
			app_name, true)
		replicas.forget_schema(outcome, detail)
		if rows and not rows[1] then
			-- the GUARD: the extension moved, nothing ran (the next scrape looks it up)
			replicas.schema_moved()
			rows, outcome, detail = nil, "not_sent", "the extension's schema moved"
		end
	end
	local row = rows and rows[1]
	if row then
		if type(row[4]) == "string" and row[4] ~= "" then
			ngx.var.lance_key_id = row[4]
		end
		local answered = tonumber(row[1])
		if answered ~= 200 then
			-- the database said no (401, 403): an earlier authorization no
			-- longer counts; another answer (429, 5xx) passes through
			if entry and (answered == 401 or answered == 403) then
				authorized:delete(entry)
			end
			return reply(answered, cjson.decode(row[2]) or {}, row[3])
		end
		if entry then
			local ok, err = authorized:set(entry, ngx.var.lance_key_id, METRICS_AUTHORIZED)
			if not ok then
				ngx.log(ngx.WARN, "lance_gateway: cannot keep the authorization of /metrics: ", err)
			end
		end
		return metrics_answer()
	end
	if rows then
		return unavailable("the catalog database is unavailable", "lance_rest answered no row")
	end
	-- no answer of the database's (down, every connection busy, no answer
	-- within METRICS_TIMEOUT): a key it authorized a moment ago still
	-- reads the metrics
	local key_id = entry and unanswered(outcome, detail) and authorized:get(entry)
	if key_id then
		ngx.var.lance_key_id = key_id
		return metrics_answer()
	end
	if outcome == "error" and unanswered(outcome, detail) then
		return unavailable("the database did not check the key within " .. METRICS_TIMEOUT .. " s",
			detail.message)
	elseif outcome == "error" then
		return database_error(detail)
	elseif outcome == "busy" then
		return unavailable("no database connection was free to check the key"
			.. " (GET /metrics does not wait for one)", detail)
	end
	return unavailable("the catalog database is unavailable", detail)
end

-- GET /readyz: 200 when the database answers and its extension is at the
-- version of the library the database loaded (lance_library_version()),
-- else 503.  Without a key; the body names no host, role or error text.
local READY_SQL = "SELECT @SCHEMA@.lance_library_version() OPERATOR(pg_catalog.=) (SELECT e.extversion"
	.. " FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'lance_namespace')"
local READY_TIMEOUT = 5

function M.readyz()
	local deadline = ngx.now() + math.min(READY_TIMEOUT, request_timeout)
	-- only a connection free at once: a probe does not queue behind requests
	local schema, outcome, detail = replicas.schema(deadline, true)
	local rows
	if schema then
		rows, outcome, detail = pool:call(replicas.sql_in(READY_SQL, schema), {}, deadline,
			APPLICATION_PREFIX .. ngx.var.lance_request_id, true)
		replicas.forget_schema(outcome, detail)
	end
	local answer = rows and rows[1] and rows[1][1]
	ngx.header["content-type"] = "application/json"
	ngx.header["cache-control"] = "no-store"
	if answer == "t" then
		ngx.status = 200
		ngx.print('{"status":"ready"}')
		return ngx.exit(200)
	end
	local reason
	if rows then
		reason = "the extension's installed version is not the library's: ALTER EXTENSION lance_namespace UPDATE"
	else
		ngx.log(ngx.WARN, "lance_gateway: /readyz: ", tostring(outcome), " ",
			type(detail) == "table" and tostring(detail.message) or tostring(detail))
		if outcome == "error" and type(detail) == "table" and detail.sqlstate == "42883" then
			-- no lance_library_version(): an extension older than the library
			reason = "the extension's installed version is not the library's: ALTER EXTENSION lance_namespace UPDATE"
		elseif outcome == "error" and type(detail) == "table" and detail.sqlstate == "42704" then
			reason = "the extension lance_namespace is not installed: CREATE EXTENSION lance_namespace"
		elseif outcome == "error" and type(detail) == "table" and detail.schema_refused then
			reason = "the extension's schema name holds a \"$\", which the gateway refuses:"
				.. " DROP and CREATE EXTENSION lance_namespace in another schema"
		else
			reason = "the catalog database cannot be reached"
		end
	end
	ngx.status = 503
	ngx.header["retry-after"] = RETRY_AFTER
	ngx.print('{"status":"not ready","reason":' .. cjson.encode(reason) .. "}")
	return ngx.exit(503)
end

return M
