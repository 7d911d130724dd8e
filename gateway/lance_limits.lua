-- lance_limits: LN_KEY_CONCURRENCY, the most requests of one API key in
-- flight at once in the gateway, counted over all its workers.
--
-- A request takes a slot of its key's bucket (lance_gateway.lua chooses
-- the bucket: the key's id, lnk_<12 hex>; one bucket for every request
-- without a key) before it is sent to the database, and gives it back in
-- the log phase, which every request runs whatever became of it (an
-- answer, an error, a timeout, a client gone).  Past the limit it is
-- answered 429 with code 21 and Retry-After.  (Each worker has database
-- connections of its own, and the limit is over all of them: where a
-- worker has no more connections than the limit, one key may take all of
-- that worker's; README, "Serving".)
--
-- The counts live in the lua_shared_dict lance_key_slots, one entry per
-- worker and bucket ("<pid>\t<bucket>": that worker's requests of that
-- bucket in flight), which only its worker writes, from a count it keeps
-- in its own memory; a bucket's requests in flight are the sum of the
-- entries of the workers alive.  So a count never drifts (no worker
-- decrements another's), and a worker that ends without its log phases
-- (killed, crashed) leaks nothing: each worker registers itself at its
-- start (its pid in the first free place "w\t<n>") and keeps its
-- registration and its entries alive every INTERVAL seconds, each for
-- LIFE seconds; the entries of a worker gone expire with its registration,
-- and no one counts them any more.  A request reads the registrations
-- each time (a few: about twice the workers), so a worker counts the
-- others' requests from the moment they start.  (A worker that shuts down after a
-- reload stops republishing: its requests still in flight then count for
-- LIFE seconds more.)  Two workers that take a bucket's last slot at the
-- same instant may both get it: a bucket may briefly hold one request more
-- per worker than the limit.
local M = {}

-- how often each worker republishes its entries and registration, and how
-- long they live without it (seconds)
local INTERVAL = 1
local LIFE = 5
-- the registrations' places: more than the workers of two generations
-- (a reload) of any machine's cores
local REGISTRATIONS = 256

local slots      -- ngx.shared.lance_key_slots
local limit = 1
local own = {}   -- bucket -> this worker's requests of it in flight
local own_pid    -- this worker's pid, as a string
local own_prefix -- own_pid .. "\t"
local registered -- this worker's registration ("w\t<n>"), once it has one
local place      -- its <n>
local PLACES = "w\tmax"

-- publish(bucket): this worker's entry of <bucket> as its own count says.
local function publish(bucket)
	local n = own[bucket]
	if n and n > 0 then
		-- set: a full dict drops its least used entries for it
		local ok, err = slots:set(own_prefix .. bucket, n, LIFE)
		if not ok then
			ngx.log(ngx.WARN, "lance_gateway: cannot count a request of a key in flight: ", err)
		end
	else
		own[bucket] = nil
		slots:delete(own_prefix .. bucket)
	end
end

-- register(): keep this worker's registration alive (or take a free
-- place), and the count of places in use ("w\tmax": at least the highest
-- one taken, raised with incr: two workers that raise it at once may make
-- it higher, never lower; a dict that dropped it has it back within
-- INTERVAL).
local function register()
	if registered and slots:get(registered) == own_pid then
		slots:set(registered, own_pid, LIFE)
	else
		registered = nil
		for i = 1, REGISTRATIONS do
			if slots:add("w\t" .. i, own_pid, LIFE) then
				registered = "w\t" .. i
				place = i
				break
			end
		end
		if not registered then
			ngx.log(ngx.WARN, "lance_gateway: no place to register this worker's requests in flight:",
				" other workers do not count them against LN_KEY_CONCURRENCY")
			return
		end
	end
	local most = slots:get(PLACES) or 0
	if most < place then
		slots:incr(PLACES, place - most, 0)
	end
end

-- in_flight_elsewhere(bucket): the requests of <bucket> in flight in the
-- other workers registered (read each time: a worker that started a moment
-- ago counts at once).
local function in_flight_elsewhere(bucket)
	local total = 0
	for i = 1, math.min(slots:get(PLACES) or REGISTRATIONS, REGISTRATIONS) do
		local pid = slots:get("w\t" .. i)
		if pid and pid ~= own_pid then
			total = total + (slots:get(pid .. "\t" .. bucket) or 0)
		end
	end
	return total
end

local function tick(premature)
	if premature then
		return
	end
	register()
	for bucket in pairs(own) do
		publish(bucket)
	end
end

-- init_worker{key_concurrency}: the limit, and this worker's registration.
function M.init_worker(conf)
	slots = assert(ngx.shared.lance_key_slots, "lance_gateway: lua_shared_dict lance_key_slots is missing")
	limit = conf.key_concurrency or limit
	own_pid = tostring(ngx.worker.pid())
	own_prefix = own_pid .. "\t"
	register()
	assert(ngx.timer.every(INTERVAL, tick))
end

function M.limit()
	return limit
end

-- acquire(bucket): true when a request of <bucket> may go on (its slot
-- taken: release it in the log phase), false when the bucket is full.
function M.acquire(bucket)
	local mine = own[bucket] or 0
	if mine >= limit or mine + in_flight_elsewhere(bucket) >= limit then
		return false
	end
	own[bucket] = mine + 1
	publish(bucket)
	return true
end

-- release(bucket): give back a slot acquire took.
function M.release(bucket)
	local mine = own[bucket]
	if mine then
		own[bucket] = mine - 1
		publish(bucket)
	end
end

return M
