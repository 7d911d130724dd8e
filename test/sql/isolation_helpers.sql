--
-- Helpers the isolation specs share, loaded once into the database they run
-- in (see the Makefile's isolation-database target).
--

-- A response without the members that change from run to run
-- (timestamp_millis, transaction_id, createAt, createdAt, updatedAt, a
-- branch identifier); everything else of the response is kept.
CREATE FUNCTION lance_untimed(j jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
BEGIN
    IF jsonb_typeof(j) = 'object' THEN
        RETURN (SELECT coalesce(jsonb_object_agg(k, lance_untimed(v)), jsonb_build_object())
                  FROM jsonb_each(j) AS e(k, v)
                 WHERE k NOT IN ('timestamp_millis', 'transaction_id', 'createAt', 'createdAt',
                                 'updatedAt', 'identifier'));
    ELSIF jsonb_typeof(j) = 'array' THEN
        RETURN (SELECT coalesce(jsonb_agg(lance_untimed(v) ORDER BY n), jsonb_build_array())
                  FROM jsonb_array_elements(j) WITH ORDINALITY AS a(v, n));
    END IF;
    RETURN j;
END
$$;

-- Runs one operation and answers its response (untimed), or its SQLSTATE
-- and message, so that the expected output shows the Lance error code.
CREATE FUNCTION lance_try(op text, request jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    response jsonb;
BEGIN
    EXECUTE format('SELECT %I($1)', op) INTO response USING request;
    RETURN lance_untimed(response)::text;
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

-- A real Lance manifest (test/fixtures/lance.manifest, written by the
-- official client) as one line of base64, for specs that fork branches:
-- COPY (SELECT lance_test_manifest()) TO PROGRAM 'base64 -d > <file>'.
\set manifest `base64 -w0 test/fixtures/lance.manifest`
CREATE TABLE lance_test_fixture (manifest text NOT NULL);
INSERT INTO lance_test_fixture VALUES (:'manifest');
CREATE FUNCTION lance_test_manifest() RETURNS text
LANGUAGE sql STABLE AS $$ SELECT manifest FROM lance_test_fixture $$;
