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

-- A message longer than this is taken for a broken stream: PostgreSQL's
-- own largest field is 1 GB, and only a row, a row description, an error,
-- a notice or a notification is long; any other message is short (libpq's
-- limits, as its startup's authentication request).
local MAX_MESSAGE = 1024 * 1024 * 1024 + 4096
local LONG_KINDS = { D = true, T = true, E = true, N = true, A = true }
local MAX_SHORT = 30000
local MAX_STARTUP_AUTH = 2000
-- How much one read asks for at most.  Every read is a receiveany, which
-- answers what the socket has (at most lua_socket_buffer_size): the
-- deadline is checked between reads, so a server that sends a byte at a
-- time holds a call no longer than one that sends nothing.
local READ_CHUNK = 1024 * 1024
-- How much one send hands over at most (the deadline is checked between
-- sends: nginx's send timeout starts anew with each bit of progress, so a
-- peer that takes a chunk in many small pieces may hold one past it).
local SEND_CHUNK = 65536

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

-- A Bind's fixed start (unnamed portal, the statement, all values text,
-- their count), by statement name and count (the unnamed statement has
-- several); a NULL value; the end (all results text) and the Execute that
-- follows it (unnamed portal, all rows): every call made of them and its
-- values, in one concatenation.
local bind_heads = {}
local bind_head_count = 0
local NULL_VALUE = int32(-1)
local BIND_END_EXECUTE = int16(0) .. message("E", "\0" .. int32(0))

local function bind_head(name, n)
	local by_count = bind_heads[name]
	local head = by_count and by_count[n]
	if head then
		return head
	end
	-- statement names are few (one per query text), but never kept unbounded
	if bind_head_count >= 64 then
		bind_heads, bind_head_count, by_count = {}, 0, nil
	end
	if not by_count then
		by_count = {}
		bind_heads[name] = by_count
	end
	head = "\0" .. name .. "\0" .. int16(0) .. int16(n)
	by_count[n] = head
	bind_head_count = bind_head_count + 1
	return head
end

function M.bind_execute(name, params)
	local n = #params
	local head = bind_head(name, n)
	local parts = { "B", "", head }
	local length = 4 + #head + 2
	for i = 1, n do
		local value = params[i]
		if value == false or value == nil then
			parts[#parts + 1] = NULL_VALUE
			length = length + 4
		else
			value = tostring(value)
			parts[#parts + 1] = int32(#value)
			parts[#parts + 1] = value
			length = length + 4 + #value
		end
	end
	parts[2] = int32(length)
	parts[#parts + 1] = BIND_END_EXECUTE
	return concat(parts)
end

M.SYNC = message("S", "")

local Conn = {}
Conn.__index = Conn

local function now_ms()
	ngx.update_time()
	return ngx.now() * 1000
end

-- arm(conn): the socket's timeouts set to the time left before
-- conn.deadline (ngx.now() milliseconds); false once it passed.
local function arm(conn)
	local left = math.floor(conn.deadline - now_ms())
	if left < 1 then
		return false
	end
	conn.sock:settimeouts(left, left, left)
	return true
end

-- need(conn, n): true once n bytes are buffered; nil, err else ("timeout"
-- at conn.deadline).  What was read before an error is dropped: the
-- connection is closed after any.
local function need(conn, n)
	local have = #conn.buf - conn.pos + 1
	if have >= n then
		return true
	end
	local pieces = { sub(conn.buf, conn.pos) }
	while have < n do
		if not arm(conn) then
			return nil, "timeout"
		end
		local data, err = conn.sock:receiveany(math.min(READ_CHUNK, math.max(n - have, 4096)))
		if not data then
			return nil, err
		end
		pieces[#pieces + 1] = data
		have = have + #data
	end
	conn.buf, conn.pos = concat(pieces), 1
	return true
end

-- The next message: its type (a character) and body; nil, err when the
-- connection broke, timed out or sent what is no message.  startup: the
-- authentication request is short there.
local function receive(conn, startup)
	local ok, err = need(conn, 5)
	if not ok then
		return nil, err
	end
	local pos = conn.pos
	local kind = sub(conn.buf, pos, pos)
	local len = get_int32(conn.buf, pos + 1)
	local max = LONG_KINDS[kind] and MAX_MESSAGE or MAX_SHORT
	if startup and kind == "R" then
		max = MAX_STARTUP_AUTH
	elseif startup and kind == "E" then
		max = MAX_SHORT
	end
	if len < 4 or len > max then
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
		elseif code == "V" or (code == "S" and not e.severity) then
			e.severity = value
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

-- authenticate(conn, o, code, body): "sent" once the password went out
-- for a request the server made; nil, err, "unsupported" for a method not
-- spoken here; nil, err when the send failed.
local function authenticate(conn, o, code, body)
	local answer
	if code == 3 and o.password then
		answer = o.password
	elseif code == 5 and o.password and #body >= 8 then
		local salt = sub(body, 5, 8)
		answer = "md5" .. ngx.md5(ngx.md5(o.password .. o.user) .. salt)
	else
		return nil, "the server asks for an authentication (" .. tostring(code) .. ") not spoken here",
			"unsupported"
	end
	if not arm(conn) then
		return nil, "timeout"
	end
	local ok, err = conn.sock:send(message("p", answer .. "\0"))
	if not ok then
		return nil, "cannot send the password: " .. tostring(err)
	end
	return "sent"
end

-- M.connect({path, address ("unix:" and the path), user, database,
-- options, application_name, pool_options (tcpsock:connect's), password},
-- state, deadline_ms): a connection (state.conn names it from the start,
-- for a caller that closes it on a Lua error) (reused from the pool when
-- it has one idle: conn.fresh is false then), ready for a query, made
-- before deadline_ms (ngx.now() milliseconds) or not at all.
-- Answers nil, err, kind else: kind "unsupported" when the server asked
-- for an authentication not spoken here (nothing was sent but the
-- startup packet).
function M.connect(o, state, deadline_ms)
	local sock = ngx.socket.tcp()
	local conn = setmetatable({ sock = sock, buf = "", pos = 1, deadline = deadline_ms }, Conn)
	if state then
		state.conn = conn
	end
	if not arm(conn) then
		return nil, "no time left to connect"
	end
	local ok, err = sock:connect(o.address, o.pool_options)
	if not ok then
		return nil, "cannot connect to " .. o.path .. ": " .. tostring(err)
	end
	conn.fresh = sock:getreusedtimes() == 0
	if not conn.fresh then
		return conn
	end
	-- what libpq sends (no client_encoding: the database's own)
	local params = { "user", o.user, "database", o.database, "application_name", o.application_name }
	if o.options then
		params[#params + 1], params[#params + 2] = "options", o.options
	end
	local startup = int32(196608) .. concat(params, "\0") .. "\0\0"
	if arm(conn) then
		ok, err = sock:send(int32(#startup + 4) .. startup)
	else
		ok, err = nil, "timeout"
	end
	if not ok then
		sock:close()
		return nil, "cannot send the startup packet: " .. tostring(err)
	end
	while true do
		local kind, body = receive(conn, true)
		if not kind then
			sock:close()
			return nil, "no answer to the startup packet: " .. tostring(body)
		elseif kind == "R" then
			if #body < 4 then
				sock:close()
				return nil, "a malformed authentication request from the server"
			end
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

-- conn:send(data, deadline_ms): true once the whole of data was handed to
-- the kernel; nil, err else ("timeout" at deadline_ms), its end unsent
-- (nginx stops at the first failure, and nothing more is sent after it).
function Conn:send(data, deadline_ms)
	self.deadline = deadline_ms
	local at = 1
	while at <= #data do
		if not arm(self) then
			return nil, "timeout"
		end
		local ok, err = self.sock:send(sub(data, at, at + SEND_CHUNK - 1))
		if not ok then
			return nil, err
		end
		at = at + SEND_CHUNK
	end
	return true
end

-- Messages that tell nothing of what was sent: the server may send them
-- at any time.
local ASIDE = { N = true, S = true, A = true }

-- conn:results(deadline_ms, want): the answers to what was sent, up to
-- its ReadyForQuery, read before deadline_ms.  Answers rows (the want-th
-- executed statement's), error (the first ErrorResponse, or nil), the
-- transaction status ("I" idle) and how many Parse messages succeeded;
-- nil, err when the connection broke or timed out ("timeout"); nil, err,
-- "not_run" when the server's first answer was a FATAL error: it ended
-- the session before it took the first message sent (a backend answers
-- in order, and what it answered before a FATAL goes out before it), as
-- for a session ended while it was idle.
function Conn:results(deadline_ms, want)
	self.deadline = deadline_ms
	local done, rows, failure, parsed = 0, {}, nil, 0
	local answered = false
	while true do
		local kind, body = receive(self)
		if not kind then
			return nil, body
		end
		if kind == "E" and not answered then
			local e = error_fields(body)
			if e.severity == "FATAL" or e.severity == "PANIC" then
				return nil, e.message, "not_run"
			end
		end
		answered = answered or not ASIDE[kind]
		if kind == "1" then
			parsed = parsed + 1
		elseif kind == "D" then
			if done + 1 == want then
				rows[#rows + 1] = data_row(body)
			end
		elseif kind == "C" or kind == "I" then
			done = done + 1
		elseif kind == "E" then
			failure = failure or error_fields(body)
		elseif kind == "Z" then
			return rows, failure, body, parsed
		end
	end
end

-- conn:keep(idle_ms): back to the keepalive pool (true), or closed;
-- conn:close().
function Conn:keep(idle_ms)
	if self.pos <= #self.buf then
		-- the server sent more than the answer (a notification): kept,
		-- the next call would take it for its own
		self.sock:close()
		return false
	end
	if self.sock:setkeepalive(idle_ms) then
		return true
	end
	self.sock:close()
	return false
end

function Conn:close()
	self.sock:close()
end

return M
