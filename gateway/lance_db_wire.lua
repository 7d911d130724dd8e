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
-- goes once more on another connection while time is left.
--
-- Prepared statements: a connection nginx's pool hands back cannot be told
-- from another, so a new connection prepares every statement the pool has
-- run so far in its first pipeline, and a statement the pool runs for the
-- first time is prepared in that call's pipeline.  A connection made
-- before a statement's first run answers "no such prepared statement"
-- (26000) once: nothing ran, and the call goes again with the statement
-- prepared.  Such misses are at most the pool's size times its statements;
-- more, or a second miss in one call, is a pooler in transaction mode
-- (each transaction may get another server connection), and the pool's
-- calls are unnamed statements from then on (parsed each time).

local pgwire = require("lance_pgwire")

local M = {}

local ffi, pq

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
	local port = given.port or defaults.port or "5432"
	local user = given.user or defaults.user
	if not port:match("^%d+$") or not user or user == "" then
		return nil
	end
	local known = { [conf.settings_statement] = conf.settings_sql }
	return {
		path = host .. "/.s.PGSQL." .. port,
		user = user,
		database = given.dbname or user,
		password = given.password,
		options = given.options,
		application_name = given.application_name or given.fallback_application_name or "lance_gateway",
		-- nginx's keepalive pool of the connections (one per conninfo)
		pool = "lance_db:" .. conf.name .. ":" .. ngx.md5(conninfo),
		size = conf.size,
		connect_timeout_ms = conf.connect_timeout * 1000,
		grace_ms = conf.grace_ms,
		settings_statement = conf.settings_statement,
		settings_sql = conf.settings_sql,
		-- the statements the pool has run, each prepared on every
		-- connection made since it was first run
		known = known,
		known_count = 1,
		misses = 0,
	}
end

local function now_ms()
	ngx.update_time()
	return ngx.now() * 1000
end

-- A connection kept idle stays until the server or nginx closes it (the
-- thread path keeps its connections so too): at most the pool's size.
local IDLE_MS = 0

-- One attempt of a call: outcome, value, and for "not_sent" whether it
-- may go again.  state.conn: the connection while it is held; state.sent:
-- the call's Sync was handed to the connection.
local function attempt(pool, w, state, name, template, params, deadline, hard_deadline, app_name, reparse)
	local left = deadline - now_ms()
	if left < 1 then
		return "busy", "the request's time ran out before it reached the database"
	end
	local conn, err, kind = pgwire.connect({
		path = w.path,
		user = w.user,
		database = w.database,
		password = w.password,
		options = w.options,
		application_name = w.application_name,
		pool = w.pool,
		pool_size = w.size,
		timeout_ms = math.min(left, w.connect_timeout_ms),
	})
	if not conn then
		if kind == "unsupported" then
			return "unsupported", err
		end
		return "not_sent", "cannot connect to the database: " .. tostring(err), false
	end
	state.conn = conn
	left = math.floor(deadline - now_ms())
	if left < 1 then
		state.conn = nil
		conn:keep(IDLE_MS)
		return "busy", "the request's time ran out before it reached the database"
	end
	local parts = {}
	local settings = { tostring(left), app_name }
	local prepared = pool.prepare
	-- a new connection's statements, each in a segment of its own (its
	-- own Sync): one that no longer parses (its function gone with the
	-- extension's schema) fails alone and is forgotten
	local segments = {}
	if prepared then
		if conn.fresh then
			for known_name, sql in pairs(w.known) do
				if known_name ~= name then
					segments[#segments + 1] = known_name
					parts[#parts + 1] = pgwire.parse(known_name, sql) .. pgwire.SYNC
				end
			end
		end
		if not w.known[name] then
			w.known[name] = template
			w.known_count = w.known_count + 1
			parts[#parts + 1] = pgwire.parse(name, template)
		elseif conn.fresh or reparse then
			parts[#parts + 1] = pgwire.parse(name, template)
		end
		parts[#parts + 1] = pgwire.bind_execute(w.settings_statement, settings)
		parts[#parts + 1] = pgwire.bind_execute(name, params)
	else
		parts[#parts + 1] = pgwire.parse("", w.settings_sql)
		parts[#parts + 1] = pgwire.bind_execute("", settings)
		parts[#parts + 1] = pgwire.parse("", template)
		parts[#parts + 1] = pgwire.bind_execute("", params)
	end
	parts[#parts + 1] = pgwire.SYNC
	state.sent = true
	local sent
	sent, err = conn:send(table.concat(parts), deadline - now_ms())
	if not sent then
		state.conn = nil
		conn:close()
		if err == "timeout" then
			return "not_sent", "the database took no more of the call before the request's deadline", true
		end
		return "not_sent", "the connection broke while sending: " .. tostring(err), true
	end
	local rows, failure, status
	for i = 1, #segments + 1 do
		rows, failure, status = conn:results(hard_deadline - now_ms(), i > #segments and 2 or 0)
		if not rows then
			state.conn = nil
			conn:close()
			if failure == "timeout" then
				return "unknown", "no answer from the database past the request's deadline"
			end
			return "unknown", "the connection broke while the database worked: " .. tostring(failure)
		end
		if i <= #segments and failure and w.known[segments[i]] then
			w.known[segments[i]] = nil
			w.known_count = w.known_count - 1
		end
	end
	state.conn = nil
	if status == "I" then
		conn:keep(IDLE_MS)
	else
		conn:close()
	end
	if failure then
		-- 26000: no such prepared statement, 42P05: one of that name exists
		if prepared and (failure.sqlstate == "26000" or failure.sqlstate == "42P05") then
			return "prepare_miss", failure
		end
		return "error", failure
	end
	return "ok", rows
end

local function close_quietly(conn)
	conn:close()
end

-- call(pool, w, name, template, params, timeout_ms, app_name): the call
-- on the worker's own connection.  Answers outcome, value as the thread
-- path does, or "unsupported", message (nothing sent: libpq's).
function M.call(pool, w, name, template, params, timeout_ms, app_name)
	local started = now_ms()
	local deadline, hard_deadline = started + timeout_ms, started + timeout_ms + w.grace_ms
	local state = {}
	local missed, reparse = false, false
	-- why the call could not be sent whole, once it could not
	local unsent
	-- at most: a miss, a second miss (then unnamed statements), a resend
	for _ = 1, 4 do
		state.sent = false
		local ok, outcome, value, again = pcall(attempt, pool, w, state, name, template, params, deadline,
			hard_deadline, app_name, reparse)
		if not ok then
			-- a bug or no memory: the connection may be inside the call's
			-- transaction; closed, it rolls back what was not committed
			if state.conn then
				pcall(close_quietly, state.conn)
			end
			return state.sent and "unknown" or "not_sent", "gateway error: " .. tostring(outcome)
		end
		if outcome == "prepare_miss" then
			w.misses = w.misses + 1
			if missed or w.misses > w.size * w.known_count then
				pool:no_prepared_statements()
			end
			missed = true
			reparse = value.sqlstate == "26000"
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
	return "not_sent", "the database refused the call's prepared statements"
end

return M
