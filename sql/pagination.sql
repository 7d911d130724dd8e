--
-- pagination: ListNamespaces, ListTables and ListAllTables page by page.
-- Page tokens are opaque: they are passed back, never printed.
--

-- ListAllTables lists the whole catalog: this test needs it empty.
SELECT lance_list_all_tables('{}');
SELECT lance_list_namespaces('{"id": []}');

-- pg_temp.pages(fn, request): call fn, then follow page_token until a page
-- comes without one (absent, null and "" all end the listing, as the spec
-- says), at most 50 pages.  One row per page: its items, and whether it
-- carried a token.
CREATE FUNCTION pg_temp.pages(fn text, request jsonb)
RETURNS TABLE (page int, items jsonb, more boolean, token text)
LANGUAGE plpgsql AS $$
DECLARE
    resp jsonb;
BEGIN
    page := 0;
    LOOP
        page := page + 1;
        EXECUTE format('SELECT %I($1)', fn) INTO resp USING request;
        items := coalesce(resp -> 'namespaces', resp -> 'tables');
        token := resp ->> 'page_token';
        more := coalesce(token, '') <> '';
        RETURN NEXT;
        EXIT WHEN NOT more OR page >= 50;
        request := request || jsonb_build_object('page_token', token);
    END LOOP;
END
$$;

-- pg_temp.check_pages(fn, request): follow every page and check the
-- listing as a whole: the number of pages, that no token came twice, that
-- no item came twice, and all items in the order they came.
CREATE FUNCTION pg_temp.check_pages(fn text, request jsonb)
RETURNS TABLE (pages bigint, distinct_tokens boolean, distinct_items boolean, all_items jsonb)
LANGUAGE sql AS $$
    WITH p AS (SELECT * FROM pg_temp.pages(fn, request)),
         i AS (SELECT p.page, e.item, e.ord
               FROM p, jsonb_array_elements_text(p.items) WITH ORDINALITY AS e(item, ord))
    SELECT (SELECT count(*) FROM p),
           (SELECT count(token) = count(DISTINCT token) FROM p),
           (SELECT count(item) = count(DISTINCT item) FROM i),
           (SELECT coalesce(jsonb_agg(item ORDER BY page, ord), '[]') FROM i)
$$;

-- Fixtures: namespace pg with five child namespaces and six tables, three
-- of them only declared.
SELECT lance_create_namespace('{"id": ["pg"]}') IS NOT NULL AS created;
SELECT count(lance_create_namespace(jsonb_build_object('id', jsonb_build_array('pg', name))))
FROM unnest(ARRAY['n3', 'n1', 'n5', 'n2', 'n4']) AS name;
SELECT lance_register_table('{"id": ["pg", "t1"], "location": "/data/pg/t1.lance"}') IS NOT NULL AS created;
SELECT lance_declare_table('{"id": ["pg", "t2"], "location": "/data/pg/t2.lance"}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["pg", "t3"], "location": "/data/pg/t3.lance"}') IS NOT NULL AS created;
SELECT lance_declare_table('{"id": ["pg", "t4"], "location": "/data/pg/t4.lance"}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["pg", "t5"], "location": "/data/pg/t5.lance"}') IS NOT NULL AS created;
SELECT lance_declare_table('{"id": ["pg", "t6"], "location": "/data/pg/t6.lance"}') IS NOT NULL AS created;

--
-- ListNamespaces.
--

-- Without a limit everything fits on one page, without a token.
SELECT lance_list_namespaces('{"id": ["pg"]}');
-- limit 2: two full pages with a token, then the rest without one.
SELECT page, items, more FROM pg_temp.pages('lance_list_namespaces', '{"id": ["pg"], "limit": 2}');
-- limit 1: one name per page.
SELECT page, items, more FROM pg_temp.pages('lance_list_namespaces', '{"id": ["pg"], "limit": 1}');
-- A limit equal to the number of names: one page, and no token (the
-- server knows nothing is left).
SELECT page, items, more FROM pg_temp.pages('lance_list_namespaces', '{"id": ["pg"], "limit": 5}');
SELECT page, items, more FROM pg_temp.pages('lance_list_namespaces', '{"id": ["pg"], "limit": 100000}');
-- limit 0: an empty page, and no token.
SELECT lance_list_namespaces('{"id": ["pg"], "limit": 0}');
-- An empty or null page_token asks for the first page.
SELECT lance_list_namespaces('{"id": ["pg"], "limit": 2, "page_token": ""}') -> 'namespaces' AS first_page;
SELECT lance_list_namespaces('{"id": ["pg"], "limit": 2, "page_token": null}') -> 'namespaces' AS first_page;
-- Whole listings: every name once, no token twice.
SELECT * FROM pg_temp.check_pages('lance_list_namespaces', '{"id": ["pg"], "limit": 1}');
SELECT * FROM pg_temp.check_pages('lance_list_namespaces', '{"id": ["pg"], "limit": 2}');
SELECT * FROM pg_temp.check_pages('lance_list_namespaces', '{"id": ["pg"], "limit": 3}');
-- An empty namespace: one empty page.
SELECT page, items, more FROM pg_temp.pages('lance_list_namespaces', '{"id": ["pg", "n1"], "limit": 1}');

-- Names added and removed between pages: every name that exists throughout
-- comes exactly once; names removed before their page never come.
SELECT lance_list_namespaces('{"id": ["pg"], "limit": 2}') AS page1 \gset
SELECT :'page1'::jsonb -> 'namespaces' AS page1_names;
-- n2, the last name sent, goes; so does n4, not yet sent.  n0 comes before
-- the pages still to come, n35 and n9 among them.
SELECT lance_drop_namespace('{"id": ["pg", "n2"]}') IS NOT NULL AS dropped;
SELECT lance_drop_namespace('{"id": ["pg", "n4"]}') IS NOT NULL AS dropped;
SELECT lance_create_namespace('{"id": ["pg", "n0"]}') IS NOT NULL AS created;
SELECT lance_create_namespace('{"id": ["pg", "n35"]}') IS NOT NULL AS created;
SELECT lance_create_namespace('{"id": ["pg", "n9"]}') IS NOT NULL AS created;
SELECT page, items, more
FROM pg_temp.pages('lance_list_namespaces',
                   jsonb_build_object('id', '["pg"]'::jsonb, 'limit', 2,
                                      'page_token', :'page1'::jsonb -> 'page_token'));
-- Back to n1..n5.
SELECT lance_drop_namespace('{"id": ["pg", "n0"]}') IS NOT NULL AS dropped;
SELECT lance_drop_namespace('{"id": ["pg", "n35"]}') IS NOT NULL AS dropped;
SELECT lance_drop_namespace('{"id": ["pg", "n9"]}') IS NOT NULL AS dropped;
SELECT lance_create_namespace('{"id": ["pg", "n2"]}') IS NOT NULL AS created;
SELECT lance_create_namespace('{"id": ["pg", "n4"]}') IS NOT NULL AS created;

--
-- ListTables.
--

SELECT page, items, more FROM pg_temp.pages('lance_list_tables', '{"id": ["pg"], "limit": 2}');
SELECT page, items, more FROM pg_temp.pages('lance_list_tables', '{"id": ["pg"], "limit": 4}');
SELECT * FROM pg_temp.check_pages('lance_list_tables', '{"id": ["pg"], "limit": 1}');
-- include_declared false: pages hold only tables with data, and stay full
-- although declared tables sit between them.
SELECT page, items, more FROM pg_temp.pages('lance_list_tables', '{"id": ["pg"], "limit": 1, "include_declared": false}');
SELECT page, items, more FROM pg_temp.pages('lance_list_tables', '{"id": ["pg"], "limit": 2, "include_declared": false}');
SELECT lance_list_tables('{"id": ["pg"], "limit": 0}');
SELECT lance_list_tables('{"id": ["pg"], "limit": 0, "include_declared": false}');
SELECT page, items, more FROM pg_temp.pages('lance_list_tables', '{"id": ["pg", "n1"], "limit": 2}');

-- Tables added and removed between pages.
SELECT lance_list_tables('{"id": ["pg"], "limit": 3}') AS page1 \gset
SELECT :'page1'::jsonb -> 'tables' AS page1_tables;
SELECT lance_deregister_table('{"id": ["pg", "t3"]}') -> 'id' AS removed;
SELECT lance_deregister_table('{"id": ["pg", "t5"]}') -> 'id' AS removed;
SELECT lance_declare_table('{"id": ["pg", "t0"], "location": "/data/pg/t0.lance"}') IS NOT NULL AS created;
SELECT lance_declare_table('{"id": ["pg", "t45"], "location": "/data/pg/t45.lance"}') IS NOT NULL AS created;
SELECT page, items, more
FROM pg_temp.pages('lance_list_tables',
                   jsonb_build_object('id', '["pg"]'::jsonb, 'limit', 3,
                                      'page_token', :'page1'::jsonb -> 'page_token'));
-- Back to t1..t6.
SELECT lance_drop_table('{"id": ["pg", "t0"]}') -> 'id' AS removed;
SELECT lance_drop_table('{"id": ["pg", "t45"]}') -> 'id' AS removed;
SELECT lance_register_table('{"id": ["pg", "t3"], "location": "/data/pg/t3.lance"}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["pg", "t5"], "location": "/data/pg/t5.lance"}') IS NOT NULL AS created;

--
-- ListAllTables: every table of the catalog by full id, in the order the
-- tables were made (t3 and t5 were registered again above, so they come
-- after t6).
--

SELECT lance_create_namespace('{"id": ["pg", "n1", "deep"]}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["pg", "n1", "deep", "u1"], "location": "/data/pg/u1.lance"}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["top"], "location": "/data/top.lance"}') IS NOT NULL AS created;

SELECT lance_list_all_tables('{}');
SELECT page, items, more FROM pg_temp.pages('lance_list_all_tables', '{"limit": 2}');
SELECT page, items, more FROM pg_temp.pages('lance_list_all_tables', '{"limit": 1}');
SELECT page, items, more FROM pg_temp.pages('lance_list_all_tables', '{"limit": 8}');
SELECT lance_list_all_tables('{"limit": 0}');
SELECT lance_list_all_tables('{"limit": 0, "include_declared": false}');
SELECT * FROM pg_temp.check_pages('lance_list_all_tables', '{"limit": 1}');
SELECT * FROM pg_temp.check_pages('lance_list_all_tables', '{"limit": 3}');
-- include_declared false, and another delimiter on every page.
SELECT page, items, more FROM pg_temp.pages('lance_list_all_tables', '{"limit": 2, "include_declared": false}');
SELECT page, items, more FROM pg_temp.pages('lance_list_all_tables', '{"limit": 3, "delimiter": "::"}');
SELECT page, items, more FROM pg_temp.pages('lance_list_all_tables', '{"limit": 2, "include_declared": false, "delimiter": "/"}');

-- Tables renamed, moved, removed and added between pages: a table already
-- sent is not sent again under its new name, a table not yet sent comes
-- once under its new name, and a new table comes at the end.
SELECT lance_list_all_tables('{"limit": 3}') AS page1 \gset
SELECT :'page1'::jsonb -> 'tables' AS page1_tables;
-- t1 was sent and is renamed; t6 was not and moves to another namespace;
-- t4 (the last table sent) and t5 (not sent) go; t7 is new.
SELECT lance_rename_table('{"id": ["pg", "t1"], "new_table_name": "z1"}') - 'transaction_id' AS lance_rename_table;
SELECT lance_rename_table('{"id": ["pg", "t6"], "new_table_name": "a6", "new_namespace_id": ["pg", "n2"]}') - 'transaction_id' AS lance_rename_table;
SELECT lance_drop_table('{"id": ["pg", "t4"]}') -> 'id' AS removed;
SELECT lance_deregister_table('{"id": ["pg", "t5"]}') -> 'id' AS removed;
SELECT lance_register_table('{"id": ["pg", "t7"], "location": "/data/pg/t7.lance"}') IS NOT NULL AS created;
SELECT page, items, more
FROM pg_temp.pages('lance_list_all_tables',
                   jsonb_build_object('limit', 3, 'page_token', :'page1'::jsonb -> 'page_token'));

-- ListAllTables with an empty catalog: one empty page.
SELECT lance_drop_namespace('{"id": ["pg"], "behavior": "Cascade"}') IS NOT NULL AS dropped;
SELECT lance_deregister_table('{"id": ["top"]}') -> 'id' AS removed;
SELECT page, items, more FROM pg_temp.pages('lance_list_all_tables', '{"limit": 1}');

--
-- The server's page size: without a limit a page holds at most 1000 names
-- (the spec sets no default), and the rest follows a token.
--

SELECT lance_create_namespace('{"id": ["pg_big"]}') IS NOT NULL AS created;
SELECT count(lance_create_namespace(jsonb_build_object('id', jsonb_build_array('pg_big', format('ns%s', to_char(i, 'FM0000'))))))
FROM generate_series(1, 1001) AS i;
SELECT page, jsonb_array_length(items) AS names, items -> 0 AS first, items -> -1 AS last, more
FROM pg_temp.pages('lance_list_namespaces', '{"id": ["pg_big"]}');
SELECT pages, distinct_tokens, distinct_items, jsonb_array_length(all_items) AS names
FROM pg_temp.check_pages('lance_list_namespaces', '{"id": ["pg_big"], "limit": 400}');

--
-- ListAllTables' page tokens name a position without telling it.  As the
-- table's internal number, a token told a reader how many tables it may not
-- see were made between two of its pages (the numbers of two consecutive
-- tokens differed by one more than that).  A token is now 32 hex digits,
-- the number sealed with the catalog's key: no number, and two tokens say
-- nothing of each other.  A position always gives the same token, so paging
-- stays stable while tables come and go; a token the catalog did not make
-- is LN013.
--
CREATE ROLE regress_ln_pager;
SELECT lance_create_namespace('{"id": ["pg_seen"]}') IS NOT NULL AS created;
SELECT lance_create_namespace('{"id": ["pg_hidden"]}') IS NOT NULL AS created;
SELECT lance_grant('{"id": ["pg_seen"], "role": "regress_ln_pager", "privilege": "read"}') ->> 'changed' AS granted;
-- s1, 50 tables the reader may not see, s2, one more, s3 and s4
SELECT lance_register_table('{"id": ["pg_seen", "s1"], "location": "s3://b/seen/s1"}') IS NOT NULL AS created;
SELECT count(lance_register_table(jsonb_build_object('id', jsonb_build_array('pg_hidden', 'h' || i),
                                                     'location', 's3://b/hidden/h' || i)))
  FROM generate_series(1, 50) i;
SELECT lance_register_table('{"id": ["pg_seen", "s2"], "location": "s3://b/seen/s2"}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["pg_hidden", "h51"], "location": "s3://b/hidden/h51"}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["pg_seen", "s3"], "location": "s3://b/seen/s3"}') IS NOT NULL AS created;
SELECT lance_register_table('{"id": ["pg_seen", "s4"], "location": "s3://b/seen/s4"}') IS NOT NULL AS created;
SET ROLE regress_ln_pager;
SELECT page, items, more FROM pg_temp.pages('lance_list_all_tables', '{"limit": 1}');
SELECT * FROM pg_temp.check_pages('lance_list_all_tables', '{"limit": 1}');
-- every token: 32 hex digits, never a number
SELECT page, token ~ '^[0-9a-f]{32}$' AS hex_digits, token ~ '^[0-9]+$' AS a_number
  FROM pg_temp.pages('lance_list_all_tables', '{"limit": 1}') WHERE more;
-- the same position, the same token
SELECT lance_list_all_tables('{"limit": 1}') ->> 'page_token'
     = lance_list_all_tables('{"limit": 1}') ->> 'page_token' AS same_token;
-- the key is the catalog owner's alone
SELECT * FROM lance_catalog.page_token_key;

-- Tables added, renamed and removed between the reader's pages, seen and
-- hidden: each table the reader may see that is there throughout comes
-- once; one removed before its page never comes; a new one comes last.
SELECT lance_list_all_tables('{"limit": 2}') AS page1 \gset
SELECT :'page1'::jsonb -> 'tables' AS page1_tables;
RESET ROLE;
-- s2 (the last sent) and s3 (not sent) go, s4 (not sent) is renamed, s5 is
-- new; hidden tables go and come
SELECT lance_deregister_table('{"id": ["pg_seen", "s2"]}') -> 'id' AS removed;
SELECT lance_deregister_table('{"id": ["pg_seen", "s3"]}') -> 'id' AS removed;
SELECT lance_rename_table('{"id": ["pg_seen", "s4"], "new_table_name": "z4"}') - 'transaction_id' AS lance_rename_table;
SELECT count(lance_deregister_table(jsonb_build_object('id', jsonb_build_array('pg_hidden', 'h' || i))))
  FROM generate_series(1, 10) i;
SELECT count(lance_register_table(jsonb_build_object('id', jsonb_build_array('pg_hidden', 'h' || i),
                                                     'location', 's3://b/hidden/h' || i)))
  FROM generate_series(52, 60) i;
SELECT lance_register_table('{"id": ["pg_seen", "s5"], "location": "s3://b/seen/s5"}') IS NOT NULL AS created;
SET ROLE regress_ln_pager;
SELECT page, items, more
FROM pg_temp.pages('lance_list_all_tables',
                   jsonb_build_object('limit', 2, 'page_token', :'page1'::jsonb -> 'page_token'));
RESET ROLE;

-- Tokens the catalog did not make: LN013.  One changed in its last digit;
-- a table's internal number, as tokens were before 0.6.0 (a client paging
-- across the update to 0.6.0 starts again); one sealed with another
-- catalog's key (another install, or this one restored from a dump).
SELECT lance_list_all_tables('{"limit": 1}') ->> 'page_token' AS token \gset
SELECT lance_list_all_tables(jsonb_build_object('page_token', :'token', 'limit', 2)) -> 'tables' AS next_tables;
SELECT lance_list_all_tables(jsonb_build_object('page_token',
           overlay(:'token' PLACING CASE WHEN right(:'token', 1) = '0' THEN '1' ELSE '0' END FROM 32)));
SELECT id AS s1_number FROM lance_catalog.object WHERE name = 's1' \gset
SELECT lance_list_all_tables(jsonb_build_object('page_token', :'s1_number'::text));
SELECT lance_list_all_tables('{"page_token": "0123456789abcdef0123456789abcdeg"}');
SELECT lance_list_all_tables('{"page_token": "0123456789ABCDEF0123456789ABCDEF"}');
SELECT key AS old_key FROM lance_catalog.page_token_key \gset
UPDATE lance_catalog.page_token_key SET key = sha256(key);
SELECT lance_list_all_tables(jsonb_build_object('page_token', :'token'));
UPDATE lance_catalog.page_token_key SET key = :'old_key'::bytea;
SELECT lance_list_all_tables(jsonb_build_object('page_token', :'token', 'limit', 2)) -> 'tables' AS next_tables_again;
SELECT lance_drop_namespace('{"id": ["pg_seen"], "behavior": "Cascade"}') IS NOT NULL AS dropped;
SELECT lance_drop_namespace('{"id": ["pg_hidden"], "behavior": "Cascade"}') IS NOT NULL AS dropped;
DROP ROLE regress_ln_pager;

-- Clean up.
SELECT lance_drop_namespace('{"id": ["pg_big"], "behavior": "Cascade"}') IS NOT NULL AS dropped;
SELECT lance_list_namespaces('{"id": []}');
SELECT lance_list_all_tables('{}');
