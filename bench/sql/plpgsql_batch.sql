-- bench/sql/plpgsql_batch.sql: the baseline of benchmark (2).
--
-- A straightforward PL/pgSQL implementation of BatchCreateTableVersions for
-- tables at object-store locations (records only, no manifests), written
-- the way one would without the extension: for each entry (in the canonical
-- key order, so that batches cannot deadlock) check it, walk the namespace
-- path from the root one name at a time, find the table, insert its version
-- row, and build the answer; then record the call in the commit log (with
-- the same entry lock and NOTIFY as the extension) and answer the versions
-- in request order.  Errors carry the extension's SQLSTATEs.
CREATE FUNCTION bench.plpgsql_batch_create_table_versions(request jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    entry        jsonb;
    pos          integer;
    names        text[];
    n            integer;
    parent       bigint;
    child        record;
    ver          bigint;
    path         text;
    created      timestamptz;
    one          jsonb;
    answers      jsonb[] := '{}';
    objects      text[] := '{}';
    versions     bigint[] := '{}';
    namespaces   text[] := '{}';
    prefix       text;
    change_seq   bigint;
    change_id    uuid;
BEGIN
    IF jsonb_typeof(request -> 'entries') IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'field "entries" is required' USING ERRCODE = 'LN013';
    END IF;

    FOR entry, pos IN
        SELECT e, o::integer FROM jsonb_array_elements(request -> 'entries') WITH ORDINALITY AS x(e, o)
         ORDER BY ARRAY(SELECT jsonb_array_elements_text(e -> 'id')) COLLATE "C",
                  (e ->> 'version')::bigint, o
    LOOP
        -- check the entry
        IF jsonb_typeof(entry -> 'id') IS DISTINCT FROM 'array'
           OR jsonb_array_length(entry -> 'id') = 0 THEN
            RAISE EXCEPTION 'entries[%]: field "id" must name a table', pos - 1 USING ERRCODE = 'LN013';
        END IF;
        names := ARRAY(SELECT jsonb_array_elements_text(entry -> 'id'));
        n := array_length(names, 1);
        IF jsonb_typeof(entry -> 'version') IS DISTINCT FROM 'number'
           OR (entry ->> 'version')::numeric < 0 THEN
            RAISE EXCEPTION 'entries[%]: field "version" is required', pos - 1 USING ERRCODE = 'LN013';
        END IF;
        ver := (entry ->> 'version')::bigint;
        path := entry ->> 'manifest_path';
        IF path IS NULL OR path = '' THEN
            RAISE EXCEPTION 'entries[%]: field "manifest_path" is required', pos - 1 USING ERRCODE = 'LN013';
        END IF;
        IF coalesce(entry ->> 'branch', '') NOT IN ('', 'main') THEN
            RAISE EXCEPTION 'entries[%]: branch "%" does not exist', pos - 1, entry ->> 'branch'
                USING ERRCODE = 'LN022';
        END IF;

        -- walk the namespace path from the root
        parent := 0;
        FOR i IN 1 .. n - 1 LOOP
            SELECT o.id, o.kind INTO child
              FROM lance_catalog.object o WHERE o.parent_id = parent AND o.name = names[i];
            IF NOT FOUND OR child.kind <> 'namespace' THEN
                RAISE EXCEPTION 'entries[%]: namespace "%" does not exist', pos - 1,
                    array_to_string(names[1:i], '$') USING ERRCODE = 'LN001';
            END IF;
            parent := child.id;
        END LOOP;

        -- the table
        SELECT o.id, o.kind, o.declared INTO child
          FROM lance_catalog.object o WHERE o.parent_id = parent AND o.name = names[n];
        IF NOT FOUND OR child.kind <> 'table' THEN
            RAISE EXCEPTION 'entries[%]: table "%" does not exist', pos - 1,
                array_to_string(names, '$') USING ERRCODE = 'LN004';
        END IF;

        -- put if not exists
        INSERT INTO lance_catalog.version
               (table_id, version, manifest_path, manifest_size, e_tag, naming_scheme, metadata)
        VALUES (child.id, ver, path, (entry ->> 'manifest_size')::bigint, entry ->> 'e_tag',
                coalesce(upper(entry ->> 'naming_scheme'), 'V2'),
                coalesce(entry -> 'metadata', '{}'))
        ON CONFLICT DO NOTHING
        RETURNING created_at INTO created;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'entries[%]: version % of table "%" already exists', pos - 1, ver,
                array_to_string(names, '$') USING ERRCODE = 'LN014';
        END IF;
        IF child.declared THEN
            UPDATE lance_catalog.object SET declared = false WHERE id = child.id;
        END IF;

        -- the answer, and what the commit log records
        one := jsonb_strip_nulls(jsonb_build_object(
                   'version', ver,
                   'manifest_path', path,
                   'manifest_size', (entry ->> 'manifest_size')::bigint,
                   'e_tag', entry ->> 'e_tag',
                   'metadata', CASE WHEN entry -> 'metadata' <> '{}' THEN entry -> 'metadata' END,
                   'timestamp_millis', (extract(epoch FROM created) * 1000)::bigint));
        answers[pos] := one;
        objects := objects || array_to_string(names, '$');
        versions := versions || ver;
        FOR i IN 1 .. n - 1 LOOP
            prefix := array_to_string(names[1:i], '$');
            IF NOT prefix = ANY (namespaces) THEN
                namespaces := namespaces || prefix;
            END IF;
        END LOOP;
    END LOOP;

    -- the commit log entry, locked until the transaction ends, and its notification
    PERFORM pg_advisory_lock_shared(1280197447, 0);           -- like the extension's gate
    INSERT INTO lance_catalog.change (operation, objects, versions, namespaces)
    VALUES ('BatchCreateTableVersions', objects, versions, namespaces)
    RETURNING seq, transaction_id INTO change_seq, change_id;
    PERFORM pg_advisory_xact_lock(1280197445, change_seq::integer);  -- like its entry lock
    PERFORM pg_advisory_unlock_shared(1280197447, 0);
    PERFORM pg_notify('lance_namespace_changes', '');  -- a signal, as the extension's

    RETURN jsonb_build_object('versions', to_jsonb(answers), 'transaction_id', change_id);
END
$$;
