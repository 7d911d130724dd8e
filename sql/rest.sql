--
-- lance_rest(): the REST binding as one function, what a gateway calls.
--
SET lance_namespace.local_roots = '';
-- Requests carry this session's own key where it matters, and act as its
-- role without one (access.sql tests the keys themselves).
SELECT lance_create_api_key(current_user) AS key \gset
SELECT set_config('lance_namespace.anonymous_role', current_user, false) AS anonymous \gset

-- A namespace through the path's id; the answer is the operation's response.
SELECT status, response_headers, response_body::jsonb - 'transaction_id' AS body
  FROM lance_rest('POST', '/v1/namespace/rs/create', 'delimiter=%24', '{"id": ["rs"]}', format('{"x-api-key": "%s"}', :'key')::jsonb);
-- The bare delimiter is the root; listings are GETs with the query merged in.
SELECT status, response_body::jsonb -> 'namespaces' ? 'rs' AS lists_rs
  FROM lance_rest('GET', '/v1/namespace/%24/list', 'delimiter=%24&limit=1000', NULL, NULL);
-- '+' in a path id is a space (the official client sends a '+' as %2B).
SELECT status, response_body::jsonb - 'transaction_id' AS body
  FROM lance_rest('POST', '/v1/namespace/rs%24a+b/create', 'delimiter=%24', '{"id": ["rs", "a b"]}', NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/rs%24a+b/exists', NULL, NULL, NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/rs%24a%2Bb/exists', NULL, NULL, NULL);
-- Another delimiter, a trailing slash, a body of null.
SELECT status, response_body::jsonb - 'transaction_id' AS body
  FROM lance_rest('POST', '/v1/table/rs.t/register/', 'delimiter=.', '{"location": "s3://bucket/rs/t"}', NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/table/rs%24t/version/list', 'delimiter=%24&descending=true&limit=1', 'null', NULL);
-- Exists: 204 without a body; missing: 404 with the code.
SELECT status, response_headers, response_body FROM lance_rest('POST', '/v1/table/rs%24t/exists', NULL, NULL, NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/table/rs%24nope/exists', NULL, NULL, NULL);
-- Query parameters of the wrong type, a body that is not JSON or not an object, an id that differs.
SELECT status, response_body FROM lance_rest('POST', '/v1/table/rs%24t/describe', 'with_table_uri=maybe', NULL, NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/table/rs%24t/describe', NULL, '{bad', NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/table/rs%24t/describe', NULL, '[1]', NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/table/rs%24t/describe', NULL, '{"id": ["rs", "u"]}', NULL);
-- AlterTransaction: a committed entry's status is final, 409 with code 19
-- naming it; a property beside it is set
SELECT transaction_id AS rs_tx FROM lance_catalog.change WHERE 'rs$t' = ANY (objects) ORDER BY seq LIMIT 1 \gset
SELECT status, replace(response_body, :'rs_tx', '<tx>') AS body
  FROM lance_rest('POST', '/v1/transaction/' || :'rs_tx' || '/alter', NULL,
                  '{"actions": [{"setStatusAction": {"status": "Canceled"}}]}', NULL);
SELECT status, response_body
  FROM lance_rest('POST', '/v1/transaction/' || :'rs_tx' || '/alter', NULL,
                  '{"actions": [{"setPropertyAction": {"key": "seen", "value": "yes"}}]}', NULL);
-- Statuses by code: 409 for a duplicate, 404 for missing, 406 for the data plane, 404 for no route.
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/rs/create', NULL, NULL, NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/table/rs%24t/insert', NULL, NULL, NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/table/rs%24t/restore', NULL, '{"version": 1}', NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/nothing/here', NULL, NULL, NULL);
-- Only the three listings answer GET: a change is never made by a GET (405).
SELECT status, response_body FROM lance_rest('GET', '/v1/table/rs%24t/drop', NULL, NULL, NULL);
SELECT status, response_body FROM lance_rest('DELETE', '/v1/table', NULL, NULL, NULL);
SELECT status FROM lance_rest('GET', '/v1/table', 'delimiter=%24', NULL, NULL);
SELECT status FROM lance_rest('POST', '/v1/namespace/rs/table/list', NULL, NULL, NULL);
-- The table survived the refused GET.
SELECT status FROM lance_rest('POST', '/v1/table/rs%24t/exists', NULL, NULL, NULL);
-- A failed request changes nothing, even in autocommit: a batch whose second operation fails.
SELECT status, response_body FROM lance_rest('POST', '/v1/table/batch-commit', NULL,
  '{"operations": [{"declare_table": {"id": ["rs", "new"], "location": "s3://bucket/rs/new"}}, {"deregister_table": {"id": ["rs", "missing"]}}]}', NULL);
SELECT status, response_body FROM lance_rest('POST', '/v1/table/rs%24new/exists', NULL, NULL, NULL);
-- Headers: x-api-key and Authorization fill identity; the headers of
-- lance_namespace.logged_headers become the entry's headers, by lower-case
-- name, and no other header reaches the commit log.
SELECT status FROM lance_rest('POST', '/v1/namespace/rs%24h/create', NULL, NULL, format('{"X-Trace-Id": "t-1", "Authorization": "Bearer %s"}', :'key')::jsonb);
SELECT operation, headers, context FROM lance_catalog.change WHERE objects = '{rs$h}';
SELECT status FROM lance_rest('POST', '/v1/namespace/rs%24h2/create', NULL, NULL,
    format('{"X-Request-Id": "r-2", "Cookie": "session=s", "X-Api-Key": "%s", "X-Custom": "c", "Proxy-Authorization": "Basic x"}', :'key')::jsonb);
SELECT headers, context FROM lance_catalog.change WHERE objects = '{rs$h2}';
-- An administrator may log other headers, never credentials (any name
-- holding authoriz, cookie, credential, key, passw, secret, session,
-- signature or token).
SET lance_namespace.logged_headers = 'x-custom, cookie, authorization, x-api-key, x-session-id, x-auth-token';
SELECT status FROM lance_rest('POST', '/v1/namespace/rs%24h3/create', NULL, NULL,
    format('{"X-Request-Id": "r-3", "Cookie": "session=s", "X-Api-Key": "%s", "X-Custom": "c", "Authorization": "Bearer %s", "X-Session-Id": "s", "X-Auth-Token": "t"}', :'key', :'key')::jsonb);
SELECT headers, context FROM lance_catalog.change WHERE objects = '{rs$h3}';
RESET lance_namespace.logged_headers;
-- key_id: the id of the key the catalog authenticated the request with, what
-- the gateway logs.  A request refused after that (409 here) still has it.
SELECT status, key_id = left(:'key', 16) AS authenticated
  FROM lance_rest('GET', '/v1/namespace/%24/list', NULL, NULL, format('{"x-api-key": "%s"}', :'key')::jsonb);
SELECT status, key_id = left(:'key', 16) AS authenticated
  FROM lance_rest('POST', '/v1/namespace/rs%24h/create', NULL, NULL, format('{"Authorization": "Bearer %s"}', :'key')::jsonb);
-- NULL without a key (the anonymous role), with a key the catalog does not
-- know, however much of a real one it copies (its id: "lnk_<id>_junk", or
-- a key of the right form), and where no route was found, before any key
-- was checked.
SELECT status, key_id IS NULL AS no_key_id FROM lance_rest('GET', '/v1/namespace/%24/list', NULL, NULL, NULL);
SELECT status, key_id IS NULL AS no_key_id FROM lance_rest('GET', '/v1/namespace/%24/list', NULL, NULL,
    format('{"x-api-key": "%s_junk"}', left(:'key', 16))::jsonb);
SELECT status, key_id IS NULL AS no_key_id FROM lance_rest('GET', '/v1/namespace/%24/list', NULL, NULL,
    format('{"authorization": "Bearer %s_%s"}', left(:'key', 16), repeat('0', 64))::jsonb);
SELECT status, key_id IS NULL AS no_key_id FROM lance_rest('POST', '/v1/nothing/here', NULL, NULL, format('{"x-api-key": "%s"}', :'key')::jsonb);
-- The body's context is the caller's word: a header it claims stays in
-- context, apart from the headers the request carried, and its
-- credential-like entries are dropped.
SELECT status FROM lance_rest('POST', '/v1/namespace/rs%24h4/create', NULL,
    '{"context": {"header.x-request-id": "forged", "header.x-trace-id": "forged-too", "header.authorization": "Bearer abc", "job": "nightly"}}',
    format('{"X-Request-Id": "r-4", "X-Api-Key": "%s"}', :'key')::jsonb);
SELECT headers, context FROM lance_catalog.change WHERE objects = '{rs$h4}';
-- The commit log names the key a change was requested with, by its id
-- (never the key itself), and lance_changes() shows it; a request without a
-- key (the anonymous role) and a call from SQL leave it NULL.
SELECT objects, key_id = left(:'key', 16) AS by_key, key_id IS NULL AS no_key,
       strpos(c::text, :'key') = 0 AS key_not_logged
  FROM lance_catalog.change c WHERE objects IN ('{rs$h4}', '{rs$a b}') ORDER BY seq;
SELECT lance_create_namespace('{"id": ["rs", "from_sql"]}') IS NOT NULL AS made;
SELECT c.objects, c.key_id IS NULL AS no_key
  FROM lance_changes(0, 100000) c WHERE c.objects IN ('{rs$h4}', '{rs$from_sql}') ORDER BY c.seq;
SELECT c.key_id = left(:'key', 16) AS by_key
  FROM lance_changes(0, 100000) c WHERE c.objects = '{rs$h4}';
-- A context or headers past the bounds (64 members, 16384 bytes of keys and
-- values): 400, code 13, and no entry.
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/rs%24h5/create', NULL,
    jsonb_build_object('context', jsonb_build_object('big', repeat('x', 20000)))::text,
    format('{"X-Api-Key": "%s"}', :'key')::jsonb);
SELECT status, response_body FROM lance_rest('POST', '/v1/namespace/rs%24h5/create', NULL, NULL,
    jsonb_build_object('x-api-key', :'key', 'x-request-id', repeat('x', 20000)));
SELECT count(*) AS entries FROM lance_catalog.change WHERE objects = '{rs$h5}';

-- GET /v1/changes: the change feed for a caller with only a key.  It answers
-- what lance_changes() answers the key's role, as JSON: the entries (every
-- column) and next_after, what to ask after next.
SELECT max(seq) AS feed_start FROM lance_catalog.change \gset
SELECT lance_create_namespace('{"id": ["rs", "feed1"]}') IS NOT NULL AS made;
SELECT lance_create_namespace('{"id": ["rs_other"]}') IS NOT NULL AS made;
SELECT lance_create_namespace('{"id": ["rs", "feed2"]}') IS NOT NULL AS made;
SELECT status, response_headers, (response_body::jsonb -> 'changes') = (
           SELECT jsonb_agg(to_jsonb(c) ORDER BY c.seq) FROM lance_changes(:feed_start, 2) c) AS as_lance_changes,
       jsonb_path_query_array(response_body::jsonb, '$.changes[*].objects[0]') AS objects,
       (response_body::jsonb ->> 'next_after')::bigint = :feed_start + 2 AS next_after
  FROM lance_rest('GET', '/v1/changes', format('after=%s&limit=2', :feed_start), NULL,
                  format('{"x-api-key": "%s"}', :'key')::jsonb);
-- a role that may read one namespace sees its entries alone, as through SQL
CREATE ROLE regress_rest_feed;
SELECT lance_grant('{"id": ["rs", "feed2"], "role": "regress_rest_feed", "privilege": "read"}') IS NOT NULL AS granted;
SELECT lance_create_api_key('regress_rest_feed') AS feed_key \gset
SELECT status, jsonb_path_query_array(response_body::jsonb, '$.changes[*].objects[0]') AS objects,
       jsonb_path_query_array(response_body::jsonb, '$.changes[*].key_id') AS key_ids
  FROM lance_rest('GET', '/v1/changes?after=' || :feed_start, NULL, NULL,
                  format('{"x-api-key": "%s"}', :'feed_key')::jsonb) \gset feed_
SELECT :feed_status AS status, :'feed_objects' AS objects;
SET ROLE regress_rest_feed;
SELECT jsonb_agg(c.objects[1] ORDER BY c.seq) FILTER (WHERE c.operation IS NOT NULL) AS through_sql
  FROM lance_changes(:feed_start, 100) c;
RESET ROLE;
-- entries it may not see, last: an empty page that still moves next_after on
SELECT max(seq) AS feed_mid FROM lance_catalog.change \gset
SELECT lance_create_namespace('{"id": ["rs_tail"]}') IS NOT NULL AS made;
SELECT status, response_body::jsonb -> 'changes' AS changes,
       (response_body::jsonb ->> 'next_after')::bigint = :feed_mid + 1 AS moved_on
  FROM lance_rest('GET', '/v1/changes', format('after=%s&limit=1', :feed_mid), NULL,
                  format('{"x-api-key": "%s"}', :'feed_key')::jsonb);
-- after the last entry: nothing, and next_after stays
SELECT status, response_body::jsonb AS body
  FROM lance_rest('GET', '/v1/changes', 'after=9223372036854775807', NULL,
                  format('{"x-api-key": "%s"}', :'feed_key')::jsonb);
-- GET alone; after from 0 on, limit from 1 to 1000: else 400, code 13
SELECT status, response_body FROM lance_rest('POST', '/v1/changes', NULL, NULL, format('{"x-api-key": "%s"}', :'feed_key')::jsonb);
SELECT status, response_body FROM lance_rest('DELETE', '/v1/changes', NULL, NULL, format('{"x-api-key": "%s"}', :'feed_key')::jsonb);
SELECT q, status, response_body::jsonb ->> 'code' AS code
  FROM unnest(ARRAY['after=-1', 'after=x', 'after=', 'after=1e3', 'after=99999999999999999999', 'limit=0',
                    'limit=1001', 'limit=+5', 'limit=5x']) q,
       lance_rest('GET', '/v1/changes', q, NULL, format('{"x-api-key": "%s"}', :'feed_key')::jsonb);
SELECT status, jsonb_array_length(response_body::jsonb -> 'changes') <= 1000 AS bounded
  FROM lance_rest('GET', '/v1/changes', 'limit=1000', NULL, format('{"x-api-key": "%s"}', :'feed_key')::jsonb);
-- a key the catalog does not know: 401
SELECT status, response_body::jsonb ->> 'code' AS code
  FROM lance_rest('GET', '/v1/changes', NULL, NULL, '{"x-api-key": "lnk_000000000000_nope"}');
SELECT lance_revoke_api_key(:'feed_key') AS revoked;
SELECT lance_drop_namespace('{"id": ["rs_other"]}') IS NOT NULL AS dropped;
SELECT lance_drop_namespace('{"id": ["rs_tail"]}') IS NOT NULL AS dropped;
SELECT lance_revoke('{"id": ["rs", "feed2"], "role": "regress_rest_feed", "privilege": "read"}') IS NOT NULL AS revoked;
DROP ROLE regress_rest_feed;
SELECT status FROM lance_rest('POST', '/v1/namespace/rs/drop', NULL, '{"behavior": "Cascade"}', NULL);
RESET lance_namespace.local_roots;

-- This test's key goes with it.
SELECT lance_revoke_api_key(:'key') AS revoked;
