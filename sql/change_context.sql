--
-- change_context: what the commit log keeps of a request's context.  The
-- context a caller sends is its own word: it goes in the entry's context,
-- apart from the headers lance_rest() records (the entry's headers), so a
-- caller cannot pass its entries off as headers the gateway saw.  Neither
-- keeps a credential-like entry, and a context is bounded (64 members, 16384
-- bytes of keys and values; code 13 past either).  The REST side of this is
-- in the rest test.
--
\set VERBOSITY default

LOAD 'lance_namespace';
SET lance_namespace.root = '';
SET lance_namespace.local_roots = '';

CREATE TEMP TABLE start_seq AS
SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS start FROM lance_catalog.change_seq;

CREATE TEMP VIEW log AS
SELECT c.seq - s.start AS n, c.operation, c.objects, c.context, c.headers
  FROM lance_catalog.change c, start_seq s
 WHERE c.seq > s.start;

-- Runs one operation and answers its SQLSTATE and message, or 'ok'.
CREATE FUNCTION pg_temp.try(request jsonb) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM lance_create_namespace(request);
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

-- A context that claims gateway headers and carries credentials: the claims
-- stay the caller's (context, never headers), the credential-like entries
-- go (authorization, cookie, key, token, secret, password, session,
-- signature, credential, in any case and anywhere in the key).
SELECT pg_temp.try('{"id": ["cc_forged"], "context": {
    "request": "r1",
    "header.x-request-id": "forged",
    "header.authorization": "Bearer abc",
    "Header.Cookie": "session=s",
    "x-api-key": "lnk_x",
    "api_key": "k",
    "refresh_token": "t",
    "client-secret": "s",
    "db_password": "p",
    "SessionId": "s",
    "x-amz-signature": "s",
    "aws_credentials": "c"}}');
SELECT n, operation, objects, context, headers FROM log ORDER BY n;

-- At the bounds: 64 members, 16384 bytes of keys and values.
SELECT pg_temp.try(jsonb_build_object('id', ARRAY['cc_64'],
    'context', (SELECT jsonb_object_agg('k' || i, 'v') FROM generate_series(1, 64) i)));
SELECT pg_temp.try(jsonb_build_object('id', ARRAY['cc_16k'],
    'context', jsonb_build_object('big', repeat('x', 16384 - 3))));
SELECT n, objects, (SELECT count(*) FROM jsonb_object_keys(context)) AS members,
       (SELECT sum(length(key) + length(value)) FROM jsonb_each_text(context)) AS bytes
  FROM log WHERE objects IN ('{cc_64}', '{cc_16k}') ORDER BY n;

-- Past them: code 13, with the bound in the message, and no entry.
SELECT pg_temp.try(jsonb_build_object('id', ARRAY['cc_65'],
    'context', (SELECT jsonb_object_agg('k' || i, 'v') FROM generate_series(1, 65) i)));
SELECT pg_temp.try(jsonb_build_object('id', ARRAY['cc_big'],
    'context', jsonb_build_object('big', repeat('x', 16384 - 2))));
-- a context of 7 MB
SELECT pg_temp.try(jsonb_build_object('id', ARRAY['cc_7mb'],
    'context', jsonb_build_object('big', repeat('x', 7 * 1024 * 1024))));
-- counted as sent: credential-like entries count too
SELECT pg_temp.try(jsonb_build_object('id', ARRAY['cc_tokens'],
    'context', (SELECT jsonb_object_agg('token' || i, 'v') FROM generate_series(1, 65) i)));
SELECT count(*) AS entries_past_the_bounds FROM log
 WHERE objects && '{cc_65, cc_big, cc_7mb, cc_tokens}';
-- a read is held to it too, though it records nothing
SELECT lance_describe_namespace(jsonb_build_object('id', ARRAY['cc_64'],
    'context', jsonb_build_object('big', repeat('x', 20000))));

SELECT lance_drop_namespace('{"id": ["cc_forged"]}') IS NOT NULL AS dropped;
SELECT lance_drop_namespace('{"id": ["cc_64"]}') IS NOT NULL AS dropped;
SELECT lance_drop_namespace('{"id": ["cc_16k"]}') IS NOT NULL AS dropped;
