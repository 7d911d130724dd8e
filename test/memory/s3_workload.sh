#!/usr/bin/env bash
# The S3 paths of the catalog, for test/memory/run.sh to run against its
# server under valgrind: versions copied and undone (rollback, savepoint,
# batch), tags written at commit and discarded, a missing staging object, a
# store that is down and one that stalls (cancelled by statement_timeout),
# the drop of a table's objects (keys with XML special characters).  Prints
# one line per step, without anything random, for run.sh to compare with
# s3_workload.expected.
#
#   PGHOST=... PGPORT=... LN_S3_ENDPOINT=http://127.0.0.1:9400 \
#   LN_S3_CONTROL=http://127.0.0.1:9401 s3_workload.sh
set -uo pipefail
: "${LN_S3_ENDPOINT:?the S3 test server (test/node/s3server.mjs)}" "${LN_S3_CONTROL:?its control URL}"
DB=ln_memory_s3
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

S3=(curl -s --aws-sigv4 aws:amz:us-east-1:s3 --user S3RVER:S3RVER)
put() { # key content
	printf '%s' "$2" >"$WORK/obj"
	"${S3[@]}" -H "x-amz-content-sha256: $(sha256sum "$WORK/obj" | cut -d' ' -f1)" -T "$WORK/obj" \
		"$LN_S3_ENDPOINT/lake/$1" -o /dev/null -w 'put %{http_code}\n'
}
keys() { # prefix: how many keys there are below it
	local xml
	xml="$("${S3[@]}" -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
		"$LN_S3_ENDPOINT/lake?list-type=2&prefix=$(node -e 'process.stdout.write(encodeURIComponent(process.argv[1]))' "$1")")"
	printf 'keys %s\n' "$(sed -n 's/.*<KeyCount>\([0-9]*\)<.*/\1/p' <<<"$xml")"
}
mode() { curl -s -o /dev/null "$LN_S3_CONTROL/mode/$1"; }
# SQL: a result per line, an error as its Lance code
Q() { psql -X -q -At -d "$DB" "$@" 2>&1 | sed -e 's/^ERROR: .*//' -e 's/^DETAIL:  .*"code":\([0-9]*\).*/code \1/' | grep -v '^$'; }

psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
Q -c "CREATE EXTENSION lance_namespace" \
	-c "SELECT lance_set_storage(jsonb_build_object('location', 's3://lake/memory', 'options',
	        jsonb_build_object('aws_endpoint', '$LN_S3_ENDPOINT', 'aws_access_key_id', 'S3RVER',
	                           'aws_secret_access_key', 'S3RVER', 'aws_session_token', 'token',
	                           'allow_http', 'true'))) IS NOT NULL" \
	-c "ALTER DATABASE $DB SET lance_namespace.root = 's3://lake/memory'"
Q -c "SELECT lance_create_namespace('{\"id\": [\"n\"]}') IS NOT NULL"
A="$(Q -c "SELECT lance_declare_table('{\"id\": [\"n\", \"a\"]}') ->> 'location'")"
B="$(Q -c "SELECT lance_declare_table('{\"id\": [\"n\", \"b\"]}') ->> 'location'")"
A="${A#s3://lake/}" B="${B#s3://lake/}"
put "$A/_versions/s1" m1
put "$A/_versions/s2" m2
put "$B/_versions/s1" m1b
version() { printf '{"id": ["n", "%s"], "version": %s, "manifest_path": "%s"%s}' "$@"; }
Q -c "SELECT lance_create_table_version('$(version a 1 "$A/_versions/s1" "")') IS NOT NULL"
Q -c "BEGIN" -c "SAVEPOINT s" \
	-c "SELECT lance_create_table_version('$(version a 2 "$A/_versions/s2" ', "manifest_size": 2')') IS NOT NULL" \
	-c "ROLLBACK TO s" \
	-c "SELECT lance_batch_create_table_versions('{\"entries\": [$(version a 2 "$A/_versions/s2" ""), $(version b 1 "$B/_versions/s1" "")]}') IS NOT NULL" \
	-c "COMMIT"
Q -c "SELECT lance_create_table_tag('{\"id\": [\"n\", \"a\"], \"tag\": \"t1\", \"version\": 1}') IS NOT NULL" \
	-c "SELECT lance_list_table_tags('{\"id\": [\"n\", \"a\"]}') -> 'tags' -> 't1' -> 'version'"
Q -c "BEGIN" -c "SELECT lance_update_table_tag('{\"id\": [\"n\", \"a\"], \"tag\": \"t1\", \"version\": 2}') IS NOT NULL" \
	-c "SELECT lance_get_table_tag_version('{\"id\": [\"n\", \"a\"], \"tag\": \"t1\"}') -> 'version'" -c "ROLLBACK"
Q -c "SELECT lance_delete_table_tag('{\"id\": [\"n\", \"a\"], \"tag\": \"t1\"}') IS NOT NULL"
Q -c "SELECT lance_create_table_version('$(version a 3 "$A/_versions/missing" "")')"
mode down
Q -c "SET lance_namespace.storage_timeout = '5s'" -c "SELECT lance_create_table_version('$(version a 3 "$A/_versions/s2" "")')"
mode stall
Q -c "SET statement_timeout = '5s'" -c "SELECT lance_create_table_version('$(version a 3 "$A/_versions/s2" "")')"
mode up
Q -c "SELECT lance_describe_table('{\"id\": [\"n\", \"a\"]}') -> 'managed_versioning'" \
	-c "SELECT lance_list_storage() -> 'storage' -> 0 -> 'options' ->> 'aws_session_token'"
put "$B/data/f1%26%3C" x
put "$B/data/f2%22%27" y
Q -c "SELECT lance_drop_table('{\"id\": [\"n\", \"b\"]}') IS NOT NULL" -c "SELECT lance_process_drops()"
keys "$B/"
Q -c "SELECT lance_drop_namespace('{\"id\": [\"n\"], \"behavior\": \"Cascade\"}') IS NOT NULL" \
	-c "SELECT lance_remove_storage('{\"location\": \"s3://lake/memory\"}') ->> 'location'"
psql -X -q -d postgres -c "DROP DATABASE $DB"
