# shellcheck shell=bash
# Sourced by test/serving/run.sh.  A Lua error in a call's thread (a bug,
# no memory) leaves no connection behind, nor a closed one named in its
# slot.  An nginx of this part's own runs gateway/lance_db.lua's
# thread_call (in its worker: it is the function a thread runs) with a
# parameter whose conversion to text raises an error before the call's
# Sync is queued, and with a list of prepared statements whose update
# raises one after it went out.  The first is answered not_sent, the
# second unknown (it may have committed), and after each the connection
# the call held is closed: no session of lance_gateway is left.
#
# Then through a pool of one slot, whose threads see a lance_db whose
# thread_call raises an error after it answered (as its error path would,
# out of memory): the thread ran, so the call is answered unknown, not
# not_sent, whether it kept its connection (the slot's next call closes it
# and makes another) or closed it (the slot names no connection: the next
# call makes one rather than use a freed one).  A call the thread pool
# refuses before it runs (a function among its values) is not_sent, and
# the slot keeps its connection.
#
# And through a pool the worker speaks for itself (gateway/lance_db_wire.lua,
# whose lance_pgwire here raises while a call's answer is read when told
# to): a Lua error before the Sync is not_sent, one after it unknown, and
# either closes the connection the call held.
LUA_ERROR_PREFIX="$WORK/lua-error"
make_postgres_dir "$LUA_ERROR_PREFIX" 700
make_postgres_dir "$LUA_ERROR_PREFIX/tmp" 700
make_postgres_dir "$LUA_ERROR_PREFIX/lua" 755
install -m 644 "$ROOT/gateway/lance_db.lua" "$LUA_ERROR_PREFIX/lua/lance_db_real.lua"
install -m 644 "$ROOT/gateway/lance_db_wire.lua" "$LUA_ERROR_PREFIX/lua/lance_db_wire.lua"
install -m 644 "$ROOT/gateway/lance_pgwire.lua" "$LUA_ERROR_PREFIX/lua/lance_pgwire_real.lua"
# lance_pgwire as this nginx sees it: the real one, whose connections
# raise an error while reading a call's answer when inject_after is set
as_postgres tee "$LUA_ERROR_PREFIX/lua/lance_pgwire.lua" >/dev/null <<'LUA'
local wire = require("lance_pgwire_real")
local M = setmetatable({}, { __index = wire })
M.inject_after = false
function M.connect(...)
	local conn, err, kind = wire.connect(...)
	if conn and M.inject_after then
		conn.results = function()
			error("injected: after the Sync")
		end
	end
	return conn, err, kind
end
return M
LUA
printf '%s\n' "$DB_URL" | as_postgres tee "$LUA_ERROR_PREFIX/database_url" >/dev/null
# lance_db as this nginx sees it: the real one, whose thread_call raises an
# error after it answered a call whose template says so
as_postgres tee "$LUA_ERROR_PREFIX/lua/lance_db.lua" >/dev/null <<'LUA'
local db = require("lance_db_real")
local thread_call = db.thread_call
db.thread_call = function(...)
	local outcome, value, prepared, pooler = thread_call(...)
	local template = select(5, ...)
	if template:find("raise after the call", 1, true) then
		error("injected: after thread_call")
	end
	return outcome, value, prepared, pooler
end
return db
LUA
# probe.run(case): one call of each case, answered "<the slot's
# connections> <outcome>"
as_postgres tee "$LUA_ERROR_PREFIX/lua/probe.lua" >/dev/null <<'LUA'
local db = require("lance_db")
local M = {}

-- a value whose conversion to text raises an error
local exploding = setmetatable({}, { __tostring = function()
	error("injected: before the Sync")
end })

local pool

local function pool_of(url)
	pool = pool or db.new_pool({ name = "probe", conninfo = url, size = 1, wire = false })
	return pool
end

-- a pool whose calls the worker speaks itself (lance_db_wire), and the
-- cases run through it: the outcome alone (its connections are nginx's)
local wire_pool
local WIRE_CASES = {
	wire_ok = { "SELECT 1" },
	wire_before = { "SELECT $1::text", { exploding } },
	wire_after = { "SELECT 3", {}, true },
}

local function wire_case(case, url)
	wire_pool = wire_pool or db.new_pool({ name = "probe_wire", conninfo = url, size = 1 })
	if not wire_pool.wire then
		return "the pool does not speak to the database itself"
	end
	local spec = WIRE_CASES[case]
	require("lance_pgwire").inject_after = spec[3] or false
	local rows, outcome, value = wire_pool:call(spec[1], spec[2] or {}, ngx.now() + 5)
	require("lance_pgwire").inject_after = false
	ngx.log(ngx.WARN, "probe ", case, ": ", tostring(value))
	return rows and "ok" or outcome
end

-- the pool's one slot: 1 when it names a connection a call may use
local function connected()
	return pool.slots[1].record.conn ~= nil and pool.slots[1].record.discard == 0 and 1 or 0
end

local function direct(case, url)
	local slot = pool_of(url).slots[1]
	local outcome, value, prepared
	if case == "before" then
		outcome, value = db.thread_call(slot.address, url, 5, "lance_db_probe_before", "SELECT $1::text",
			{ exploding }, 5000, {}, false)
	else
		-- a connection that ran a call, then a call on it whose record of
		-- the statement it prepared raises an error once the results come
		outcome, value, prepared = db.thread_call(slot.address, url, 5, "lance_db_probe_one", "SELECT 1",
			{}, 5000, {}, false)
		if outcome ~= "ok" then
			return outcome .. " " .. tostring(value)
		end
		setmetatable(prepared, { __newindex = function()
			error("injected: after the Sync")
		end })
		outcome, value = db.thread_call(slot.address, url, 5, "lance_db_probe_after", "SELECT 2", {}, 5000,
			prepared, false)
	end
	return outcome, value
end

local POOL_CASES = {
	ok = { "SELECT 1" },
	raise_after = { "SELECT 2 /* raise after the call */" },
	terminate_raise_after = { "SELECT pg_catalog.pg_terminate_backend(pg_catalog.pg_backend_pid())"
		.. " /* raise after the call */" },
	refused = { "SELECT $1::text", { function() end } },
}

function M.run(case, url)
	if WIRE_CASES[case] then
		ngx.say(wire_case(case, url))
		return
	end
	local outcome, value
	if POOL_CASES[case] then
		local rows
		rows, outcome, value = pool_of(url):call(POOL_CASES[case][1], POOL_CASES[case][2] or {}, ngx.now() + 5)
		outcome = rows and "ok" or outcome
	else
		outcome, value = direct(case, url)
	end
	ngx.log(ngx.WARN, "probe ", case, ": ", tostring(value))
	ngx.say(connected(), " ", outcome)
end

return M
LUA
LUA_ERROR_PORT="$(find_free_port 2633)"
as_postgres tee "$LUA_ERROR_PREFIX/nginx.conf" >/dev/null <<CONF
worker_processes 1;
pid $LUA_ERROR_PREFIX/nginx.pid;
thread_pool lance_db threads=1;
error_log $LUA_ERROR_PREFIX/error.log warn;
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
events {
    worker_connections 16;
}
http {
    access_log off;
    client_body_temp_path $LUA_ERROR_PREFIX/tmp/body;
    proxy_temp_path $LUA_ERROR_PREFIX/tmp/proxy;
    fastcgi_temp_path $LUA_ERROR_PREFIX/tmp/fastcgi;
    uwsgi_temp_path $LUA_ERROR_PREFIX/tmp/uwsgi;
    scgi_temp_path $LUA_ERROR_PREFIX/tmp/scgi;
    lua_package_path "$LUA_ERROR_PREFIX/lua/?.lua;/usr/share/lua/5.1/?.lua;;";
    server {
        listen 127.0.0.1:$LUA_ERROR_PORT;
        location = /probe {
            content_by_lua_block {
                local f = assert(io.open("$LUA_ERROR_PREFIX/database_url"))
                local url = f:read("*l")
                f:close()
                require("probe").run(ngx.var.arg_case, url)
            }
        }
    }
}
CONF
GATEWAYS+=("$LUA_ERROR_PREFIX")
if ! as_postgres nginx -q -p "$LUA_ERROR_PREFIX" -c "$LUA_ERROR_PREFIX/nginx.conf" -e "$LUA_ERROR_PREFIX/error.log" ||
	! wait_for 50 port_in_use "$LUA_ERROR_PORT"; then
	fail "the probe's nginx starts" "$(tail -n 5 "$LUA_ERROR_PREFIX/error.log" 2>/dev/null)"
	return 0
fi
check "no session of lance_gateway before" 0 "$(gateway_backends)"
# probe <case>: the probe's answer to one case
probe() { curl -sS --max-time 60 "http://127.0.0.1:$LUA_ERROR_PORT/probe?case=$1" 2>&1; }
for lua_error_case in before after; do
	case "$lua_error_case" in
	before) expected="0 not_sent" ;;
	after) expected="0 unknown" ;;
	esac
	check "a Lua error $lua_error_case the Sync: answered $expected" "$expected" "$(probe "$lua_error_case")"
	if wait_for 100 answers 0 gateway_backends; then
		pass "and the connection it held was closed"
	else
		fail "and the connection it held was closed" \
			"$(sql -c "SELECT state, application_name FROM pg_stat_activity WHERE usename = 'lance_gateway'")"
	fi
done
check "through the pool: a call" "1 ok" "$(probe ok)"
lua_error_backend="$(sql -c "SELECT pid FROM pg_stat_activity WHERE usename = 'lance_gateway'")"
check "a call whose thread raised an error after it ran: unknown, its connection not used again" "0 unknown" \
	"$(probe raise_after)"
check "the next call" "1 ok" "$(probe ok)"
if wait_for 100 answers "1 0" sql -c "SELECT count(*) || ' ' || count(*) FILTER (WHERE pid = $lua_error_backend)
	FROM pg_stat_activity WHERE usename = 'lance_gateway'"; then
	pass "it ran on a new connection, the old one closed"
else
	fail "it ran on a new connection, the old one closed" \
		"$(sql -c "SELECT pid, state FROM pg_stat_activity WHERE usename = 'lance_gateway'")"
fi
check "a call whose thread closed its connection, then raised an error: unknown, no connection named" \
	"0 unknown" "$(probe terminate_raise_after)"
check "the next call (a new connection, not the closed one)" "1 ok" "$(probe ok)"
check "a call the thread pool refused before it ran: not_sent, the slot keeps its connection" "1 not_sent" \
	"$(probe refused)"
check "the next call" "1 ok" "$(probe ok)"
check "one session of lance_gateway" 1 "$(gateway_backends)"
# The same through a pool the worker speaks for itself (lance_db_wire): a
# Lua error before the call's Sync went out (a value whose conversion
# raises) is not_sent, one while its answer is read is unknown, and either
# closes the connection the call held (nginx keeps the pool's idle one).
check "the worker's own protocol: a call" ok "$(probe wire_ok)"
check "its connection kept: two sessions of lance_gateway" 2 "$(gateway_backends)"
for wire_error_case in before after; do
	case "$wire_error_case" in
	before) label="a Lua error before the Sync" expected=not_sent ;;
	after) label="a Lua error while its answer is read" expected=unknown ;;
	esac
	check "the worker's own protocol: $label: $expected" "$expected" "$(probe "wire_$wire_error_case")"
	if wait_for 100 answers 1 gateway_backends; then
		pass "and the connection it held was closed"
	else
		fail "and the connection it held was closed" \
			"$(sql -c "SELECT state, application_name FROM pg_stat_activity WHERE usename = 'lance_gateway'")"
	fi
	check "the next call" ok "$(probe wire_ok)"
done
stop_gateway "$LUA_ERROR_PREFIX" >/dev/null 2>&1 || true
