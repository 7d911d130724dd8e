--
-- reader_listing: what a page costs a role that may read only parts of the
-- catalog.  Its root listing and its ListAllTables pages are found from its
-- grants, walking down from them by index, and the check that it may read
-- the root walks up by index: a page reads as many catalog rows whatever
-- else the catalog holds.  (Before, every such call computed the readable
-- subtree or filtered the whole catalog, and the privilege check scanned
-- the namespaces, tables and grants: at 200,000 tables a root listing took
-- 40-60 ms against 0.2 ms for an administrator.)  Counted, not timed: rows
-- of lance_catalog.object and lance_catalog.grant read in the call.
--
SET lance_namespace.local_roots = '';
SET lance_namespace.root = '';

CREATE ROLE regress_ln_lister;
-- What the role may read: namespace lw_seen (a table, and a namespace with
-- two), and one table of lw_other.
SELECT lance_create_namespace('{"id": ["lw_seen"]}') IS NOT NULL AS created;
SELECT lance_create_namespace('{"id": ["lw_seen", "sub"]}') IS NOT NULL AS created;
SELECT lance_create_namespace('{"id": ["lw_other"]}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["lw_seen", "a"], "location": "s3://b/lw/a"}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["lw_other", "x"], "location": "s3://b/lw/x"}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["lw_seen", "sub", "b"], "location": "s3://b/lw/b"}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["lw_other", "g"], "location": "s3://b/lw/g"}') IS NOT NULL AS created;
SELECT lance_declare_table('{"id": ["lw_seen", "sub", "c"], "location": "s3://b/lw/c"}') IS NOT NULL AS created;
SELECT lance_grant('{"id": ["lw_seen"], "role": "regress_ln_lister", "privilege": "read"}') ->> 'changed' AS granted;
SELECT lance_grant('{"id": ["lw_other", "g"], "role": "regress_ln_lister", "privilege": "read"}') ->> 'changed' AS granted;

-- Rows of the catalog's namespaces and tables (lance_catalog.object) and
-- grants read so far, by sequential, bitmap and index scans.  (The counts
-- are the backend's not yet reported: differences within a transaction.)
CREATE FUNCTION pg_temp.catalog_rows_read() RETURNS bigint LANGUAGE sql AS $$
    SELECT sum(pg_stat_get_xact_tuples_returned(t.oid) + pg_stat_get_xact_tuples_fetched(t.oid)
               + (SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0)
                    FROM pg_index i WHERE i.indrelid = t.oid))::bigint
      FROM pg_class t
     WHERE t.oid IN ('lance_catalog.object'::regclass, 'lance_catalog.grant'::regclass)
$$;

-- pg_temp.reads(size): the role's listings, each with the catalog rows it
-- read, into cost (size, listing, answer, rows read).  The last is the
-- second page of the one before it.
CREATE TEMP TABLE cost (size text, listing text, answer jsonb, rows_read bigint);
CREATE FUNCTION pg_temp.reads(size text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    listing text;
    fn text;
    request jsonb;
    answer jsonb;
    before bigint;
    token text;
BEGIN
    FOR listing, fn, request IN VALUES
        ('root namespaces', 'lance_list_namespaces', '{"id": []}'::jsonb),
        ('root tables', 'lance_list_tables', '{"id": []}'),
        ('all tables', 'lance_list_all_tables', '{}'),
        ('all tables with data', 'lance_list_all_tables', '{"include_declared": false}'),
        ('all tables, page 1 of 2', 'lance_list_all_tables', '{"limit": 2}'),
        ('all tables, page 2 of 2', 'lance_list_all_tables', '{"limit": 2}')
    LOOP
        IF listing LIKE '%page 2%' THEN
            request := request || jsonb_build_object('page_token', token);
        END IF;
        before := pg_temp.catalog_rows_read();
        SET LOCAL ROLE regress_ln_lister;
        EXECUTE format('SELECT %I($1)', fn) INTO answer USING request;
        RESET ROLE;
        INSERT INTO cost VALUES (size, listing, answer - 'page_token',
                                 pg_temp.catalog_rows_read() - before);
        token := answer ->> 'page_token';
    END LOOP;
    RETURN (SELECT count(*) FROM cost c WHERE c.size = reads.size);
END
$$;

BEGIN;
SELECT pg_temp.reads('small') AS listings;
COMMIT;

-- The catalog grows by what the role may not read: 40 namespaces of 10
-- tables under the root, 100 more tables next to the one it may read, and
-- as many before and after its own in the order tables were made.
SELECT count(lance_create_namespace(jsonb_build_object('id', jsonb_build_array('lw_hidden' || i))))
  FROM generate_series(1, 40) i;
SELECT count(lance_register_table(jsonb_build_object(
           'id', jsonb_build_array('lw_hidden' || (i % 40 + 1), 't' || i),
           'location', 's3://b/lw/hidden/t' || i)))
  FROM generate_series(1, 400) i;
SELECT count(lance_register_table(jsonb_build_object(
           'id', jsonb_build_array('lw_other', 'y' || i), 'location', 's3://b/lw/y' || i)))
  FROM generate_series(1, 100) i;

BEGIN;
SELECT pg_temp.reads('large') AS listings;
COMMIT;

-- The same answers, for as many rows read, in a catalog of 5 tables and of
-- 505; and few of them (the role's grants, the namespaces it may read, and
-- the tables on the page, each a row of the catalog and its index entry).
SELECT s.listing, s.answer, s.answer = l.answer AS same_answer,
       s.rows_read = l.rows_read AS same_rows_read, l.rows_read < 30 AS few_rows
  FROM cost s JOIN cost l ON l.size = 'large' AND l.listing = s.listing
 WHERE s.size = 'small'
 ORDER BY s.ctid;

-- Clean up.
SELECT lance_drop_namespace(jsonb_build_object('id', jsonb_build_array(name), 'behavior', 'Cascade')) IS NOT NULL AS dropped
  FROM unnest(ARRAY['lw_seen', 'lw_other']) name;
SELECT count(lance_drop_namespace(jsonb_build_object('id', jsonb_build_array('lw_hidden' || i), 'behavior', 'Cascade')))
  FROM generate_series(1, 40) i;
DROP ROLE regress_ln_lister;
SELECT lance_list_all_tables('{}');
