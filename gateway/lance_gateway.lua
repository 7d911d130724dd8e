-- lance_gateway: nginx (lua module) in front of the lance_namespace extension.
--
-- The gateway knows nothing of Lance: it hands each /v1/ request (method, raw
-- path, raw query string, body, headers) to the SQL function lance_rest(),
-- as escaped literals, and writes back the status, headers and body it
-- answers.  The database calls are lance_db's: they run in nginx's thread
-- pool over a bounded pool of connections per worker, as the database role
-- of LN_DATABASE_URL (lance_gateway), so a request that waits never holds up
-- another, and each has a deadline (LN_REQUEST_TIMEOUT).  Authentication is
-- the database's: lance_rest() checks
-- the request's API key and runs the request as the key's role, and answers
-- the id of the key it authenticated, which the gateway writes to its access
-- log (never an id merely sent: "lnk_<someone's id>_junk" is logged as "-").
local cjson = require("cjson.safe")
local lance_db = require("lance_db")
local replicas = require("lance_replicas")

local M = {}

-- This worker's pool of database connections (init_worker).
local pool
-- LN_REQUEST_TIMEOUT: seconds a request may take, from its arrival.
local request_timeout = 30

local SQL = "SELECT status, response_headers::text, response_body, key_id"
	.. " FROM lance_rest($1, $2, $3, $4, $5::jsonb)"

-- How soon a client may try again after a 503, in seconds (Retry-After).
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
end

local function reply(status, headers, body)
	ngx.status = status
	for name, value in pairs(headers) do
		ngx.header[name] = value
	end
	if status == 503 then
		ngx.header["retry-after"] = RETRY_AFTER
	end
	if body then
		ngx.print(body)
	end
	return ngx.exit(status)
end

-- A Lance error body, {"code": N, "error": "..."}, with code first as the
-- catalog writes its own (a Lua table has no order).
local function error_body(code, message)
	return '{"code":' .. code .. ',"error":' .. cjson.encode(message) .. "}"
end

local function unavailable(message)
	ngx.log(ngx.ERR, "lance_gateway: ", message)
	return reply(503, { ["content-type"] = "application/json" },
		error_body(17, "the catalog database is unavailable: " .. message))
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
	return unavailable((e.message or "error") .. (state ~= "" and " (SQLSTATE " .. state .. ")" or ""))
end

-- Run lance_rest once, before the request's deadline.  A statement that
-- may have reached the database is never sent again (lance_db): a commit
-- must not run twice.
local function call(method, path, query, body, headers)
	local deadline = ngx.req.start_time() + request_timeout
	return replicas.call(SQL, { method, path, query, body or false, headers }, deadline)
end

local function refuse(status, code, message)
	return reply(status, { ["content-type"] = "application/json" },
		error_body(code, message))
end

-- A space-separated nginx variable as a set.
local function word_set(text)
	local set = {}
	for word in (text or ""):gmatch("%S+") do
		set[word:lower()] = true
	end
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

function M.handle()
	-- get_headers answers "truncated" as a second value when there were more
	local request_headers, truncated = ngx.req.get_headers(MAX_HEADERS)
	if truncated then
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

	local status, code, message = refusal(body)
	if status then
		return refuse(status, code, message)
	end

	local headers = {}
	for name, value in pairs(request_headers) do
		headers[name] = type(value) == "table" and table.concat(value, ", ") or value
	end

	local path = ngx.var.request_uri:match("^[^?]*")
	local rows, outcome, detail = call(ngx.req.get_method(), path, ngx.var.args or "", body,
		cjson.encode(headers))
	if not rows then
		if outcome == "error" then
			return database_error(detail)
		elseif outcome == "busy" then
			return unavailable("the request waited past LN_REQUEST_TIMEOUT (" .. request_timeout
				.. " s) for a connection: " .. tostring(detail))
		elseif outcome == "unknown" then
			return unavailable("the outcome of the request is unknown, it was not repeated: "
				.. tostring(detail))
		end
		return unavailable(tostring(detail))
	end
	local row = rows[1]
	if not row then
		return unavailable("lance_rest answered no row")
	end
	local status, response_headers, response_body, key_id = tonumber(row[1]), row[2], row[3], row[4]
	-- the access log's key= (nginx.conf.in): the key the catalog authenticated, else "-"
	if type(key_id) == "string" and key_id ~= "" then
		ngx.var.lance_key_id = key_id
	end
	return reply(status, cjson.decode(response_headers) or {}, response_body)
end

return M
