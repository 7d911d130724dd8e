-- lance_pgwire: PostgreSQL's frontend/backend protocol (version 3.0) on
-- nginx's cosockets, for the gateway's calls to a database on this host.
--
-- A call through nginx's thread pool (lance_db's thread path) wakes six
-- threads in turn (client, worker, pool thread, backend, pool thread,
-- worker); on a cosocket the worker itself sends the call and is woken by
-- its event loop when the answer is there, with every other request's
-- events of that moment: four wake-ups, and none of them a thread's.  A
-- cosocket is bound to the request that made it and cannot be handed to
-- another; nginx's keepalive pool of a given name can, and keeps the
-- connection between calls.
--
-- What is spoken here is the least the gateway needs: a Unix socket, a
-- startup packet (user, database, options), authentication that needs no
-- secret (trust, peer) or a password in the clear or md5 when the
-- conninfo holds one, and the extended query protocol (Parse, Bind,
-- Execute, Sync) with text values.  Anything else (another
-- authentication, TLS, several hosts) is libpq's: lance_db keeps its
-- thread path for those, and connect() answers "unsupported" (nothing of
-- a call was sent) when the server asks for what is not spoken here.

local M = {}

local bit = require("bit")
local band, bor, lshift, rshift = bit.band, bit.bor, bit.lshift, bit.rshift
local char, byte, sub, find = string.char, string.byte, string.sub, string.find
local concat = table.concat

-- A message longer than this is taken for a broken stream (PostgreSQL's
-- own largest field is 1 GB).
local MAX_MESSAGE = 1024 * 1024 * 1024 + 4096
-- How much a read asks of the socket at most when the message it waits
-- for is short: a call's whole answer usually comes in one read.
local READ_CHUNK = 65536

local function int32(n)
	return char(band(rshift(n, 24), 255), band(rshift(n, 16), 255), band(rshift(n, 8), 255), band(n, 255))
end

local function int16(n)
	return char(band(rshift(n, 8), 255), band(n, 255))
end

local function get_int32(s, i)
	local a, b, c, d = byte(s, i, i + 3)
	return bor(lshift(a, 24), lshift(b, 16), lshift(c, 8), d)
end

local function get_int16(s, i)
	local a, b = byte(s, i, i + 1)
	return a * 256 + b
end

local function message(kind, body)
	return kind .. int32(#body + 4) .. body
end

-- The messages of the extended query protocol (text values; false: NULL).
function M.parse(name, sql)
	return message("P", name .. "\0" .. sql .. "\0" .. int16(0))
end

function M.bind_execute(name, params)
	local n = #params
	local parts = { "\0", name, "\0", int16(0), int16(n) }
	for i = 1, n do
		local value = params[i]
		if value == false or value == nil then
			parts[#parts + 1] = int32(-1)
		else
			value = tostring(value)
			parts[#parts + 1] = int32(#value)
			parts[#parts + 1] = value
		end
	end
	parts[#parts + 1] = int16(0)
	return message("B", concat(parts)) .. message("E", "\0" .. int32(0))
end

M.SYNC = message("S", "")

local Conn = {}
Conn.__index = Conn

-- need(conn, n): true once n bytes are buffered; nil, err else.
local function need(conn, n)
	local have = #conn.buf - conn.pos + 1
	while have < n do
		local data, err
		if n - have > READ_CHUNK then
			data, err = conn.sock:receive(n - have)
		else
			data, err = conn.sock:receiveany(READ_CHUNK)
		end
		if not data then
			return nil, err
		end
		if have == 0 then
			conn.buf, conn.pos = data, 1
		else
			conn.buf, conn.pos = sub(conn.buf, conn.pos) .. data, 1
		end
		have = #conn.buf
	end
	return true
end

-- The next message: its type (a character) and body; nil, err when the
-- connection broke or timed out.
local function receive(conn)
	local ok, err = need(conn, 5)
	if not ok then
		return nil, err
	end
	local pos = conn.pos
	local kind = sub(conn.buf, pos, pos)
	local len = get_int32(conn.buf, pos + 1)
	if len < 4 or len > MAX_MESSAGE then
		return nil, "a malformed message from the server"
	end
	ok, err = need(conn, len + 1)
	if not ok then
		return nil, err
	end
	pos = conn.pos
	local body = sub(conn.buf, pos + 5, pos + len)
	conn.pos = pos + len + 1
	return kind, body
end

-- An ErrorResponse's fields: sqlstate, message, detail.
local function error_fields(body)
	local e = {}
	local i = 1
	while i <= #body do
		local code = sub(body, i, i)
		if code == "\0" then
			break
		end
		local stop = find(body, "\0", i + 1, true) or #body + 1
		local value = sub(body, i + 1, stop - 1)
		if code == "C" then
			e.sqlstate = value
		elseif code == "M" then
			e.message = value
		elseif code == "D" then
			e.detail = value
		end
		i = stop + 1
	end
	e.message = e.message or "an error without a message"
	return e
end

-- A DataRow's values: strings, false for NULL.
local function data_row(body)
	local row = {}
	local n = get_int16(body, 1)
	local i = 3
	for c = 1, n do
		local len = get_int32(body, i)
		i = i + 4
		if len < 0 then
			row[c] = false
		else
			row[c] = sub(body, i, i + len - 1)
			i = i + len
		end
	end
	return row
end

-- authenticate(conn, o): true once the server said AuthenticationOk;
-- nil, err, "unsupported" for a method not spoken here.
local function authenticate(conn, o, code, body)
	if code == 3 and o.password then
		conn.sock:send(message("p", o.password .. "\0"))
		return "sent"
	elseif code == 5 and o.password then
		local salt = sub(body, 5, 8)
		local inner = ngx.md5(o.password .. o.user)
		conn.sock:send(message("p", "md5" .. ngx.md5(inner .. salt) .. "\0"))
		return "sent"
	end
	return nil, "the server asks for an authentication (" .. tostring(code) .. ") not spoken here", "unsupported"
end

-- M.connect{path, user, database, options, application_name, pool,
-- pool_size, timeout_ms, password}: a connection (reused from the pool
-- when it has one idle: conn.fresh is false then), ready for a query.
-- Answers nil, err, kind else: kind "unsupported" when the server asked
-- for an authentication not spoken here (nothing was sent but the
-- startup packet).
function M.connect(o)
	local sock = ngx.socket.tcp()
	local timeout = math.max(1, math.floor(o.timeout_ms))
	sock:settimeouts(timeout, timeout, timeout)
	local ok, err = sock:connect("unix:" .. o.path, { pool = o.pool, pool_size = o.pool_size })
	if not ok then
		return nil, "cannot connect to " .. o.path .. ": " .. tostring(err)
	end
	local conn = setmetatable({ sock = sock, buf = "", pos = 1, fresh = sock:getreusedtimes() == 0 }, Conn)
	if not conn.fresh then
		return conn
	end
	local params = { "user", o.user, "database", o.database, "application_name", o.application_name,
		"client_encoding", "UTF8" }
	if o.options then
		params[#params + 1], params[#params + 2] = "options", o.options
	end
	local startup = int32(196608) .. concat(params, "\0") .. "\0\0"
	ok, err = sock:send(int32(#startup + 4) .. startup)
	if not ok then
		sock:close()
		return nil, "cannot send the startup packet: " .. tostring(err)
	end
	while true do
		local kind, body = receive(conn)
		if not kind then
			sock:close()
			return nil, "no answer to the startup packet: " .. tostring(body)
		elseif kind == "R" then
			local code = get_int32(body, 1)
			if code ~= 0 then
				local sent, why, what = authenticate(conn, o, code, body)
				if not sent then
					sock:close()
					return nil, why, what
				end
			end
		elseif kind == "E" then
			sock:close()
			return nil, error_fields(body).message
		elseif kind == "Z" then
			return conn
		end
		-- ParameterStatus, BackendKeyData, notices: nothing the gateway uses
	end
end

-- conn:send(data, timeout_ms): true once the whole of data was handed to
-- the kernel; nil, err else (its end never left: nginx stops at the first
-- failure).
function Conn:send(data, timeout_ms)
	self.sock:settimeouts(nil, math.max(1, math.floor(timeout_ms)), nil)
	local ok, err = self.sock:send(data)
	if not ok then
		return nil, err
	end
	return true
end

-- conn:results(timeout_ms, want): the answers to what was sent, up to
-- its ReadyForQuery.  Answers rows (the want-th executed statement's),
-- error (the first ErrorResponse, or nil), the transaction status
-- ("I" idle); nil, err when the connection broke or timed out.
function Conn:results(timeout_ms, want)
	self.sock:settimeouts(nil, nil, math.max(1, math.floor(timeout_ms)))
	local done, rows, failure = 0, {}, nil
	while true do
		local kind, body = receive(self)
		if not kind then
			return nil, body
		elseif kind == "D" then
			if done + 1 == want then
				rows[#rows + 1] = data_row(body)
			end
		elseif kind == "C" or kind == "I" then
			done = done + 1
		elseif kind == "E" then
			failure = failure or error_fields(body)
		elseif kind == "Z" then
			return rows, failure, body
		end
	end
end

-- conn:keep(idle_ms): back to the keepalive pool; conn:close().
function Conn:keep(idle_ms)
	if self.pos <= #self.buf then
		-- the server sent more than the answer (a notification): kept,
		-- the next call would take it for its own
		self.sock:close()
		return
	end
	local ok = self.sock:setkeepalive(idle_ms)
	if not ok then
		self.sock:close()
	end
end

function Conn:close()
	self.sock:close()
end

return M
