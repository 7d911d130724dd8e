-- lance_gateway: nginx (lua module) in front of the lance_namespace extension.
--
-- The gateway knows nothing of Lance: it hands each /v1/ request (method, raw
-- path, raw query string, body, headers) to the SQL function lance_rest(),
-- with bound parameters, and writes back the status, headers and body it
-- answers.  Each nginx worker keeps one database connection, as the database
-- role lance_gateway.  Authentication is the database's: lance_rest() checks
-- the request's API key and runs the request as the key's role, and answers
-- the id of the key it authenticated, which the gateway writes to its access
-- log (never an id merely sent: "lnk_<someone's id>_junk" is logged as "-").
local DBI = require("DBI")
local cjson = require("cjson.safe")

local M = {}

local dbh, sth

local SQL = "SELECT status, response_headers::text, response_body, key_id"
	.. " FROM lance_rest(?, ?, ?, ?, ?::jsonb)"

-- The most headers a request may carry.  The gateway hands the catalog
-- every header or refuses the request (431, code 13): one it did not read
-- (an API key after 100 others) must not be dropped silently, which would
-- run the request without it.
local MAX_HEADERS = 100

local function connect()
	local conf = ngx.var
	local conn, err = DBI.Connect("PostgreSQL", conf.lance_db, conf.lance_user, "",
		conf.lance_host, tonumber(conf.lance_port))
	if not conn then
		return nil, err
	end
	conn:autocommit(true)
	local stmt, perr = conn:prepare(SQL)
	if not stmt then
		conn:close()
		return nil, perr
	end
	dbh, sth = conn, stmt
	return true
end

local function reply(status, headers, body)
	ngx.status = status
	for name, value in pairs(headers) do
		ngx.header[name] = value
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

-- Run lance_rest once.  A failed statement is not retried: the server may
-- have committed it before the connection broke, and running a commit twice
-- is not safe.  The connection is dropped and made anew for the next request.
local function call(method, path, query, body, headers)
	if not sth then
		local ok, err = connect()
		if not ok then
			return nil, err
		end
	end
	local ok, err = sth:execute(method, path, query, body, headers)
	if ok then
		local row = sth:fetch(false)
		if row then
			return row
		end
		err = "lance_rest answered no row"
	end
	pcall(function() dbh:close() end)
	dbh, sth = nil, nil
	return nil, err
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
	local row, err = call(ngx.req.get_method(), path, ngx.var.args or "", body,
		cjson.encode(headers))
	if not row then
		return unavailable(tostring(err))
	end
	local status, response_headers, response_body, key_id = tonumber(row[1]), row[2], row[3], row[4]
	-- the access log's key= (nginx.conf.in): the key the catalog authenticated, else "-"
	if type(key_id) == "string" and key_id ~= "" then
		ngx.var.lance_key_id = key_id
	end
	return reply(status, cjson.decode(response_headers) or {}, response_body)
end

return M
