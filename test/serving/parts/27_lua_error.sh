# shellcheck shell=bash
# Sourced by test/serving/run.sh.  A Lua error in a call's thread (a bug,
# no memory) leaves no connection behind.  An nginx of this part's own runs
# gateway/lance_db.lua's thread_call (in its worker: it is the function a
# thread runs) with a parameter whose conversion to text raises an error
# before the call's Sync is queued, and with a list of prepared statements
# whose update raises one after it went out.  The first is answered
# not_sent, the second unknown (it may have committed), and after each the
# connection the call held is closed: no session of lance_gateway is left.
LUA_ERROR_PREFIX="$WORK/lua-error"
make_postgres_dir "$LUA_ERROR_PREFIX" 700
make_postgres_dir "$LUA_ERROR_PREFIX/tmp" 700
make_postgres_dir "$LUA_ERROR_PREFIX/lua" 755
install -m 644 "$ROOT/gateway/lance_db.lua" "$LUA_ERROR_PREFIX/lua/"
printf '%s\n' "$DB_URL" | as_postgres tee "$LUA_ERROR_PREFIX/database_url" >/dev/null
# probe.run(case): one call of each case, answered "<slot's connection> <outcome>"
as_postgres tee "$LUA_ERROR_PREFIX/lua/probe.lua" >/dev/null <<'LUA'
local db = require("lance_db")
local M = {}

-- a value whose conversion to text raises an error
local exploding = setmetatable({}, { __tostring = function()
	error("injected: before the Sync")
end })

function M.run(case, url)
	local addr, outcome, value, prepared
	if case == "before" then
		addr, outcome, value = db.thread_call(0, url, 5, "lance_db_probe_before", "SELECT $1::text",
			{ exploding }, 5000, {}, false)
	else
		-- a connection that ran a call, then a call on it whose record of
		-- the statement it prepared raises an error once the results come
		addr, outcome, value, prepared = db.thread_call(0, url, 5, "lance_db_probe_one", "SELECT 1", {},
			5000, {}, false)
		if outcome ~= "ok" then
			return ngx.say("the first call: ", outcome, " ", tostring(value))
		end
		setmetatable(prepared, { __newindex = function()
			error("injected: after the Sync")
		end })
		addr, outcome, value = db.thread_call(addr, url, 5, "lance_db_probe_after", "SELECT 2", {}, 5000,
			prepared, false)
	end
	ngx.log(ngx.WARN, "probe ", case, ": ", tostring(value))
	ngx.say(addr, " ", outcome)
end

return M
LUA
LUA_ERROR_PORT="$(find_free_port 2633)"
as_postgres tee "$LUA_ERROR_PREFIX/nginx.conf" >/dev/null <<CONF
worker_processes 1;
pid $LUA_ERROR_PREFIX/nginx.pid;
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
for lua_error_case in before after; do
	case "$lua_error_case" in
	before) expected="0 not_sent" ;;
	after) expected="0 unknown" ;;
	esac
	check "a Lua error $lua_error_case the Sync: answered $expected" "$expected" \
		"$(curl -sS --max-time 60 "http://127.0.0.1:$LUA_ERROR_PORT/probe?case=$lua_error_case" 2>&1)"
	if wait_for 100 answers 0 gateway_backends; then
		pass "and the connection it held was closed"
	else
		fail "and the connection it held was closed" \
			"$(sql -c "SELECT state, application_name FROM pg_stat_activity WHERE usename = 'lance_gateway'")"
	fi
done
stop_gateway "$LUA_ERROR_PREFIX" >/dev/null 2>&1 || true
