-- One query to the gateway's database, connected as the gateway connects:
-- libpq through LuaJIT's FFI (as gateway/lance_db.lua), its connection URI
-- or key=value string read from standard input.  Run by gateway_query in
-- scripts/common.sh (scripts/gateway.sh's check for lance_rest(), the
-- default number of connections), as the gateway's OS user (lance_gateway).
--
-- Why not psql: psql takes a URI only as an argument (libpq expands none
-- from PGDATABASE or from a service file's dbname), and a command line is
-- there for every local user to read (ps, /proc/<pid>/cmdline), password
-- and sslpassword included.  Standard input is this process's alone.
--
-- The query is the environment's LN_QUERY.  Prints its rows, one a line,
-- fields separated by | (as psql -At).  Exit status: 0 answered, 1 the
-- query failed, 2 no connection (or no libpq).  It prints no message of
-- libpq's or the server's: those may quote the URL (a malformed one's
-- password too).
local ffi = require("ffi")
ffi.cdef([[
typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;
PGconn *PQconnectdbParams(const char *const *keywords, const char *const *values, int expand_dbname);
int PQstatus(const PGconn *conn);
void PQfinish(PGconn *conn);
PGresult *PQexec(PGconn *conn, const char *query);
int PQresultStatus(const PGresult *res);
int PQntuples(const PGresult *res);
int PQnfields(const PGresult *res);
char *PQgetvalue(const PGresult *res, int row, int col);
int PQgetlength(const PGresult *res, int row, int col);
void PQclear(PGresult *res);
]])

local CONNECTION_OK, PGRES_TUPLES_OK = 0, 2
local EXIT_QUERY_FAILED, EXIT_NO_CONNECTION = 1, 2
-- seconds per host, as PGCONNECT_TIMEOUT was for psql (the URL may set its own)
local CONNECT_TIMEOUT = "10"

local loaded, pq = pcall(ffi.load, "libpq.so.5")
if not loaded then
	os.exit(EXIT_NO_CONNECTION)
end

-- as the gateway reads its database_url: trailing white space dropped
local conninfo = (io.read("*a") or ""):gsub("%s+$", "")
local query = os.getenv("LN_QUERY") or ""

-- keywords before dbname are defaults the conninfo may override; dbname is
-- expanded (expand_dbname 1): a URI or key=value string, as the gateway's.
-- The arrays hold pointers into Lua strings: the tables keep those strings
-- referenced (anchored) until the C call returns, as gateway/lance_db.lua's
-- connect() does; the arrays' last element stays NULL.
local names = { "connect_timeout", "fallback_application_name", "dbname" }
local texts = { CONNECT_TIMEOUT, "lance_gateway.sh", conninfo }
local keywords = ffi.new("const char *[?]", #names + 1)
local values = ffi.new("const char *[?]", #names + 1)
for i = 1, #names do
	keywords[i - 1], values[i - 1] = names[i], texts[i]
end
local conn = pq.PQconnectdbParams(keywords, values, 1)
-- the strings stay referenced up to here
names, texts = nil, nil
if conn == nil then
	os.exit(EXIT_NO_CONNECTION)
end
if pq.PQstatus(conn) ~= CONNECTION_OK then
	pq.PQfinish(conn)
	os.exit(EXIT_NO_CONNECTION)
end

local res = pq.PQexec(conn, query)
local answered = res ~= nil and pq.PQresultStatus(res) == PGRES_TUPLES_OK
local lines = {}
if answered then
	for row = 0, pq.PQntuples(res) - 1 do
		local fields = {}
		for col = 0, pq.PQnfields(res) - 1 do
			fields[col + 1] = ffi.string(pq.PQgetvalue(res, row, col), pq.PQgetlength(res, row, col))
		end
		lines[#lines + 1] = table.concat(fields, "|") .. "\n"
	end
end
if res ~= nil then
	pq.PQclear(res)
end
pq.PQfinish(conn)
if not answered then
	os.exit(EXIT_QUERY_FAILED)
end
io.write(table.concat(lines))
os.exit(0)
