-- Helpers of the fuzz driver (test/fuzz/fuzz.mjs), in a schema of their own
-- in the fuzz database.  They take every argument as bytes, so that the driver
-- can send any byte sequence, and turn what PostgreSQL's own input functions
-- refuse (invalid UTF-8, a NUL, JSON that jsonb does not accept, a number out
-- of range for bigint) into SQLSTATE FZ001 before the extension is called:
-- such a request never reached the extension and says nothing about it.
-- Everything else the extension raises passes through untouched, with its
-- own SQLSTATE, message and DETAIL.  Answers come back as the raw bytes of
-- their text form (textsend), so that the driver can check they are UTF-8.
-- xid is the request's transaction id when it wrote something: the driver
-- then checks the rows that transaction wrote.

CREATE SCHEMA fuzz;

CREATE FUNCTION fuzz.refuse(what text, err text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'FZ001', MESSAGE = what || ': ' || err;
END
$$;

-- lance_<op>(request jsonb)
CREATE FUNCTION fuzz.call(fn text, req bytea, OUT answer bytea, OUT xid text)
LANGUAGE plpgsql AS $$
DECLARE
    j jsonb;
    r jsonb;
BEGIN
    IF req IS NOT NULL THEN
        BEGIN
            j := convert_from(req, 'UTF8')::jsonb;
        EXCEPTION WHEN others THEN
            PERFORM fuzz.refuse('request', SQLERRM);
        END;
    END IF;
    EXECUTE format('SELECT %I($1)', fn) INTO r USING j;
    answer := textsend(r::text);
    xid := txid_current_if_assigned()::text;
END
$$;

-- lance_rest(method, path, query, body, headers)
CREATE FUNCTION fuzz.rest(m bytea, p bytea, q bytea, b bytea, h bytea,
                          OUT status integer, OUT hdrs bytea, OUT body bytea, OUT xid text)
LANGUAGE plpgsql AS $$
DECLARE
    tm text; tp text; tq text; tb text;
    th jsonb;
    r record;
BEGIN
    BEGIN
        tm := convert_from(m, 'UTF8');
        tp := convert_from(p, 'UTF8');
        tq := convert_from(q, 'UTF8');
        tb := convert_from(b, 'UTF8');
        th := convert_from(h, 'UTF8')::jsonb;
    EXCEPTION WHEN others THEN
        PERFORM fuzz.refuse('argument', SQLERRM);
    END;
    SELECT * INTO r FROM lance_rest(tm, tp, tq, tb, th);
    status := r.status;
    hdrs := textsend(r.response_headers::text);
    body := textsend(r.response_body);
    xid := txid_current_if_assigned()::text;
END
$$;

-- lance_changes(after, max_entries) with 0, 1 or 2 arguments
CREATE FUNCTION fuzz.changes(nargs integer, a bytea, m bytea, OUT answer bytea, OUT xid text)
LANGUAGE plpgsql AS $$
DECLARE
    after bigint;
    mx integer;
    n bigint;
BEGIN
    BEGIN
        after := convert_from(a, 'UTF8')::bigint;
        mx := convert_from(m, 'UTF8')::integer;
    EXCEPTION WHEN others THEN
        PERFORM fuzz.refuse('argument', SQLERRM);
    END;
    IF nargs = 0 THEN
        SELECT count(*) INTO n FROM lance_changes();
    ELSIF nargs = 1 THEN
        SELECT count(*) INTO n FROM lance_changes(after);
    ELSE
        SELECT count(*) INTO n FROM lance_changes(after, mx);
    END IF;
    answer := textsend(json_build_object('entries', n)::text);
    xid := txid_current_if_assigned()::text;
END
$$;

-- lance_create_api_key(role name) and lance_revoke_api_key(text): the answer
-- says whether a well-formed key was made (never the key), or one revoked.
CREATE FUNCTION fuzz.keyfn(fn text, a bytea, OUT answer bytea, OUT xid text)
LANGUAGE plpgsql AS $$
DECLARE
    ta text;
BEGIN
    BEGIN
        ta := convert_from(a, 'UTF8');
    EXCEPTION WHEN others THEN
        PERFORM fuzz.refuse('argument', SQLERRM);
    END;
    IF fn = 'lance_create_api_key' THEN
        answer := textsend(to_json(lance_create_api_key(ta::name) ~ '^lnk_[0-9a-f]{12}_[0-9a-f]{64}$')::text);
    ELSE
        answer := textsend(to_json(lance_revoke_api_key(ta))::text);
    END IF;
    xid := txid_current_if_assigned()::text;
END
$$;

-- The two C functions in lance_catalog that SQL can call.
CREATE FUNCTION fuzz.internal(fn text, a bytea, b bytea, OUT answer bytea, OUT xid text)
LANGUAGE plpgsql AS $$
DECLARE
    ta text;
    lo bigint;
    hi bigint;
BEGIN
    IF fn = 'local_path' THEN
        BEGIN
            ta := convert_from(a, 'UTF8');
        EXCEPTION WHEN others THEN
            PERFORM fuzz.refuse('argument', SQLERRM);
        END;
        answer := textsend(to_json(lance_catalog.local_path(ta))::text);
    ELSIF fn = 'reconcile_versions' THEN
        BEGIN
            lo := convert_from(a, 'UTF8')::bigint;
            hi := convert_from(b, 'UTF8')::integer;
        EXCEPTION WHEN others THEN
            PERFORM fuzz.refuse('argument', SQLERRM);
        END;
        answer := textsend(lance_reconcile_versions(lo, hi::integer)::text);
    ELSE
        BEGIN
            lo := convert_from(a, 'UTF8')::bigint;
            hi := convert_from(b, 'UTF8')::bigint;
        EXCEPTION WHEN others THEN
            PERFORM fuzz.refuse('argument', SQLERRM);
        END;
        answer := textsend(to_json(lance_catalog.change_in_flight(lo, hi))::text);
    END IF;
    xid := txid_current_if_assigned()::text;
END
$$;

-- What a rejected request must leave as it was: every row of the catalog's
-- tables (not the sequences: nextval is never rolled back).
CREATE FUNCTION fuzz.catalog_digest() RETURNS text LANGUAGE sql STABLE AS $$
    SELECT concat_ws(' ',
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(o::text, 0)), 0) FROM lance_catalog.object o),
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(v::text, 0)), 0) FROM lance_catalog.version v),
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(c::text, 0)), 0) FROM lance_catalog.change c),
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(g::text, 0)), 0) FROM lance_catalog.grant g),
        (SELECT count(*) || ':' || coalesce(sum(hashtextextended(k::text, 0)), 0) FROM lance_catalog.api_key k))
$$;

-- The values one transaction wrote, as bytes (json: a jsonb column): checked
-- to be UTF-8, and jsonb values to parse with no NUL and no lone surrogate.
CREATE FUNCTION fuzz.written_by(x text) RETURNS TABLE (col text, json boolean, val bytea)
LANGUAGE sql STABLE AS $$
    SELECT c, j, textsend(v)
      FROM lance_catalog.object o,
           LATERAL (VALUES ('object.name', false, o.name), ('object.location', false, o.location),
                           ('object.properties', true, o.properties::text)) AS t(c, j, v)
     WHERE o.xmin::text = x AND v IS NOT NULL
    UNION ALL
    SELECT c, j, textsend(v)
      FROM lance_catalog.version r,
           LATERAL (VALUES ('version.branch', false, r.branch), ('version.manifest_path', false, r.manifest_path),
                           ('version.e_tag', false, r.e_tag), ('version.naming_scheme', false, r.naming_scheme),
                           ('version.metadata', true, r.metadata::text)) AS t(c, j, v)
     WHERE r.xmin::text = x AND v IS NOT NULL
    UNION ALL
    SELECT c, j, textsend(v)
      FROM lance_catalog.change e,
           LATERAL (VALUES ('change.operation', false, e.operation),
                           ('change.objects', true, to_jsonb(e.objects)::text),
                           ('change.namespaces', true, to_jsonb(e.namespaces)::text),
                           ('change.context', true, e.context::text), ('change.headers', true, e.headers::text),
                           ('change.status', false, e.status),
                           ('change.properties', true, e.properties::text),
                           ('change.drop_location', false, e.drop_location)) AS t(c, j, v)
     WHERE e.xmin::text = x AND v IS NOT NULL
$$;
