# shellcheck shell=bash
# shellcheck disable=SC2153 # PORT is run.sh's
# Sourced by test/serving/run.sh.  Failover: a primary and a synchronous
# streaming standby (synchronous_standby_names, synchronous_commit on), one
# running gateway whose LN_DATABASE_URL lists both hosts with
# target_session_attrs=read-write.
#
#   1. writes through the gateway answer 200;
#   2. the standby stops receiving WAL: a write in flight then waits for it
#      (SyncRep) and is not acknowledged, and past LN_REQUEST_TIMEOUT (a
#      second gateway with 2 s) it answers 503, not 200;
#   3. the primary stops (-m immediate, a crash) and the standby is promoted
#      (pg_ctl promote): writes through the same gateway succeed within 20 s
#      (a bounded number of tries);
#   4. every write the gateway acknowledged (200) is on the promoted server.
#
# Without synchronous replication the write of step 2 is acknowledged at
# once and is lost in step 3 (the check of step 4 fails); without the
# gateway's reconnection to the other host, step 3 fails.
# shellcheck source=test/serving/replication.sh
source "$SERVING_DIR/replication.sh"

F70_DB=failover
F70_PRIMARY="$WORK/primary70"
F70_STANDBY="$WORK/standby70"
F70_SOCK="$WORK/run70"
F70_PPORT="$(find_free_port $((PORT + 20)))"
CLUSTERS+=("$F70_STANDBY" "$F70_PRIMARY")
repl_primary "$F70_PRIMARY" "$F70_PPORT" "$F70_SOCK"
f70p() { repl_psql "$F70_SOCK" "$F70_PPORT" -d "$F70_DB" "$@"; }
f70s() { repl_psql "$F70_SOCK" "$F70_SPORT" -d "$F70_DB" "$@"; }
repl_psql "$F70_SOCK" "$F70_PPORT" -d postgres -c "CREATE DATABASE $F70_DB"
f70p >/dev/null <<SQL
CREATE EXTENSION lance_namespace;
SELECT lance_create_namespace('{"id": ["f"]}');
SQL
ensure_gateway_role -h "$F70_SOCK" -p "$F70_PPORT" -U postgres -d "$F70_DB"
F70_KEY="$(create_api_key lance_admin -h "$F70_SOCK" -p "$F70_PPORT" -U postgres -d "$F70_DB")"
# chosen just before the standby binds it, so that little can take it meanwhile
F70_SPORT="$(find_free_port $((F70_PPORT + 1)))"
repl_standby "$F70_SOCK" "$F70_PPORT" "$F70_STANDBY" "$F70_SPORT" "$F70_SOCK" serving_s70
repl_wait_streaming "$F70_SOCK" "$F70_PPORT" serving_s70
repl_set_sync "$F70_SOCK" "$F70_PPORT" serving_s70
repl_wait_streaming "$F70_SOCK" "$F70_PPORT" serving_s70 sync

gw_up failover \
	LN_DATABASE_URL="postgresql://lance_gateway@127.0.0.1:$F70_PPORT,127.0.0.1:$F70_SPORT/$F70_DB?target_session_attrs=read-write" \
	LN_GATEWAY_CONNECTIONS=4 || return 0
F70_GW="$GW" F70_GW_PREFIX="$GW_PREFIX"
# a second one, whose requests may take 2 s
gw_up failover_timeout \
	LN_DATABASE_URL="postgresql://lance_gateway@127.0.0.1:$F70_PPORT,127.0.0.1:$F70_SPORT/$F70_DB?target_session_attrs=read-write" \
	LN_GATEWAY_CONNECTIONS=2 LN_REQUEST_TIMEOUT=2 || return 0
F70_GW_TIMEOUT="$GW" F70_GW_TIMEOUT_PREFIX="$GW_PREFIX"
GW="$F70_GW" GW_PREFIX="$F70_GW_PREFIX"

# f70_create <name> <log>: create namespace f$<name> through the gateway and
# append "<name> <status>" to <log>.
f70_create() {
	local status
	status="$(curl -sS --max-time 60 -o /dev/null -w '%{http_code}' -X POST -H "x-api-key: $F70_KEY" \
		-H 'content-type: application/json' --data-binary '{}' "$GW/v1/namespace/f%24$1/create" 2>/dev/null)" ||
		status=000
	printf '%s %s\n' "$1" "$status" >>"$2"
}

F70_LOG="$WORK/failover70.log"
: >"$F70_LOG"
for i in $(seq 10); do f70_create "a$i" "$F70_LOG"; done
check "10 writes through the gateway before the failover answer 200" 10 "$(grep -c ' 200$' "$F70_LOG")"

# The standby stops receiving WAL (no primary_conninfo): a write in flight
# must now wait for it (SyncRep), unacknowledged.
f70s -d postgres >/dev/null <<'SQL'
ALTER SYSTEM SET primary_conninfo = '';
SELECT pg_catalog.pg_reload_conf();
SQL
wait_for 300 answers 0 repl_psql "$F70_SOCK" "$F70_PPORT" -d postgres -c "SELECT count(*) FROM pg_stat_replication" ||
	fail "the standby stops streaming when its primary_conninfo is emptied"
# Past LN_REQUEST_TIMEOUT a commit still waiting for the standby is no
# acknowledgement: 503 (code 17, outcome unknown), never 200.
GW="$F70_GW_TIMEOUT" f70_create t1 "$F70_LOG"
check "past LN_REQUEST_TIMEOUT (2 s), a write waiting for the synchronous standby answers 503" "t1 503" \
	"$(grep '^t1 ' "$F70_LOG")"
f70_create w1 "$F70_LOG" &
BACKGROUND+=($!)
# t1's commit waits on in the server (SyncRep), and w1 waits too: for the
# standby, or for the lock t1's namespace holds on their parent until t1
# ends
F70_WAITING="SELECT count(*) FROM pg_stat_activity WHERE usename = 'lance_gateway'
	AND (wait_event = 'SyncRep' OR wait_event_type = 'Lock')"
if wait_for 100 answers 2 f70p -c "$F70_WAITING"; then
	pass "with the synchronous standby away, writes wait (SyncRep), unacknowledged"
else
	fail "with the synchronous standby away, writes wait (SyncRep), unacknowledged" \
		"waiting: $(f70p -c "$F70_WAITING"); answered: $(grep '^[tw]' "$F70_LOG")"
fi

say "failover: stopping the primary (immediate), promoting the standby"
repl_stop "$F70_PRIMARY" immediate
repl_promote "$F70_STANDBY"
F70_START=$SECONDS
f70_ok=0
# 40 tries, 0.5 s apart: well within 20 s when each answers at once
for i in $(seq 40); do
	f70_create "b$i" "$F70_LOG"
	if [[ "$(tail -n 1 "$F70_LOG")" == "b$i 200" ]]; then
		f70_ok=1
		break
	fi
	sleep 0.5
done
F70_SECONDS=$((SECONDS - F70_START))
if ((f70_ok && F70_SECONDS <= 20)); then
	pass "after the promotion, a write through the same gateway succeeds (try $i, ${F70_SECONDS} s)"
else
	fail "after the promotion, a write through the same gateway succeeds within 20 s" \
		"$(tail -n 3 "$F70_LOG" | tr '\n' ' ') after ${F70_SECONDS} s; $(tail -n 3 "$GW_PREFIX/error.log" | cut -c1-300)"
fi
wait_for 300 answers 1 grep -c "^w" "$F70_LOG" || fail "the write in flight at the failover is answered"

# Every acknowledged write is on the promoted server.
mapfile -t f70_acked < <(awk '$2 == 200 { print $1 }' "$F70_LOG" | sort)
mapfile -t f70_present < <(f70s -c "SELECT c.name FROM lance_catalog.object c JOIN lance_catalog.object p ON p.id = c.parent_id
	WHERE p.name = 'f' AND p.parent_id = 0" | sort)
f70_lost=()
for name in "${f70_acked[@]}"; do
	[[ " ${f70_present[*]} " == *" $name "* ]] || f70_lost+=("$name")
done
if ((${#f70_acked[@]} >= 11 && ${#f70_lost[@]} == 0)); then
	pass "every write acknowledged (${#f70_acked[@]}) is on the promoted server"
else
	fail "every write acknowledged (${#f70_acked[@]}) is on the promoted server" \
		"lost: ${f70_lost[*]:-none}" "answers: $(tr '\n' ' ' <"$F70_LOG")"
fi
gw_down
stop_gateway "$F70_GW_TIMEOUT_PREFIX" >/dev/null 2>&1 || true
repl_cleanup
