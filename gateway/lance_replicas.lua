-- lance_replicas: reads on hot standbys, with read-your-writes.
--
-- With LN_DATABASE_READ_URL naming one or more streaming hot standbys, a
-- request whose operation does not change the catalog goes to a standby,
-- and every other request to the primary (LN_DATABASE_URL).  Which
-- operations change the catalog is the registry's to say: the routes of
-- lance_operations() (method, path, changes_catalog), read once per worker
-- and matched as lance_rest() matches them (find_route in src/http/rest.c).
--
-- Read-your-writes: after a change that answered 2xx, the primary's WAL
-- position (pg_current_wal_insert_lsn(), asked after the commit: one more
-- round trip, for changes only) is kept in the shared dict lance_written
-- under the id of the API key the database authenticated for it
-- (lnk_<12 hex>; "-" without one), one entry per worker.  That key's reads
-- go to a standby only once the standby has replayed up to that position,
-- else to the primary: a key never reads older state than it wrote.  Other
-- keys' reads are not held back.
--
-- Each worker checks every standby every CHECK_INTERVAL seconds (a timer):
-- its replay position and its lag.  The lag is the larger of two figures:
-- the standby's own (the age of the last commit it replayed when it has
-- received WAL it has not replayed yet, 0 when it replayed all it received)
-- and the primary's (its WAL insert position, sampled at each check: the
-- age of the newest sample the standby has replayed past, 0 for the latest),
-- which also sees a standby cut off from its primary.  A standby that cannot be reached, that is no longer in
-- recovery (promoted: a primary of its own), or whose lag plus the age of
-- its last check exceeds LN_READ_MAX_LAG seconds is skipped.  A read a
-- standby fails (down since its last check, a conflict with recovery) or
-- answers 503 or 401 (a key made after its last replay) goes to the
-- primary: a read is safe to send twice.
local lance_db = require("lance_db")
local semaphore = require("ngx.semaphore")

local M = {}

local CHECK_INTERVAL = 0.5
-- how long a standby check may take (a standby that accepts connections and
-- never answers must not hold the checker)
local CHECK_TIMEOUT = 2
-- Every statement names the schema of each function, operator and type it
-- uses: the gateway's role's search_path (which may put "$user" or public
-- first, where someone else may create) never picks what runs.  The
-- extension's own functions are in the schema CREATE EXTENSION put them in
-- (M.schema), which the texts name by the placeholder @SCHEMA@.
local SCHEMA_SQL = "SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_extension e"
	.. " JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace"
	.. " WHERE e.extname OPERATOR(pg_catalog.=) 'lance_namespace'"
local ROUTES_SQL = "SELECT http_method, http_path, changes_catalog::pg_catalog.text, operation_id"
	.. " FROM @SCHEMA@.lance_operations() WHERE http_path IS NOT NULL"
local WAL_SQL = "SELECT pg_catalog.pg_current_wal_insert_lsn()::pg_catalog.text"
-- A standby's replay position and lag, or not a standby (promoted).
local CHECK_SQL = [[
SELECT pg_catalog.pg_is_in_recovery()::pg_catalog.text,
       pg_catalog.pg_last_wal_replay_lsn()::pg_catalog.text,
       CASE WHEN pg_catalog.pg_last_wal_replay_lsn()
                 OPERATOR(pg_catalog.>=) pg_catalog.pg_last_wal_receive_lsn() THEN 0
            ELSE coalesce(extract(epoch FROM pg_catalog.now() OPERATOR(pg_catalog.-)
                                             pg_catalog.pg_last_xact_replay_timestamp()), 1e9)
       END::pg_catalog.float8::pg_catalog.text]]

local primary           -- this worker's pool to the primary (lance_db)
local standbys = {}     -- { pool, up, in_recovery, lsn, lag, checked }
local max_lag = 10
local routes            -- the route table, once read: routes by their count of segments
local next_standby = 0
local written           -- ngx.shared.lance_written: key id<TAB>worker id -> WAL position
local unverified        -- ngx.shared.lance_written_unverified: key id -> math.huge
local written_ids = 1   -- how many worker ids' entries a key's position is read from
local WORKERS_SEEN = "\tworkers"   -- (in lance_written) the most workers a start had

-- "X/Y" (hex halves of a WAL position) as a number: exact below 2^53.
local function lsn_number(text)
	local hi, lo = (text or ""):match("^(%x+)/(%x+)$")
	if not hi then
		return nil
	end
	return tonumber(hi, 16) * 4294967296 + tonumber(lo, 16)
end

local function split(path)
	local segments = {}
	for segment in (path .. "/"):gmatch("([^/]*)/") do
		segments[#segments + 1] = segment
	end
	return segments
end

-- The extension's schema, as an SQL name (quote_ident), once known; and
-- while this worker looks it up, the look-up ({wake, waiters}) that other
-- requests wait for rather than each asking again.
local schema
local lookup

-- A call that hands the extension's function what a request carries (its
-- headers, API keys among them) runs it only while the extension is still
-- in the schema the worker knows: GUARD, a condition on the statement
-- that PostgreSQL checks once before the function runs (a one-time
-- filter), with the schema's name as the statement's last parameter.
-- After a DROP and CREATE EXTENSION elsewhere, a function someone made
-- since under the old name never receives a request: the call answers no
-- row, nothing ran, and the worker looks the schema up again
-- (schema_moved).  It costs one index look-up of pg_extension a call.
M.GUARD = " WHERE EXISTS (SELECT FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n"
	.. " ON n.oid OPERATOR(pg_catalog.=) e.extnamespace"
	.. " WHERE e.extname OPERATOR(pg_catalog.=) 'lance_namespace'"
	.. " AND pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.=) $%d::pg_catalog.text)"

-- The schema's name (quote_ident's answer) as the statements may hold it:
-- never with a "$", which the query texts sent through a pooler
-- (lance_db's build_query) would take for a parameter ($1) and replace
-- with a value, inside the name.  nil, outcome, detail for one refused.
local function usable_schema(name)
	if name:find("$", 1, true) then
		ngx.log(ngx.ERR, "lance_gateway: the extension lance_namespace is in schema ", name,
			", whose name holds a \"$\": the gateway does not call it (move it: DROP and CREATE EXTENSION",
			" lance_namespace SCHEMA <a name without $>)")
		return nil, "error", { sqlstate = "", schema_refused = true,
			message = "the extension's schema name holds a \"$\", which the gateway refuses" }
	end
	return name
end

-- One look-up of the schema, on the primary; on a standby only when the
-- primary gives no answer (down, every connection busy), so that reads go
-- on during a primary's outage.  A standby may not have replayed a DROP
-- and CREATE EXTENSION yet: its answer is safe all the same, since every
-- lance_rest call carries GUARD (a call on the primary that finds the
-- extension elsewhere runs nothing, and the worker looks it up again).
-- The schema, or nil, outcome, detail.
local function look_up(deadline, no_wait)
	local rows, outcome, detail = primary:call(SCHEMA_SQL, {}, deadline, nil, no_wait)
	if not rows and outcome ~= "error" then
		for _, s in ipairs(standbys) do
			if s.up and s.in_recovery then
				local found = s.pool:call(SCHEMA_SQL, {}, deadline, nil, no_wait)
				if found then
					rows = found
					break
				end
			end
		end
	end
	if rows and rows[1] and type(rows[1][1]) == "string" then
		return usable_schema(rows[1][1])
	elseif rows then
		return nil, "error", { sqlstate = "42704",
			message = "the extension lance_namespace is not installed in the gateway's database" }
	elseif outcome == "unknown" then
		-- a read: nothing the request it was for did was sent
		outcome = "not_sent"
	end
	return nil, outcome, detail
end

-- True for a look-up's failure that another request would meet too: an
-- error the database answered, but for a cancel (57014, LN017: the
-- deadline of the request that started it, which may be shorter).
local function answered(outcome, detail)
	local state = type(detail) == "table" and detail.sqlstate
	return outcome == "error" and state ~= "57014" and state ~= "LN017"
end

-- Which schema the extension is in is asked by the first request of a
-- worker that needs it, on the primary: the schema is chosen at CREATE
-- EXTENSION and stays (relocatable = false), but a DROP and CREATE
-- EXTENSION may move it, so a call that finds no such function or schema
-- forgets it (forget_schema), and a call whose GUARD finds it elsewhere
-- answers no row (schema_moved).
-- schema(deadline, no_wait): the schema, or nil, outcome, detail as
-- lance_db's pool:call answers them ("error" with SQLSTATE 42704 when the
-- extension is not installed); a look-up that broke off is "not_sent": it
-- was a read, and the request it was for was not sent.  A request that
-- waited for another's look-up which failed without the database's answer
-- or was cancelled (its deadline may have been shorter: /readyz, /metrics)
-- and has time left looks it up itself.
function M.schema(deadline, no_wait)
	while not schema do
		if not lookup then
			local current = { wake = assert(semaphore.new(0)), waiters = 0 }
			lookup = current
			-- (pcall: the look-up must end, or this worker's requests would wait for it)
			local ok, found, outcome, detail = pcall(look_up, deadline, no_wait)
			if not ok then
				found, outcome, detail = nil, "not_sent", "gateway error: " .. tostring(found)
			end
			schema = found
			lookup = nil
			current.outcome, current.detail = outcome, detail
			if current.waiters > 0 then
				current.wake:post(current.waiters)
			end
			if not found then
				return nil, outcome, detail
			end
		elseif no_wait then
			return nil, "busy", "the extension's schema is being looked up"
		else
			local current = lookup
			current.waiters = current.waiters + 1
			current.wake:wait(math.max(0, deadline - ngx.now()))
			if not schema and (answered(current.outcome, current.detail) or ngx.now() >= deadline
				or lookup == current) then
				-- the database's answer (the same for this request), or no time left
				return nil, current.outcome or "busy",
					current.detail or "the look-up of the extension's schema took too long"
			end
		end
	end
	return schema
end

-- forget_schema(outcome, detail): after a call, forget the schema when the
-- database found no such function (42883) or schema (3F000): the extension
-- was dropped, or made anew elsewhere.
function M.forget_schema(outcome, detail)
	if outcome == "error" and type(detail) == "table"
		and (detail.sqlstate == "42883" or detail.sqlstate == "3F000") then
		schema = nil
	end
end

-- schema_moved(): a call's GUARD found the extension in another schema (or
-- none): look it up again.
function M.schema_moved()
	if schema then
		ngx.log(ngx.WARN, "lance_gateway: the extension lance_namespace is no longer in schema ", schema,
			": looking it up again")
	end
	schema = nil
end

-- sql_in(text, in_schema): text with @SCHEMA@ as in_schema (kept: the
-- same text each call, whose prepared statement lance_db names by its md5).
local texts = {}
function M.sql_in(text, in_schema)
	local known = texts[text]
	if not known or known.schema ~= in_schema then
		-- (a "%" of the name taken as itself; no closure: one here would
		-- keep LuaJIT from compiling every call of this function)
		known = { schema = in_schema, sql = (text:gsub("@SCHEMA@", (in_schema:gsub("%%", "%%%%")))) }
		texts[text] = known
	end
	return known.sql
end

local function load_routes(deadline, no_wait)
	local in_schema = M.schema(deadline, no_wait)
	if not in_schema then
		return nil
	end
	local sql = M.sql_in(ROUTES_SQL, in_schema)
	local rows, outcome, detail = primary:call(sql, {}, deadline, nil, no_wait)
	M.forget_schema(outcome, detail)
	for _, s in ipairs(standbys) do
		if rows then
			break
		end
		rows = s.pool:call(sql, {}, deadline)
	end
	if not rows then
		return nil
	end
	-- a path is matched against the routes of as many segments alone
	local by_count = {}
	for _, row in ipairs(rows) do
		local placeholders = select(2, row[2]:gsub("{", ""))
		local segments = split(row[2])
		local same = by_count[#segments] or {}
		by_count[#segments] = same
		same[#same + 1] = {
			method = row[1],
			segments = segments,
			placeholders = placeholders,
			changes = row[3] ~= "false",
			operation = row[4],
		}
	end
	return by_count
end

local NO_ROUTES = {}

-- (route_of asks only the routes of as many segments as the path has)
local function matches(route_segments, segments)
	for i, pattern in ipairs(route_segments) do
		if pattern:sub(1, 1) == "{" then
			if segments[i] == "" then
				return false
			end
		elseif pattern ~= segments[i] then
			return false
		end
	end
	return true
end

-- The route lance_rest() would run the request by (find_route in
-- src/http/rest.c), or nil: none, or a method its route refuses.
local function route_of(method, path)
	if #path > 1 and path:sub(-1) == "/" then
		path = path:sub(1, -2)
	end
	local segments = split(path)
	local best
	for _, route in ipairs(routes[#segments] or NO_ROUTES) do
		if (not best or route.placeholders < best.placeholders) and matches(route.segments, segments) then
			best = route
		end
	end
	if not best or (method ~= "POST" and method ~= best.method) then
		return nil
	end
	return best
end

-- True when the request runs an operation that does not change the catalog;
-- false when it does, or when it has no route (the primary answers those).
local function is_read(method, path)
	local route = route_of(method, path)
	return route ~= nil and not route.changes
end

-- The spec's name of the operation a request runs (CreateTableVersion),
-- by the routes of lance_operations(); nil when the request has none, or
-- the routes are not read yet: a worker reads them once the database has
-- answered a request (ensure_routes), one round trip more for that request
-- alone, and only with a connection free at once (a request never waits
-- for it); with standbys before its first request.
function M.operation(method, path)
	local route = routes and route_of(method, path)
	return route and route.operation or nil
end

function M.ensure_routes(deadline)
	if not routes then
		routes = load_routes(math.min(deadline, ngx.now() + CHECK_TIMEOUT), true)
	end
end

-- The key id the request names (lnk_ and 12 hex digits), "-" for none: it
-- only chooses where the key's reads go, the database authenticates.  The
-- key is read as lance_rest() reads it (request_role in src/http/rest.c),
-- from the headers handed to it (headers: name -> value, a repeated
-- header's values joined by ", "): x-api-key, else an Authorization header
-- that starts with "bearer " in any case, the key after the spaces (not
-- tabs) that follow.
local KEY_ID = "^(lnk_" .. ("%x"):rep(12) .. ")_"
local function request_key(headers)
	local key = headers["x-api-key"]
	if not key then
		local authorization = headers["authorization"]
		if authorization and authorization:sub(1, 7):lower() == "bearer " then
			key = authorization:sub(8):match("^ *(.*)$")
		end
	end
	return key and key:match(KEY_ID) or "-"
end
-- (lance_gateway's too: the bucket of LN_KEY_CONCURRENCY a request counts in)
M.request_key = request_key

-- The primary's WAL insert positions, sampled at each check ({t, lsn},
-- oldest first), as far back as a lag within the bound needs.
local samples = {}

local function sample_primary()
	local rows = primary:call(WAL_SQL, {}, ngx.now() + CHECK_TIMEOUT)
	ngx.update_time()
	local lsn = rows and rows[1] and lsn_number(rows[1][1])
	if not lsn then
		return
	end
	local now = ngx.now()
	samples[#samples + 1] = { t = now, lsn = lsn }
	while #samples > 2 and samples[2].t < now - max_lag - 2 * CHECK_INTERVAL do
		table.remove(samples, 1)
	end
end

-- The lag of a standby that has replayed up to <lsn>, by the primary's
-- samples: 0 when it has reached the newest, else the age of the newest
-- one it has reached (it has everything the primary wrote until then, and
-- misses something written since).  nil without a fresh sample (the
-- primary cannot be reached): the standby's own figure stands.
local function sampled_lag(lsn)
	local n = #samples
	if n == 0 or ngx.now() - samples[n].t > CHECK_TIMEOUT + 2 * CHECK_INTERVAL then
		return nil
	end
	if lsn >= samples[n].lsn then
		return 0
	end
	for i = n - 1, 1, -1 do
		if lsn >= samples[i].lsn then
			return ngx.now() - samples[i].t
		end
	end
	return math.huge
end

local function check(s)
	local rows, outcome, detail = s.pool:call(CHECK_SQL, {}, ngx.now() + CHECK_TIMEOUT)
	ngx.update_time()
	local row = rows and rows[1]
	if not row then
		if s.up then
			ngx.log(ngx.WARN, "lance_gateway: standby ", s.index, " skipped: ", tostring(outcome), " ",
				type(detail) == "table" and tostring(detail.message) or tostring(detail))
		end
		s.up = false
		return
	end
	s.up = true
	s.in_recovery = row[1] == "true"
	s.lsn = lsn_number(row[2])
	-- the larger of the two: a standby cut off from its primary has replayed
	-- all it received (its own figure is 0) while the primary moves on
	s.lag = math.max(tonumber(row[3]) or math.huge, s.lsn and sampled_lag(s.lsn) or 0)
	s.checked = ngx.now()
end

local function checker(premature)
	if premature then
		return
	end
	sample_primary()
	for _, s in ipairs(standbys) do
		check(s)
	end
	local ok, err = ngx.timer.at(CHECK_INTERVAL, checker)
	if not ok then
		ngx.log(ngx.ERR, "lance_gateway: cannot schedule the standby check: ", err)
	end
end

-- init_worker{primary, read_url_file, max_lag, connections}: the primary's
-- pool (lance_gateway's), and a pool of <connections> per standby named in
-- read_url_file (URIs separated by white space; none: every request goes
-- to the primary, as without this module).
function M.init_worker(conf)
	primary = conf.primary
	max_lag = conf.max_lag or max_lag
	written = ngx.shared.lance_written
	unverified = ngx.shared.lance_written_unverified
	local f = conf.read_url_file and io.open(conf.read_url_file, "r")
	local text = f and f:read("*a") or ""
	if f then
		f:close()
	end
	for url in text:gmatch("%S+") do
		standbys[#standbys + 1] = {
			index = #standbys + 1,
			pool = lance_db.new_pool({
				name = "standby " .. (#standbys + 1),
				conninfo = url,
				size = conf.connections,
				thread_pool = "lance_db_read",
				connect_timeout = CHECK_TIMEOUT,
			}),
			up = false,
			lag = math.huge,
			checked = 0,
		}
	end
	if #standbys > 0 then
		assert(written, "lance_gateway: lua_shared_dict lance_written is missing")
		assert(unverified, "lance_gateway: lua_shared_dict lance_written_unverified is missing")
		-- (every worker of a start writes the same count: no race matters)
		local count = ngx.worker.count()
		written_ids = math.max(count, written:get(WORKERS_SEEN) or 0)
		written:set(WORKERS_SEEN, written_ids)
		assert(ngx.timer.at(0, checker))
	end
end

-- A standby that may serve a read needing WAL position <need> (nil: any):
-- up, in recovery, within the lag bound (its lag when checked plus the time
-- since), and past <need>.  Round robin over those.
local function pick(need)
	local now = ngx.now()
	local fit = {}
	for _, s in ipairs(standbys) do
		if s.up and s.in_recovery and s.lsn and s.lag + (now - s.checked) <= max_lag
			and (not need or s.lsn >= need) then
			fit[#fit + 1] = s
		end
	end
	if #fit == 0 then
		return nil
	end
	next_standby = next_standby + 1
	return fit[next_standby % #fit + 1]
end

-- lance_written holds, per key id, one entry per worker (key<TAB>worker
-- id), which only that worker writes: its get and set of it have no yield
-- between them, so an entry's position never moves back, as it could with
-- one entry that two workers read and then set in turn (the older position
-- last).  A key's position is the largest of its entries; the ids read are
-- those of every worker count this dict has seen (written_ids), so that
-- the entries of workers a reload with fewer workers removed still count
-- until they expire.  The ids merely read from a request's headers are in
-- lance_written_unverified (always the primary: math.huge), apart.
local function written_position(key)
	local need = unverified:get(key)
	for id = 0, written_ids - 1 do
		local lsn = written:get(key .. "\t" .. id)
		if lsn and (not need or lsn > need) then
			need = lsn
		end
	end
	return need
end

-- Remember that <key> needs WAL position <lsn> (math.huge: the primary) for
-- its reads, for another LN_READ_MAX_LAG + 10 s (an entry older than the
-- lag bound no longer matters: every standby within it has replayed past
-- it).  A key id the database authenticated (or "-") goes in this worker's
-- entry of lance_written (the larger of it and the entry's), and may push
-- out that dict's least used entries when it is full.  An id merely read
-- from the request's headers goes in the small dict
-- lance_written_unverified, whose entries alone it may push out: made-up
-- ids never take the room of authenticated ones.
local function remember(key, lsn, authenticated)
	local ok, err
	if authenticated then
		local entry = key .. "\t" .. (ngx.worker.id() or 0)
		local old = written:get(entry)
		if old and old > lsn then
			lsn = old
		end
		ok, err = written:set(entry, lsn, max_lag + 10)
	else
		ok, err = unverified:set(key, lsn, max_lag + 10)
	end
	if not ok then
		ngx.log(ngx.ERR, "lance_gateway: cannot remember a write of ", key, ": ", err)
	end
end

-- The key id lance_rest answered (key_id) when it authenticated one.
local function authenticated_key(rows)
	local id = rows and rows[1] and rows[1][4]
	if type(id) == "string" and id ~= "" then
		return id
	end
	return nil
end

-- call(sql, params, deadline, app_name, headers): run lance_rest (params:
-- method, path, ...) where it belongs, with application_name app_name;
-- headers: the request's (name -> value) as handed to lance_rest.  Answers
-- what lance_db's pool:call answers.
function M.call(sql, params, deadline, app_name, headers)
	if #standbys == 0 then
		return primary:call(sql, params, deadline, app_name)
	end
	if not routes then
		routes = load_routes(deadline)
	end
	local method, path = params[1], params[2]
	local key = request_key(headers)
	if routes and is_read(method, path) then
		local s = pick(written_position(key))
		if s then
			local rows, outcome, detail = s.pool:call(sql, params, deadline, app_name)
			local status = rows and rows[1] and tonumber(rows[1][1])
			-- 401: a key made since the standby's last replay is not there yet
			if status and status ~= 503 and status ~= 401 then
				return rows
			end
			if not rows and outcome ~= "error" then
				s.up = false
			end
			ngx.log(ngx.WARN, "lance_gateway: a read failed on standby ", s.index, " (",
				tostring(outcome or status), " ", type(detail) == "table" and tostring(detail.message)
				or tostring(detail or ""), "); sent to the primary")
		end
		return primary:call(sql, params, deadline, app_name)
	end
	local rows, outcome, detail = primary:call(sql, params, deadline, app_name)
	local status = rows and rows[1] and tonumber(rows[1][1])
	if status and status >= 200 and status < 300 then
		-- the key the database authenticated (key_id), "-" without one:
		-- never an id merely sent, which anybody can make up; its position
		-- asked after the commit (the primary not answering: the primary)
		local wal = primary:call(WAL_SQL, {}, deadline)
		local lsn = wal and wal[1] and lsn_number(wal[1][1]) or math.huge
		remember(authenticated_key(rows) or "-", lsn, true)
	elseif outcome == "unknown" or (status and status >= 500) then
		-- an outcome the gateway cannot know (the write may have committed),
		-- or a failure the database answered: that key reads from the
		-- primary within the lag bound, so that a client that reads to find
		-- out sees the truth; no look-up of the WAL: the primary may be
		-- down.  Without the database's key_id the key is the one the
		-- headers name (not authenticated).  Any other answer (an error
		-- the database raised, which rolled the call back; a call never
		-- sent) changed nothing: nothing is remembered, so that requests
		-- the database refuses cannot fill the dicts.
		local id = authenticated_key(rows)
		remember(id or key, math.huge, id ~= nil or key == "-")
	end
	return rows, outcome, detail
end

return M
