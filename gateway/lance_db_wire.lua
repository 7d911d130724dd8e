-- lance_db_wire: a pool's calls spoken by the worker itself (lance_pgwire
-- on nginx's cosockets) when its database is on this host: no thread
-- hand-off, the worker's event loop waits for the answer.
--
-- target() decides, once per pool, from the conninfo as libpq parses it:
-- one Unix socket directory as host, and no setting but those listed in
-- SPOKEN (the rest, TLS, several hosts, a service file, are libpq's:
-- lance_db's thread path).  Should the server ask for an authentication
-- not spoken here (SCRAM, or a password the conninfo does not hold),
-- call() answers "unsupported" before anything of the call was sent, and
-- the pool goes to libpq for good.
--
-- A call keeps the thread path's rules (lance_db.lua's top): one implicit
-- transaction whose first statement sets statement_timeout to the time
-- left and application_name for it alone; sent until the deadline (a send
-- that fails or times out leaves the Sync unsent: "not_sent", and the
-- connection is closed without another byte); its answer awaited until
-- the deadline and its grace ("unknown" after that, or when the
-- connection breaks after the send: never sent again).  A call not sent
-- goes once more on another connection while time is left; so does one
-- whose connection's first answer was a FATAL error (the server ended the
-- session, idle in nginx's pool, before it took the call: a kept
-- connection is not tested before use, as the thread path tests its own).
--
-- Connections: each slot of the pool (lance_db's, one call at a time)
-- keeps its connection in an nginx keepalive pool of its own, of size one,
-- so a call gets back the connection its slot used last (or a new one:
-- getreusedtimes() says which), and what is prepared on it is known
-- exactly, as on the thread path: a statement is prepared (Parse) in the
-- pipeline of its first call on a connection.  A connection that has
-- not the statements it was given ("no such prepared statement", 26000,
-- or "already exists", 42P05, both before anything ran) is a pooler's in
-- transaction mode: the pool sends unnamed statements from then on,
-- parsed with each call, and the call goes again so.

local pgwire = require("lance_pgwire")

local M = {}

local ffi, pq

-- pools given wire settings in this worker (a part of their keepalive
-- pools' names)
local pools_made = 0

-- The conninfo settings spoken here: true for any value, else the values.
-- libpq ignores TLS, GSSAPI encryption and TCP settings on a Unix socket.
local SPOKEN = {
	host = true,
	port = true,
	dbname = true,
	user = true,
	password = true,
	passfile = true,
	application_name = true,
	fallback_application_name = true,
	connect_timeout = true,
	options = true,
	keepalives = true,
	keepalives_idle = true,
	keepalives_interval = true,
	keepalives_count = true,
	tcp_user_timeout = true,
	sslmode = { disable = true, allow = true, prefer = true },
	gssencmode = { disable = true, prefer = true },
	target_session_attrs = { any = true },
}

local function load_libpq()
	if pq then
		return
	end
	ffi = require("ffi")
	-- own names (asm labels): lance_db's thread declares libpq's too
	ffi.cdef([[
typedef struct {
	char *keyword; char *envvar; char *compiled; char *val; char *label; char *dispchar; int dispsize;
} lance_wire_option;
lance_wire_option *lance_wire_parse(const char *conninfo, char **errmsg) __asm__("PQconninfoParse");
lance_wire_option *lance_wire_defaults(void) __asm__("PQconndefaults");
void lance_wire_free(lance_wire_option *options) __asm__("PQconninfoFree");
]])
	pq = ffi.load("libpq.so.5")
end

-- The values of a libpq option array (explicit ones only, from a parse).
local function option_values(options)
	local values = {}
	local i = 0
	while options[i].keyword ~= nil do
		if options[i].val ~= nil then
			values[ffi.string(options[i].keyword)] = ffi.string(options[i].val)
		end
		i = i + 1
	end
	pq.lance_wire_free(options)
	return values
end

-- target(conninfo, conf): the pool's wire settings, or nil when the
-- conninfo is libpq's.  conf: settings_statement, settings_sql, grace_ms,
-- connect_timeout, size, name.
function M.target(conninfo, conf)
	load_libpq()
	local parsed = pq.lance_wire_parse(conninfo, nil)
	if parsed == nil then
		return nil
	end
	local given = option_values(parsed)
	-- libpq takes an empty value for none
	for keyword, value in pairs(given) do
		if value == "" then
			given[keyword] = nil
		end
	end
	for keyword, value in pairs(given) do
		local spoken = SPOKEN[keyword]
		if not spoken or (spoken ~= true and not spoken[value]) then
			return nil
		end
	end
	local host = given.host
	if not host or host:sub(1, 1) ~= "/" or host:find(",", 1, true) then
		return nil
	end
	local defaults = pq.lance_wire_defaults()
	if defaults == nil then
		return nil
	end
	defaults = option_values(defaults)
	-- the port as libpq reads it (a number: "05432" is 5432)
	local port = tonumber((given.port or defaults.port or "5432"):match("^%d+$"))
	local user = given.user or defaults.user
	if not port or port < 1 or port > 65535 or not user or user == "" then
		return nil
	end
	-- the conninfo's own connect_timeout wins, as libpq's (2 s at least;
	-- 0, none: the call's deadline alone)
	local connect_timeout_ms = conf.connect_timeout * 1000
	local own = given.connect_timeout and tonumber(given.connect_timeout:match("^%s*-?%d+%s*$"))
	if given.connect_timeout and not own then
		return nil
	elseif own then
		connect_timeout_ms = own > 0 and math.max(2, math.floor(own)) * 1000 or math.huge
	end
	pools_made = pools_made + 1
	return {
		path = host .. "/.s.PGSQL." .. string.format("%d", port),
		user = user,
		database = given.dbname or user,
		password = given.password,
		options = given.options,
		application_name = given.application_name or given.fallback_application_name or "lance_gateway",
		-- the prefix of the names of nginx's keepalive pools (one per slot)
		pool = "lance_db:" .. conf.name .. ":" .. pools_made .. ":",
		connect_timeout_ms = connect_timeout_ms,
		grace_ms = conf.grace_ms,
		settings_statement = conf.settings_statement,
		settings_sql = conf.settings_sql,
		-- pgwire.connect's options, by slot index
		connect_options = {},
	}
end

local function now_ms()
	ngx.update_time()
	return ngx.now() * 1000
end

-- A connection kept idle is closed after a minute without a call: one a
-- slot no longer uses (its pool went to libpq) is not kept for ever.
local IDLE_MS = 60000

-- What pgwire.connect needs of a slot's connection (made once a slot).
local function connect_options(w, slot)
	local o = w.connect_options[slot.index]
	if not o then
		o = {
			path = w.path,
			user = w.user,
			database = w.database,
			password = w.password,
			options = w.options,
			application_name = w.application_name,
			address = "unix:" .. w.path,
			-- the slot's own keepalive pool, of one connection
			pool_options = { pool = w.pool .. slot.index, pool_size = 1 },
		}
		w.connect_options[slot.index] = o
	end
	return o
end

-- The Parse of a statement the slot's connection has not prepared, and its
-- name in parsing.
local function parse_unless_prepared(slot, parts, parsing, statement, sql)
	if not slot.wire_prepared[statement] then
		parsing[#parsing + 1] = statement
		parts[#parts + 1] = pgwire.parse(statement, sql)
	end
end

-- One attempt of a call: outcome, value, and for "not_sent" whether it
-- may go again.  state.conn: the connection while it is held; state.sent:
-- the call's Sync was handed to the connection.  slot.wire_prepared: the
-- statements prepared on the slot's connection.
local function attempt(pool, w, slot, state, name, template, params, deadline, hard_deadline, app_name)
	local left = deadline - now_ms()
	if left < 1 then
		return "busy", "the request's time ran out before it reached the database"
	end
	-- the connection is named in state as soon as it exists (closed on a Lua error)
	local conn, err, kind = pgwire.connect(connect_options(w, slot), state,
		now_ms() + math.min(left, w.connect_timeout_ms))
	if not conn then
		-- (connect closed it)
		state.conn = nil
		if kind == "unsupported" then
			return "unsupported", err
		end
		return "not_sent", "cannot connect to the database: " .. tostring(err), false
	end
	state.conn = conn
	if conn.fresh or not slot.wire_prepared then
		slot.wire_prepared = {}
	end
	left = math.floor(deadline - now_ms())
	if left < 1 then
		state.conn = nil
		conn:keep(IDLE_MS)
		return "busy", "the request's time ran out before it reached the database"
	end
	local parts = {}
	local settings = { tostring(left), app_name }
	local prepared = pool.prepare
	-- the statements this pipeline prepares, in order (each answered by a
	-- ParseComplete before anything else of it)
	local parsing = {}
	if prepared then
		parse_unless_prepared(slot, parts, parsing, w.settings_statement, w.settings_sql)
		parse_unless_prepared(slot, parts, parsing, name, template)
		parts[#parts + 1] = pgwire.bind_execute(w.settings_statement, settings)
		parts[#parts + 1] = pgwire.bind_execute(name, params)
	else
		parts[#parts + 1] = pgwire.parse("", w.settings_sql)
		parts[#parts + 1] = pgwire.bind_execute("", settings)
		parts[#parts + 1] = pgwire.parse("", template)
		parts[#parts + 1] = pgwire.bind_execute("", params)
	end
	parts[#parts + 1] = pgwire.SYNC
	local data = table.concat(parts)
	state.sent = true
	local sent
	sent, err = conn:send(data, deadline)
	if not sent then
		state.conn = nil
		conn:close()
		if err == "timeout" then
			return "not_sent", "the database took no more of the call before the request's deadline", true
		end
		return "not_sent", "the connection broke while sending: " .. tostring(err), true
	end
	local rows, failure, status, parsed = conn:results(hard_deadline, 2)
	state.conn = nil
	if not rows and status == "not_run" then
		-- the session had ended before the server took the call
		conn:close()
		return "not_sent", "the connection was ended before the call ran: " .. tostring(failure), true
	elseif not rows then
		conn:close()
		if failure == "timeout" then
			return "unknown", "no answer from the database past the request's deadline"
		end
		return "unknown", "the connection broke while the database worked: " .. tostring(failure)
	end
	for i = 1, math.min(parsed, #parsing) do
		slot.wire_prepared[parsing[i]] = true
	end
	if status == "I" then
		conn:keep(IDLE_MS)
	else
		conn:close()
	end
	if failure then
		if prepared and pool:lost_statements(failure) then
			return "pooler", failure
		end
		return "error", failure
	end
	return "ok", rows
end

local function close_quietly(conn)
	conn:close()
end

-- call(pool, w, slot, name, template, params, timeout_ms, app_name): the
-- call on the slot's connection, spoken by the worker.  Answers outcome,
-- value as the thread path does, or "unsupported", message (nothing
-- sent: libpq's).
function M.call(pool, w, slot, name, template, params, timeout_ms, app_name)
	local started = now_ms()
	local deadline, hard_deadline = started + timeout_ms, started + timeout_ms + w.grace_ms
	local state = {}
	-- why the call could not be sent whole, once it could not
	local unsent
	-- at most: a pooler found (then unnamed statements), a resend
	for attempt_number = 1, 3 do
		state.sent = false
		local ok, outcome, value, again = pcall(attempt, pool, w, slot, state, name, template, params, deadline,
			hard_deadline, app_name)
		if not ok then
			-- a bug or no memory: the connection may be inside the call's
			-- transaction; closed, it rolls back what was not committed
			if state.conn then
				pcall(close_quietly, state.conn)
			end
			slot.wire_prepared = nil
			return state.sent and "unknown" or "not_sent", "gateway error: " .. tostring(outcome)
		end
		if outcome == "unsupported" and attempt_number > 1 then
			-- an earlier attempt sent something: not sent again through
			-- libpq (the pool goes there for the calls that follow)
			return "not_sent", unsent or ("cannot connect to the database: " .. value), "unsupported"
		elseif outcome == "pooler" then
			-- nothing ran: unnamed statements, now and from now on
			pool:no_prepared_statements()
			slot.wire_prepared = nil
		elseif outcome == "not_sent" and again and not unsent then
			unsent = "cannot send to the database: " .. value
		elseif unsent and (outcome == "busy" or outcome == "not_sent") then
			-- no time left for it, or no connection: why the first failed
			return "not_sent", unsent
		elseif outcome == "not_sent" and again then
			return "not_sent", "cannot send to the database: " .. value
		else
			return outcome, value
		end
	end
	return "not_sent", unsent or "the database refused the call's prepared statements"
end

return M
