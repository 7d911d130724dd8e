-- lance_db: every database call of the gateway.
--
-- nginx's event loop must never wait for the database: a request that waits
-- on a lock, a slow store or a long batch would stop every other request of
-- its worker.  So a call runs in nginx's thread pool (ngx.run_worker_thread:
-- a thread with a Lua VM of its own) and the worker goes on serving while it
-- runs.  The database connections are libpq's (through LuaJIT's FFI): a
-- connection is whatever libpq takes, a URI or key=value string with several
-- hosts, target_session_attrs, passwords, TLS client certificates.
--
-- A database on this host (a conninfo of one Unix socket directory, and
-- nothing only libpq does) is spoken to by the worker itself, without a
-- thread: lance_db_wire, on nginx's cosockets, with the same outcomes and
-- the same rules; a pool whose server asks for what it does not speak goes
-- to the threads below for good, before anything of a call was sent.
--
-- A pool (new_pool) is a worker's bounded set of connection slots.  A call
-- waits for a free slot (ngx.semaphore) until its deadline, then runs in a
-- thread with that slot's connection, which the thread makes if the slot has
-- none or its connection died.  The connection itself is a C pointer kept in
-- the slot's record (C memory of the worker the thread writes through its
-- address), not in the thread's VM: threads and VMs come and go, the slots
-- and their connections stay, one request at a time each.  The thread
-- keeps the record up to date as it connects and closes, and records how
-- far the call got (sent or not), so the worker knows both even when the
-- thread answers nothing it can use.
--
-- The thread never waits past the call's deadline for the database's
-- answer either (a thread that waits for ever holds its slot for ever):
-- its connections are in libpq's nonblocking mode, so a server or a
-- network that stops reading (a large body fills the sockets' buffers)
-- holds a send only until the deadline, and an answer is waited for with
-- poll() until the deadline and its grace.  Connecting is libpq's, which
-- blocks, bounded by connect_timeout: the whole seconds left (at most the
-- pool's connect_timeout), but 2 at least, libpq's least.  libpq waits
-- that long for each host of a conninfo with several (and each address of
-- a name), and resolving a host name is not bounded at all: a conninfo of
-- one host given by address is.  A call that starts with less than 2 s
-- left may so connect past its deadline by up to 2 s less its time; a
-- second attempt (a call not sent goes once more on a new connection,
-- while time is left) connects only with 2 s left.  A conninfo's
-- own connect_timeout wins.  TCP keepalives and tcp_user_timeout (defaults
-- the conninfo may override) end a connection whose network died, idle in
-- its slot or not.
--
-- A call's outcome is one of:
--   rows                  the last statement's rows
--   nil, "error", e       the database answered an error (e.sqlstate,
--                         e.message, e.detail); nothing was committed
--   nil, "busy", msg      no slot became free, or no time was left, before
--                         the deadline: nothing sent
--   nil, "not_sent", msg  no connection could be made, or the call could not
--                         be sent whole (the deadline came, or the
--                         connection broke, with its end unsent): nothing
--                         committed, nor ever will.  Its first statements may
--                         have reached the server and even run, but never
--                         its end: the pipeline's Sync (or the query text's
--                         last byte) was still in libpq's buffer, and the
--                         server acts on a message only once it has it whole.
--                         A pipeline's implicit transaction commits only at
--                         its Sync (a lance_ function neither commits nor
--                         needs an immediate commit), and the connection is
--                         then closed without another byte sent, which rolls
--                         back whatever ran.
--   nil, "unknown", msg   the connection broke, or the deadline and its grace
--                         passed, after the call's Sync (or query text) was
--                         handed to libpq to send, and libpq did not report
--                         its end unsent: it may have committed.  A call
--                         that may have committed is never sent again.
--
-- Every call runs in one implicit transaction (one round trip) whose first
-- statement sets statement_timeout to the time left and application_name
-- to the caller's (lance_gateway/<request id>), for this transaction only
-- (set_config(..., true)): past the deadline the database cancels the
-- statement and rolls the transaction back whole.  The statements are named
-- prepared statements (lance_db_<md5 of the text>), prepared on a
-- connection the first time it runs them, and sent as one pipeline (Bind
-- and Execute of both, one Sync), so a call costs no parse and no plan.  A
-- connection that does not keep prepared statements (a pooler in
-- transaction mode, PgBouncer before 1.21) answers the first such call
-- with "no such prepared statement" or "already exists" before anything
-- ran: the pool then sends query texts (its values escaped by libpq) from
-- then on.  No other session state is used.
--
-- A Lua error in the thread (a bug, no memory) ends the call's connection
-- (it may be inside the call's transaction) and answers "unknown" once the
-- Sync or query text was handed to libpq, "not_sent" before.  Should even
-- that fail, or the thread's answer not reach the worker, the worker
-- answers the same from the slot's record and the slot's next call closes
-- the connection before anything else.  The C arrays of pointers handed
-- to libpq point into Lua strings that stay referenced (anchored) until
-- the C call returns; libpq copies what it keeps.

local M = {}

-- the worker's own protocol client (loaded by new_pool: a thread's VM
-- never needs it)
local lance_db_wire

-- ---------------------------------------------------------------------------
-- In the thread: libpq through the FFI.  Loaded only where a call runs.
-- ---------------------------------------------------------------------------
local ffi, bit, pq, C

-- A slot's record (struct lance_db_slot), in C memory the worker allocates
-- and a thread writes through its address: conn, the slot's connection
-- (NULL: none); phase, how far the call now running got (PHASE_*), which
-- the worker reads when the thread answers nothing it can use; discard,
-- set when conn must not serve another call (a Lua error left it in an
-- unknown state): the next call closes it before anything else.  Any
-- connection it names is open (drop forgets it before PQfinish), so an
-- error anywhere leaks at worst, never hands a freed connection on.
local PHASE_WAITING = 0 -- set by the worker: the thread did not begin
local PHASE_RUNNING = 1 -- the thread began: nothing of the call can commit
local PHASE_SENT = 2 -- its Sync or query text was handed to libpq

local slot_type_defined = false

local function define_slot_type()
	if slot_type_defined then
		return
	end
	ffi = ffi or require("ffi")
	ffi.cdef([[
typedef struct pg_conn PGconn;
struct lance_db_slot { PGconn *conn; int32_t phase; int32_t discard; };
]])
	slot_type_defined = true
end

local function load_libpq()
	if pq then
		return
	end
	define_slot_type()
	bit = require("bit")
	ffi.cdef([[
typedef struct pg_result PGresult;
PGconn *PQconnectdbParams(const char *const *keywords, const char *const *values, int expand_dbname);
int PQstatus(const PGconn *conn);
int PQtransactionStatus(const PGconn *conn);
char *PQerrorMessage(const PGconn *conn);
void PQfinish(PGconn *conn);
int PQsetnonblocking(PGconn *conn, int arg);
int PQflush(PGconn *conn);
int PQsocket(const PGconn *conn);
int PQconsumeInput(PGconn *conn);
int PQisBusy(PGconn *conn);
int PQsendQuery(PGconn *conn, const char *query);
PGresult *PQgetResult(PGconn *conn);
int PQresultStatus(const PGresult *res);
char *PQresultErrorMessage(const PGresult *res);
char *PQresultErrorField(const PGresult *res, int fieldcode);
int PQntuples(const PGresult *res);
int PQnfields(const PGresult *res);
char *PQgetvalue(const PGresult *res, int row, int col);
int PQgetlength(const PGresult *res, int row, int col);
int PQgetisnull(const PGresult *res, int row, int col);
void PQclear(PGresult *res);
char *PQescapeLiteral(PGconn *conn, const char *str, size_t len);
int PQsendPrepare(PGconn *conn, const char *stmtName, const char *query, int nParams, const unsigned int *paramTypes);
int PQsendQueryPrepared(PGconn *conn, const char *stmtName, int nParams, const char *const *paramValues,
                        const int *paramLengths, const int *paramFormats, int resultFormat);
int PQenterPipelineMode(PGconn *conn);
int PQexitPipelineMode(PGconn *conn);
int PQpipelineSync(PGconn *conn);
void PQfreemem(void *ptr);
struct lance_pollfd { int fd; short events; short revents; };
int poll(struct lance_pollfd *fds, unsigned long nfds, int timeout);
int shutdown(int sockfd, int how);
struct lance_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clk_id, struct lance_timespec *tp);
]])
	pq = ffi.load("libpq.so.5")
	C = ffi.C
end

local CONNECTION_OK = 0
local PQTRANS_IDLE = 0
local PGRES_COMMAND_OK, PGRES_TUPLES_OK = 1, 2
local PGRES_PIPELINE_SYNC, PGRES_PIPELINE_ABORTED = 10, 11
local PG_DIAG_SQLSTATE, PG_DIAG_MESSAGE_PRIMARY, PG_DIAG_MESSAGE_DETAIL = 67, 77, 68
local POLLIN, POLLOUT = 1, 4
local SHUT_RDWR = 2
local CLOCK_MONOTONIC = 1

-- How long past its deadline a call may wait for the database's own answer
-- (the cancel statement_timeout makes) before it gives the connection up.
local GRACE_MS = 2000

local function now_ms()
	local ts = ffi.new("struct lance_timespec")
	C.clock_gettime(CLOCK_MONOTONIC, ts)
	return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

-- The Lua strings a C call reads through pointers stored in a C array
-- (const char *[]): referenced here until the call returns.  A string
-- nothing references may be collected and its bytes reused (LuaJIT's FFI
-- semantics); a local the compiler sees no further use of is no sure
-- reference, a store in this upvalue is.  A VM runs one call at a time.
local anchored

local function cstr(p)
	return p ~= nil and ffi.string(p) or nil
end

local function conn_error(conn)
	return ((cstr(pq.PQerrorMessage(conn)) or "unknown error"):gsub("%s+$", ""))
end

-- wait_socket(conn, events, until_ms): the socket's poll() revents (not 0)
-- once it is ready, false at until_ms.
local function wait_socket(conn, events, until_ms)
	local fds = ffi.new("struct lance_pollfd[1]")
	fds[0].fd = pq.PQsocket(conn)
	fds[0].events = events
	while true do
		local left = math.floor(until_ms - now_ms())
		if left <= 0 then
			return false
		end
		local n = C.poll(fds, 1, left)
		if n > 0 then
			return fds[0].revents
		end
		-- n < 0 is EINTR (nothing else can fail here): wait again
	end
end

-- A connection kept idle may have died meanwhile (the server restarted, an
-- administrator ended it, a pooler closed it): an idle backend sends
-- nothing, so a socket with anything to read (the FATAL message, the end of
-- the stream) or in error is a dead connection.  Found here, before anything
-- is sent, it is replaced and the call is safe to send.
local function still_usable(conn)
	if pq.PQstatus(conn) ~= CONNECTION_OK or pq.PQtransactionStatus(conn) ~= PQTRANS_IDLE then
		return false
	end
	local fds = ffi.new("struct lance_pollfd[1]")
	fds[0].fd = pq.PQsocket(conn)
	fds[0].events = POLLIN
	return C.poll(fds, 1, 0) == 0
end

-- drop(slot): close the slot's connection.  The slot forgets it first (an
-- error after that leaks it rather than leave a freed one named), and its
-- socket is shut down before PQfinish: PQfinish sends a Terminate after
-- whatever libpq still holds, and what it holds may be the end of a call
-- answered "not_sent" (its Sync).
local function drop(slot)
	local conn = slot.conn
	slot.conn = nil
	if conn ~= nil then
		local socket = pq.PQsocket(conn)
		if socket >= 0 then
			C.shutdown(socket, SHUT_RDWR)
		end
		pq.PQfinish(conn)
	end
end

-- The settings a connection gets unless its conninfo says otherwise (libpq
-- takes the last value of a keyword: these come before dbname, which
-- expands the conninfo).  A network that died (a host gone, a partition)
-- sends no reset: TCP keepalives probe an idle connection after 10 s, every
-- 5 s, and tcp_user_timeout ends a connection whose data or probes went 25 s
-- without an acknowledgement, so that a dead connection kept in a slot is
-- found (still_usable) before a call is sent on it.  libpq ignores them
-- over a Unix socket.
local CONNECT_DEFAULTS = {
	{ "fallback_application_name", "lance_gateway" },
	{ "keepalives", "1" },
	{ "keepalives_idle", "10" },
	{ "keepalives_interval", "5" },
	{ "keepalives_count", "3" },
	{ "tcp_user_timeout", "25000" },
}

-- connect(slot, conninfo, connect_timeout): true once slot.conn is a new
-- connection; nil, message when none could be made.
local function connect(slot, conninfo, connect_timeout)
	local names = { "connect_timeout" }
	local texts = { tostring(connect_timeout) }
	for _, setting in ipairs(CONNECT_DEFAULTS) do
		names[#names + 1], texts[#texts + 1] = setting[1], setting[2]
	end
	names[#names + 1], texts[#texts + 1] = "dbname", conninfo
	anchored = { names, texts }
	local keywords = ffi.new("const char *[?]", #names + 1)
	local values = ffi.new("const char *[?]", #names + 1)
	for i = 1, #names do
		keywords[i - 1], values[i - 1] = names[i], texts[i]
	end
	slot.conn = pq.PQconnectdbParams(keywords, values, 1)
	anchored = nil
	if slot.conn == nil then
		return nil, "out of memory"
	end
	-- nonblocking: nothing it sends may wait past a call's deadline (send_queued)
	if pq.PQstatus(slot.conn) ~= CONNECTION_OK or pq.PQsetnonblocking(slot.conn, 1) ~= 0 then
		local err = conn_error(slot.conn)
		drop(slot)
		return nil, err
	end
	return true
end

-- The connection's next result (nil: the end of a statement's results),
-- freed by the collector should a Lua error come before clear(res).
local function next_result(conn)
	local res = pq.PQgetResult(conn)
	if res == nil then
		return nil
	end
	return ffi.gc(res, pq.PQclear)
end

local function clear(res)
	pq.PQclear(ffi.gc(res, nil))
end

-- The query text: $n in the template replaced by params[n] as an escaped
-- literal (false: NULL).  The template alone is scanned, never a value.
local function build_query(conn, template, params)
	local failed
	local text = template:gsub("%$(%d+)", function(n)
		local value = params[tonumber(n)]
		if value == nil or value == false then
			return "NULL"
		end
		value = tostring(value)
		local lit = pq.PQescapeLiteral(conn, value, #value)
		if lit == nil then
			failed = conn_error(conn)
			return "NULL"
		end
		lit = ffi.gc(lit, pq.PQfreemem)
		local s = ffi.string(lit)
		pq.PQfreemem(ffi.gc(lit, nil))
		return s
	end)
	if failed then
		return nil, failed
	end
	return text
end

local function result_rows(res)
	local rows = {}
	local nf = pq.PQnfields(res)
	for r = 0, pq.PQntuples(res) - 1 do
		local row = {}
		for c = 0, nf - 1 do
			if pq.PQgetisnull(res, r, c) == 1 then
				row[c + 1] = false
			else
				row[c + 1] = ffi.string(pq.PQgetvalue(res, r, c), pq.PQgetlength(res, r, c))
			end
		end
		rows[#rows + 1] = row
	end
	return rows
end

local function error_of(res)
	return {
		sqlstate = cstr(pq.PQresultErrorField(res, PG_DIAG_SQLSTATE)),
		message = cstr(pq.PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY))
			or (cstr(pq.PQresultErrorMessage(res)) or ""):gsub("%s+$", ""),
		detail = cstr(pq.PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL)),
	}
end

-- send_queued(conn, until_ms): hand what libpq holds for the server to the
-- kernel.  While the socket takes no more (the server, or a network in
-- between, stopped reading) it waits with poll() for room or for input:
-- PQflush reads what the server sent meanwhile whenever it cannot send all
-- (libpq's advice for nonblocking connections: a server that cannot send
-- may stop reading).  Answers "sent" once libpq holds nothing more; "held"
-- at until_ms, libpq still holding the end of it (PQflush answered 1: not
-- all was sent); or "unsent", message: the connection broke with the end
-- still unsent.  PQflush fails only with something to send, when a read
-- fails while it cannot send the rest, or after a send failed earlier
-- (libpq then drops what it holds unsent): either way the call's last
-- byte, that of its Sync or query text, never left.  (A send that fails
-- libpq takes as done, reporting it only when it reads: the call is then
-- "unknown", though nothing of it committed.)  PQconsumeInput is not
-- called here: it flushes first, so its failure cannot tell whether the
-- end went out before its read failed.
local function send_queued(conn, until_ms)
	while true do
		local flushed = pq.PQflush(conn)
		if flushed == 0 then
			return "sent"
		elseif flushed < 0 then
			return "unsent", conn_error(conn)
		end
		if not wait_socket(conn, bit.bor(POLLIN, POLLOUT), until_ms) then
			return "held"
		end
	end
end

-- send_call(conn, deadline_ms): nothing once the call's queued messages
-- are sent whole; else "not_sent", message (its end never left: see
-- send_queued).
local function send_call(conn, deadline_ms)
	local sending, err = send_queued(conn, deadline_ms)
	if sending == "held" then
		return "not_sent", "the database took no more of the call before the request's deadline"
	elseif sending == "unsent" then
		return "not_sent", "the connection broke while sending: " .. err
	end
end

-- await_result(conn, hard_deadline_ms): nothing once a result can be read
-- without waiting; else "unknown", message (the call was sent).
local function await_result(conn, hard_deadline_ms)
	while pq.PQisBusy(conn) == 1 do
		if not wait_socket(conn, POLLIN, hard_deadline_ms) then
			return "unknown", "no answer from the database past the request's deadline"
		end
		if pq.PQconsumeInput(conn) == 0 then
			return "unknown", "the connection broke while the database worked: " .. conn_error(conn)
		end
	end
end

-- The call as one query text (through a pooler): sent until the deadline,
-- then every result read until the deadline and its grace.  Answers "ok",
-- rows; "error", e; "not_sent", message (the text's end never left: the
-- server runs a query only once it has its text whole); or "unknown",
-- message (the connection is then finished).
local function run_query(slot, text, deadline_ms, hard_deadline_ms)
	local conn = slot.conn
	slot.phase = PHASE_SENT
	-- its failure: the text was not queued whole, or its flush failed with
	-- the end unsent (see send_queued)
	if pq.PQsendQuery(conn, text) ~= 1 then
		return "not_sent", conn_error(conn)
	end
	local unsent, why = send_call(conn, deadline_ms)
	if unsent then
		return unsent, why
	end
	local rows, failure = {}, nil
	while true do
		local unknown, why = await_result(conn, hard_deadline_ms)
		if unknown then
			return unknown, why
		end
		local res = next_result(conn)
		if res == nil then
			break
		end
		local status = pq.PQresultStatus(res)
		if status == PGRES_TUPLES_OK then
			rows = result_rows(res)
		elseif status ~= PGRES_COMMAND_OK and not failure then
			failure = error_of(res)
		end
		clear(res)
	end
	if pq.PQstatus(conn) ~= CONNECTION_OK then
		-- an error the server sent and then closed (a FATAL), or libpq's
		-- own: either way no answer says what became of the statement
		return "unknown", "the connection broke while the database worked: "
			.. (failure and failure.message or conn_error(conn))
	end
	if failure then
		return "error", failure
	end
	return "ok", rows
end

-- The prepared statement that sets the call's statement_timeout and its
-- application_name ("lance_gateway/<request id>": the database's log lines
-- of the call show it through %a in log_line_prefix), both for this
-- transaction only (a pooler in transaction mode is safe).
local TIMEOUT_STATEMENT = "lance_db_settings"
local TIMEOUT_SQL = "SELECT pg_catalog.set_config('statement_timeout', $1, true),"
	.. " pg_catalog.set_config('application_name', $2, true)"
local DEFAULT_APPLICATION_NAME = "lance_gateway"

-- True when an error of a call on named prepared statements says the
-- connection lost them, before anything ran: 26000, no such prepared
-- statement, or 42P05, one of that name exists (a pooler in transaction
-- mode hands each transaction any server connection).  Both paths ask it
-- (run_pipeline here, lance_db_wire through pool:lost_statements).
local function lost_statements(failure)
	return failure.sqlstate == "26000" or failure.sqlstate == "42P05"
end

-- The call as named prepared statements in one pipeline: Parse (the first
-- time on this connection), Bind and Execute of the timeout's statement
-- and the call's, then one Sync: one round trip and one implicit
-- transaction, without the parse and plan of a query text per call.  Sent
-- until the deadline, its results read until the deadline and its grace.
-- Answers "ok", rows; "error", e; "unknown", message; "not_sent", message
-- (the Sync never left whole: nothing can commit); or "pooler", e (the
-- connection does not keep prepared statements: a pooler in transaction
-- mode; nothing ran).  prepared: names prepared on the connection, kept up
-- to date.
local function run_pipeline(slot, name, template, params, left_ms, prepared, deadline_ms, hard_deadline_ms,
	app_name)
	local conn = slot.conn
	if pq.PQenterPipelineMode(conn) ~= 1 then
		return "not_sent", conn_error(conn)
	end
	local n = #params
	local keep = {}
	local settings = { tostring(left_ms), app_name }
	-- until libpq has copied them into its buffer (before each call returns)
	anchored = { keep, settings }
	local values = ffi.new("const char *[?]", math.max(n, 1))
	for i = 1, n do
		if params[i] ~= false then
			keep[i] = tostring(params[i])
			values[i - 1] = keep[i]
		end
	end
	local settings_values = ffi.new("const char *[2]", settings)
	local steps = {}
	local queued = true
	if not prepared[name] then
		queued = queued and pq.PQsendPrepare(conn, name, template, n, nil) == 1
		steps[#steps + 1] = { prepare = name }
	end
	if not prepared[TIMEOUT_STATEMENT] then
		queued = queued and pq.PQsendPrepare(conn, TIMEOUT_STATEMENT, TIMEOUT_SQL, 2, nil) == 1
		steps[#steps + 1] = { prepare = TIMEOUT_STATEMENT }
	end
	queued = queued and pq.PQsendQueryPrepared(conn, TIMEOUT_STATEMENT, 2, settings_values, nil, nil, 0) == 1
	steps[#steps + 1] = {}
	queued = queued and pq.PQsendQueryPrepared(conn, name, n, values, nil, nil, 0) == 1
	steps[#steps + 1] = { rows = true }
	anchored = nil
	if not queued then
		-- no Sync was queued: whatever reached the server rolls back
		return "not_sent", conn_error(conn)
	end
	slot.phase = PHASE_SENT
	-- PQpipelineSync fails before it queued the Sync whole (no memory), or
	-- when its flush failed, which leaves the end unsent (see send_queued)
	if pq.PQpipelineSync(conn) ~= 1 then
		return "not_sent", "the connection broke while sending: " .. conn_error(conn)
	end
	local unsent, why = send_call(conn, deadline_ms)
	if unsent then
		return unsent, why
	end
	local rows, failure, step = {}, nil, 1
	while true do
		local unknown, why = await_result(conn, hard_deadline_ms)
		if unknown then
			return unknown, why
		end
		local res = next_result(conn)
		if res == nil then
			-- the end of one step's results
			step = step + 1
			if pq.PQstatus(conn) ~= CONNECTION_OK then
				break
			end
		else
			local status = pq.PQresultStatus(res)
			if status == PGRES_PIPELINE_SYNC then
				clear(res)
				break
			elseif status == PGRES_TUPLES_OK then
				if steps[step] and steps[step].rows then
					rows = result_rows(res)
				end
			elseif status == PGRES_COMMAND_OK then
				if steps[step] and steps[step].prepare then
					prepared[steps[step].prepare] = true
				end
			elseif status ~= PGRES_PIPELINE_ABORTED and not failure then
				failure = error_of(res)
			end
			clear(res)
		end
	end
	if pq.PQstatus(conn) ~= CONNECTION_OK then
		return "unknown", "the connection broke while the database worked: "
			.. (failure and failure.message or conn_error(conn))
	end
	pq.PQexitPipelineMode(conn)
	if failure then
		if lost_statements(failure) then
			return "pooler", failure
		end
		return "error", failure
	end
	return "ok", rows
end

-- libpq's least connect_timeout (it waits whole seconds, 2 at least).
local MIN_CONNECT_S = 2

-- Runs in a thread of nginx's thread pool.  slot: the slot's record
-- (struct lance_db_slot): its connection (NULL: none), made or replaced
-- here; prepared: the statements prepared on it (names), or false to send
-- query texts (through a pooler).  Answers the outcome (see the top of
-- this file), the statements then prepared on the slot's connection, and
-- true when the connection turned out not to keep prepared statements.
local function thread_call(slot, conninfo, max_connect_timeout, name, template, params, timeout_ms, prepared,
	app_name)
	app_name = app_name or DEFAULT_APPLICATION_NAME
	local started = now_ms()
	local deadline, hard_deadline = started + timeout_ms, started + timeout_ms + GRACE_MS
	local use_prepared = prepared ~= false
	prepared = prepared or {}
	local pooler = false
	if slot.conn ~= nil and (slot.discard ~= 0 or not still_usable(slot.conn)) then
		drop(slot)
	end
	slot.discard = 0
	-- a call that cannot have committed may go again, once, while time is left
	local unsent
	for attempt = 1, 2 do
		local left = math.floor(deadline - now_ms())
		-- connect_timeout is the whole seconds left (libpq waits that long
		-- for each host), and a second attempt connects only with 2 s left;
		-- the first one connects anyway, so that a call given less than 2 s
		-- can connect at all, at worst 2 s less its time late
		if slot.conn == nil and left >= 1 and (attempt == 1 or left >= MIN_CONNECT_S * 1000) then
			local connect_timeout = math.max(MIN_CONNECT_S,
				math.floor(math.min(max_connect_timeout, left / 1000)))
			local connected, err = connect(slot, conninfo, connect_timeout)
			prepared = {}
			if not connected then
				return "not_sent", "cannot connect to the database: " .. err, prepared, pooler
			end
			left = math.floor(deadline - now_ms())
		end
		if slot.conn == nil or left < 1 then
			if unsent then
				return "not_sent", unsent, {}, pooler
			end
			return "busy", "the request's time ran out before it reached the database", prepared, pooler
		end
		local outcome, value
		if use_prepared then
			outcome, value = run_pipeline(slot, name, template, params, left, prepared, deadline,
				hard_deadline, app_name)
			if outcome == "pooler" then
				-- nothing ran: send it as a query text, now and from now on
				use_prepared, pooler = false, true
				prepared = {}
			end
		end
		if not use_prepared then
			local body, err = build_query(slot.conn, template, params)
			local settings = body and build_query(slot.conn, TIMEOUT_SQL, { tostring(left), app_name })
			if not body or not settings then
				return "error", { sqlstate = "22021", message = err or "cannot escape" }, prepared, pooler
			end
			outcome, value = run_query(slot, settings .. ";" .. body, deadline, hard_deadline)
		end
		if outcome == "unknown" then
			drop(slot)
			return outcome, value, {}, pooler
		elseif outcome ~= "not_sent" then
			return outcome, value, prepared, pooler
		end
		-- nothing of it can commit (see the top of this file)
		drop(slot)
		slot.phase = PHASE_RUNNING
		unsent = "cannot send to the database: " .. tostring(value)
	end
	return "not_sent", unsent, {}, pooler
end

local function begin_call(slot_address)
	load_libpq()
	local slot = ffi.cast("struct lance_db_slot *", slot_address)
	slot.phase = PHASE_RUNNING
	return slot
end

local function gateway_error(err)
	return "gateway error: " .. tostring(err)
end

-- M.thread_call(slot_address, conninfo, max_connect_timeout, name,
-- template, params, timeout_ms, prepared, app_name): thread_call, in the
-- thread, for the record at slot_address (a number: the slot's record is
-- the worker's memory).  Answers outcome, value, prepared, pooler.
function M.thread_call(slot_address, ...)
	local began, slot = pcall(begin_call, slot_address)
	if not began then
		-- nothing of the slot was touched (its phase still says so)
		return "not_sent", "gateway error before the call began", nil, false
	end
	local ok, outcome, value, prepared, pooler = pcall(thread_call, slot, ...)
	if ok then
		return outcome, value, prepared, pooler
	end
	-- A bug here or no memory, not the database's answer.  The connection
	-- may be inside the call's transaction: it is closed (drop sends
	-- nothing more of the call), or, should that fail too, closed by the
	-- slot's next call before anything else.  Once the call's Sync or query
	-- text was handed to libpq it may have committed.  This path raises no
	-- error of its own (every step that allocates is in a pcall).
	slot.discard = 1
	pcall(drop, slot)
	local described, message = pcall(gateway_error, outcome)
	return slot.phase == PHASE_SENT and "unknown" or "not_sent",
		described and message or "gateway error", nil, false
end

-- ---------------------------------------------------------------------------
-- In nginx's worker (the event loop): pools of slots.
-- ---------------------------------------------------------------------------
local Pool = {}
Pool.__index = Pool

-- The gauges of /metrics (lance_gateway.metrics): each worker writes its
-- pools' connections in use and requests waiting for one into the shared
-- dict lance_metrics under its worker id, which a restarted worker takes
-- over (and so overwrites the figures of the one it replaces).
local function publish(pool)
	local metrics = ngx.shared.lance_metrics
	if not metrics then
		return
	end
	local suffix = "\t" .. pool.name .. "\t" .. tostring(ngx.worker.id() or 0)
	metrics:set("g\tin_use" .. suffix, pool.size - #pool.free)
	metrics:set("g\twaiting" .. suffix, pool.waiting)
end

-- new_pool{name, conninfo, size, thread_pool, connect_timeout, wire}: size
-- connections at most for this worker (made on first use); wire = false
-- keeps every call on libpq's thread path.  Call from init_worker_by_lua.
function M.new_pool(opts)
	local semaphore = require("ngx.semaphore")
	local sema, err = semaphore.new(opts.size)
	if not sema then
		error("lance_db: cannot make a semaphore: " .. tostring(err))
	end
	local pool = setmetatable({
		name = opts.name or "primary",
		conninfo = opts.conninfo,
		size = opts.size,
		thread_pool = opts.thread_pool or "lance_db",
		connect_timeout = opts.connect_timeout or 10,
		sema = sema,
		free = {},
		-- every slot, free or not: their records stay allocated while a
		-- thread may write them (a request that ends while its call runs
		-- never gives its slot back)
		slots = {},
		-- false once a connection did not keep prepared statements (a
		-- pooler in transaction mode): query texts from then on
		prepare = true,
		waiting = 0,
	}, Pool)
	-- a database on this host the worker speaks to itself (lance_db_wire),
	-- unless opts.wire is false
	lance_db_wire = lance_db_wire or require("lance_db_wire")
	pool.wire = opts.wire ~= false and lance_db_wire.target(opts.conninfo, {
		settings_statement = TIMEOUT_STATEMENT,
		settings_sql = TIMEOUT_SQL,
		grace_ms = GRACE_MS,
		connect_timeout = pool.connect_timeout,
		name = pool.name,
	})
	define_slot_type()
	for i = 1, opts.size do
		local record = ffi.new("struct lance_db_slot")
		pool.slots[i] = {
			index = i,
			record = record,
			address = tonumber(ffi.cast("intptr_t", ffi.cast("struct lance_db_slot *", record))),
			prepared = {},
		}
		pool.free[i] = pool.slots[i]
	end
	publish(pool)
	return pool
end

-- (a light thread of Pool:call: sleeps ms milliseconds)
local function keep_worker(ms)
	ngx.sleep(ms / 1000)
end

-- The call in a thread of nginx's thread pool, with the slot's connection
-- (libpq).  Answers outcome, value.
local function thread_path(self, slot, name, template, params, timeout_ms, app_name)
	local record = slot.record
	record.phase = PHASE_WAITING
	-- A worker told to stop (nginx -s reload or quit) exits as soon as no
	-- timer of its own is pending, and a call in a thread holds none: it
	-- would exit under the call, the request unanswered (an empty reply; a
	-- commit's outcome unknown to its client).  A light thread asleep for
	-- the call's longest time holds one until the call is back.
	local keeper = ngx.thread.spawn(keep_worker, timeout_ms + GRACE_MS + self.connect_timeout * 1000)
	local tok, outcome, value, prepared, pooler = ngx.run_worker_thread(self.thread_pool, "lance_db",
		"thread_call", slot.address, self.conninfo, self.connect_timeout, name, template, params, timeout_ms,
		self.prepare and slot.prepared, app_name or false)
	ngx.thread.kill(keeper)
	if not tok and record.phase == PHASE_WAITING then
		-- thread_call did not begin (no VM, no memory, or an error before
		-- it touched the slot): the slot is as it was, nothing was sent
		outcome, value = "not_sent", "cannot run the database call: " .. tostring(outcome)
	elseif not tok then
		-- it began, then its answer was lost (its error path failed, or
		-- what it answered could not be copied): its connection, if the
		-- record still names one, is in an unknown state, closed by the
		-- slot's next call; the call may have committed once it was sent
		record.discard = 1
		slot.prepared = {}
		value = "the database call failed: " .. tostring(outcome)
		outcome = record.phase == PHASE_SENT and "unknown" or "not_sent"
	else
		if prepared then
			slot.prepared = prepared
		end
		if pooler then
			self:no_prepared_statements()
		end
	end
	return outcome, value
end

-- pool:lost_statements(failure): see lost_statements above.
function Pool:lost_statements(failure)
	return lost_statements(failure)
end

-- From now on the pool's calls are query texts (libpq) or unnamed
-- statements (the worker's own protocol): its database keeps no
-- prepared statement from one call to the next (a pooler in transaction
-- mode).
function Pool:no_prepared_statements()
	if self.prepare then
		self.prepare = false
		ngx.log(ngx.WARN, "lance_db: the ", self.name, " database does not keep prepared statements",
			" (a pooler in transaction mode): each call is parsed anew from now on")
	end
end

-- pool:call(template, params, deadline, app_name, no_wait): run the query
-- text template (with $1.. for params, false for NULL) before deadline
-- (ngx.now() seconds), with application_name app_name for its transaction
-- (default "lance_gateway"); with no_wait, only if a connection is free
-- at once.  Answers rows, or nil, outcome, detail (see the top of this
-- file).
function Pool:call(template, params, deadline, app_name, no_wait)
	local left = deadline - ngx.now()
	if left <= 0 then
		return nil, "busy", "the request's time ran out before a database connection was free"
	end
	self.waiting = self.waiting + 1
	publish(self)
	local ok, err = self.sema:wait(no_wait and 0 or left)
	self.waiting = self.waiting - 1
	if not ok then
		publish(self)
		return nil, "busy", "no database connection became free in time (" .. tostring(err) .. ")"
	end
	local slot = table.remove(self.free)
	publish(self)
	ngx.update_time()
	local timeout_ms = math.floor((deadline - ngx.now()) * 1000)
	local name = "lance_db_" .. ngx.md5(template)
	local outcome, value
	if self.wire then
		local switch
		outcome, value, switch = lance_db_wire.call(self, self.wire, slot, name, template, params, timeout_ms,
			app_name or DEFAULT_APPLICATION_NAME)
		if outcome == "unsupported" or switch == "unsupported" then
			-- libpq's from now on (the connections slots kept close when
			-- idle a minute)
			if self.wire then
				self.wire = nil
				ngx.log(ngx.WARN, "lance_db: the ", self.name, " database is reached through libpq from now on: ",
					outcome == "unsupported" and value or "it asks for an authentication the workers do not speak")
			end
		end
		if outcome == "unsupported" then
			-- nothing of the call was sent: through libpq
			outcome = nil
		end
	end
	if not outcome then
		-- the time left now (a call that went to libpq may have spent some)
		ngx.update_time()
		timeout_ms = math.floor((deadline - ngx.now()) * 1000)
		if timeout_ms < 1 then
			outcome, value = "busy", "the request's time ran out before it reached the database"
		else
			outcome, value = thread_path(self, slot, name, template, params, timeout_ms, app_name)
		end
	end
	self.free[#self.free + 1] = slot
	publish(self)
	self.sema:post(1)
	if outcome == "ok" then
		return value
	end
	return nil, outcome, value
end

-- Slots of this worker with a connection, and free slots (for tests and logs).
function Pool:stats()
	local connected = 0
	for _, slot in ipairs(self.free) do
		if slot.record.conn ~= nil and slot.record.discard == 0 then
			connected = connected + 1
		end
	end
	return { size = self.size, free = #self.free, connected_free = connected }
end

return M
