\set ECHO none
--
-- pg_temp.show(j): a response with nothing in it that changes from run to
-- run, for the regression tests that print responses (\i from the
-- repository root, where pg_regress runs).  It replaces
--   timestamp_millis (ms), createAt (s), createdAt/updatedAt (RFC 3339)
--     with "recent" when they are within an hour of now; a timestamp_millis
--     that is not becomes "IMPLAUSIBLE ...", the others stay as they are,
--     so that a wrong one shows as a difference;
--   transaction_id with "uuid" and a branch identifier's 32-hex-digit ids
--     with "hex32", after checking their form.
-- Echo is off while it loads so that each expected file does not repeat it.
--
CREATE FUNCTION pg_temp.show(j jsonb) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
    k text;
    v jsonb;
    result jsonb;
    now_ms numeric := extract(epoch FROM clock_timestamp()) * 1000;
BEGIN
    CASE jsonb_typeof(j)
    WHEN 'object' THEN
        result := '{}';
        FOR k, v IN SELECT * FROM jsonb_each(j) LOOP
            IF k = 'timestamp_millis' THEN
                IF jsonb_typeof(v) = 'number'
                   AND v::numeric = trunc(v::numeric)
                   AND abs(v::numeric - now_ms) < 3600 * 1000 THEN
                    v := '"recent"';
                ELSE
                    v := to_jsonb('IMPLAUSIBLE ' || v::text);
                END IF;
            ELSIF k = 'createAt' THEN
                -- Unix seconds
                IF jsonb_typeof(v) = 'number'
                   AND v::numeric = trunc(v::numeric)
                   AND abs(v::numeric * 1000 - now_ms) < 3600 * 1000 THEN
                    v := '"recent"';
                END IF;
            ELSIF k IN ('createdAt', 'updatedAt') THEN
                -- RFC 3339 in UTC, as Lance writes it
                IF v #>> '{}' ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z$'
                   AND abs(extract(epoch FROM (v #>> '{}')::timestamptz) * 1000 - now_ms) < 3600 * 1000 THEN
                    v := '"recent"';
                END IF;
            ELSIF k = 'transaction_id' THEN
                -- a fresh UUID per call: shown as "uuid" once its form is checked
                IF v::text ~ '^"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"$' THEN
                    v := '"uuid"';
                ELSE
                    v := to_jsonb('IMPLAUSIBLE ' || v::text);
                END IF;
            ELSE
                v := pg_temp.show(v);
            END IF;
            result := result || jsonb_build_object(k, v);
        END LOOP;
        RETURN result;
    WHEN 'array' THEN
        SELECT coalesce(jsonb_agg(pg_temp.show(e) ORDER BY n), '[]')
          INTO result
          FROM jsonb_array_elements(j) WITH ORDINALITY AS a(e, n);
        RETURN result;
    WHEN 'string' THEN
        -- a branch identifier's random id
        IF j #>> '{}' ~ '^[0-9a-f]{32}$' THEN
            RETURN '"hex32"';
        END IF;
        RETURN j;
    ELSE
        RETURN j;
    END CASE;
END
$$;
\set ECHO all
