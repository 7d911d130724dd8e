--
-- locations: where a writer's tables may go.  The catalog manages the
-- versions of tables below lance_namespace.local_roots and below S3 storage
-- settings, writes their manifests and hands a setting's keys to the tables'
-- callers; which of those places a table goes to is an administrator's
-- choice.  A namespace's "location" property, the names its derived
-- locations are made of, and a table's own name must not take a writer's
-- tables into a managed prefix its namespace is not in: not directly, not
-- one folder per level, not through a name that spells a path.  And a new
-- storage setting says which tables and namespace locations it would take
-- over.  No store is reached here.
--
SET lance_namespace.local_roots = '';
SET lance_namespace.root = '';
-- try_as(role, call): the outcome of statement `call` run as `role`, undone
-- after, so that every call finds the same catalog: 'ok', or the SQLSTATE
CREATE FUNCTION pg_temp.try_as(role text, call text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    state text;
BEGIN
    EXECUTE pg_catalog.format('SET LOCAL ROLE %I', role);
    EXECUTE call;
    RAISE EXCEPTION 'done' USING ERRCODE = 'ZX001';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
    RETURN CASE state WHEN 'ZX001' THEN 'ok' ELSE state END;
END
$$;

CREATE ROLE regress_loc_writer;
CREATE ROLE regress_loc_admin IN ROLE lance_admin;

-- another tenant's prefix, with its keys
SELECT lance_set_storage('{"location": "s3://lake/cat", "options": {"aws_access_key_id": "AK", "aws_secret_access_key": "SECRET-CAT"}}') ->> 'location' AS set;
SELECT lance_create_namespace('{"id": ["wns"]}') - 'transaction_id' AS created;
SELECT lance_grant('{"id": ["wns"], "role": "regress_loc_writer", "privilege": "write"}') ->> 'changed' AS granted;

--
-- A namespace location above a managed prefix: its children's derived
-- locations, one folder per level, would reach into the prefix.  A writer
-- gets no such location (15).
--
SET ROLE regress_loc_writer;
SELECT lance_create_namespace('{"id": ["wns", "up"], "properties": {"location": "s3://lake"}}');
RESET ROLE;

--
-- A location is compared folder by folder, however it is spelled: at, below
-- and above a managed prefix are refused (15); a look-alike prefix or
-- another bucket is not one.
--
SELECT l AS location, pg_temp.try_as('regress_loc_writer', pg_catalog.format(
           'SELECT lance_create_namespace(%L)',
           jsonb_build_object('id', ARRAY['wns', 'n'], 'properties', jsonb_build_object('location', l)))) AS outcome
  FROM unnest(ARRAY['s3://lake', 's3://lake/', 's3://lake/cat', 's3://lake/cat/', 's3://lake//cat',
                    's3://lake/x/../cat', 's3://lake/%63at', 's3://lake/cat/sub', 'S3://lake/cat/sub',
                    's3://lake/catalog', 's3://lake/ca', 's3://lake2', 's3://lake2/cat', 's3://lakes/x']) l;
-- A location the catalog cannot place, which a client may still read as a
-- managed prefix, is refused to a writer (13): white space around it, the
-- other S3 schemes, an HTTP address, a file URI of another host, a relative
-- path.  Another store's URI is a writer's to give.
SELECT l AS location, pg_temp.try_as('regress_loc_writer', pg_catalog.format(
           'SELECT lance_create_namespace(%L)',
           jsonb_build_object('id', ARRAY['wns', 'n'], 'properties', jsonb_build_object('location', l)))) AS outcome
  FROM unnest(ARRAY[' s3://lake/cat/x', 's3://lake/cat/x ', 's3a://lake/cat/x', 'S3N://lake/cat/x',
                    'https://lake.s3.amazonaws.com/cat/x', 'file://127.0.0.1/tmp/x', 'tables/x', '://x',
                    'gs://lake/cat/x', 'az://lake/cat/x', 'memory://x']) l;

--
-- Derived locations are checked where they are derived.  An administrator
-- may give a namespace a location above the prefix; a writer there still
-- does not get into it: not one folder per level, not through a name that
-- holds a '/', and not by climbing out of its own folder with '..'.
--
SELECT lance_create_namespace('{"id": ["wns", "adm"], "properties": {"location": "s3://lake"}}') -> 'properties' AS by_admin;
SET ROLE regress_loc_writer;
SELECT lance_create_namespace('{"id": ["wns", "adm", "cat"]}');
SELECT lance_create_namespace('{"id": ["wns", "adm", "cat/sec"]}');
SELECT lance_declare_table('{"id": ["wns", "adm", "cat/t"]}');
SELECT lance_batch_commit_tables('{"operations": [{"declare_table": {"id": ["wns", "adm", "cat/t"]}}]}');
-- beside the prefix all is as before, a '/' in a name included
SELECT lance_create_namespace('{"id": ["wns", "adm", "dog"]}') -> 'properties' AS created;
SELECT d ->> 'location' ~ '^s3://lake/dog/t_[0-9a-f]{8}\.lance$' AS derived, d -> 'managed_versioning' AS managed,
       d -> 'storage_options' AS storage_options
  FROM lance_declare_table('{"id": ["wns", "adm", "dog", "t"]}') d;
SELECT d ->> 'location' ~ '^s3://lake/dog/a%2Fb_[0-9a-f]{8}\.lance$' AS derived, d -> 'managed_versioning' AS managed
  FROM lance_declare_table('{"id": ["wns", "adm", "dog", "a/b"]}') d;
-- nor does Overwrite give a location the writer could not have given
SELECT lance_create_namespace('{"id": ["wns", "adm", "bird"]}') -> 'properties' AS created;
SELECT lance_create_namespace('{"id": ["wns", "adm", "bird"], "mode": "Overwrite", "properties": {"location": "s3://lake/cat/b"}}');
-- a name that climbs: with its escapes read, "../../cat/t3" goes two folders
-- up from s3://lake/mine/a and into s3://lake/cat; nothing is derived
-- through a name with "." or ".." between its '/'s (13)
SELECT lance_create_namespace('{"id": ["wns", "mine"], "properties": {"location": "s3://lake/mine/a"}}') -> 'properties' AS created;
SELECT lance_declare_table('{"id": ["wns", "mine", "../../cat/t3"]}');
SELECT lance_declare_table('{"id": ["wns", "mine", "x/./y"]}');
SELECT lance_batch_commit_tables('{"operations": [{"declare_table": {"id": ["wns", "mine", "../../cat/t3"]}}]}');
SELECT lance_create_namespace('{"id": ["wns", "mine", "../.."]}') -> 'properties' AS created_but_never_derived_through;
SELECT lance_declare_table('{"id": ["wns", "mine", "../..", "t"]}');
RESET ROLE;
-- an administrator may do all of it
SELECT lance_create_namespace('{"id": ["wns", "adm", "cat"]}') -> 'properties' AS by_admin;
SET ROLE regress_loc_writer;
-- a writer finds it (ExistOk) and works below it, in the prefix the
-- administrator placed it in
SELECT lance_create_namespace('{"id": ["wns", "adm", "cat"], "mode": "ExistOk"}') -> 'properties' AS exists;
SELECT d ->> 'location' ~ '^s3://lake/cat/sub/t_[0-9a-f]{8}\.lance$' AS derived, d -> 'managed_versioning' AS managed
  FROM lance_create_namespace('{"id": ["wns", "adm", "cat", "sub"]}') n,
       lance_declare_table('{"id": ["wns", "adm", "cat", "sub", "t"]}') d;
RESET ROLE;
SET ROLE regress_loc_admin;
SELECT lance_create_namespace('{"id": ["wns", "adm", "cat2"], "properties": {"location": "s3://lake/cat/x/.."}}') -> 'properties' AS by_admin;
RESET ROLE;
SELECT lance_drop_namespace('{"id": ["wns", "adm"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT lance_drop_namespace('{"id": ["wns", "mine"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;

--
-- The same on local disk: a namespace location above lance_namespace.local_roots,
-- and a file URI whose escapes climb into it.
--
\! rm -rf /tmp/lance_namespace_locations && mkdir -p /tmp/lance_namespace_locations/root/tenant /tmp/lance_namespace_locations/mine && chmod -R 777 /tmp/lance_namespace_locations
SET lance_namespace.local_roots = '/tmp/lance_namespace_locations/root/tenant';
SET ROLE regress_loc_writer;
SELECT lance_create_namespace('{"id": ["wns", "lup"], "properties": {"location": "/tmp/lance_namespace_locations"}}');
RESET ROLE;
SELECT lance_create_namespace('{"id": ["wns", "lup"], "properties": {"location": "/tmp/lance_namespace_locations"}}') -> 'properties' AS by_admin;
SET ROLE regress_loc_writer;
SELECT lance_create_namespace('{"id": ["wns", "lup", "root"]}') -> 'properties' AS created;
SELECT lance_create_namespace('{"id": ["wns", "lup", "root", "tenant"]}');
-- (a plain path is read as it is spelled: a '/' in a name stays "%2F", one folder)
SELECT d ->> 'location' ~ '^/tmp/lance_namespace_locations/root%2Ftenant/t_[0-9a-f]{8}\.lance$' AS one_folder,
       d -> 'managed_versioning' AS managed
  FROM lance_create_namespace('{"id": ["wns", "lup", "root/tenant"]}') n,
       lance_declare_table('{"id": ["wns", "lup", "root/tenant", "t"]}') d;
SELECT d ->> 'location' ~ '^/tmp/lance_namespace_locations/root/tenant%2Ft_[0-9a-f]{8}\.lance$' AS one_folder,
       d -> 'managed_versioning' AS managed
  FROM lance_declare_table('{"id": ["wns", "lup", "root", "tenant/t"]}') d;
RESET ROLE;
SELECT l AS location, pg_temp.try_as('regress_loc_writer', pg_catalog.format(
           'SELECT lance_create_namespace(%L)',
           jsonb_build_object('id', ARRAY['wns', 'n'], 'properties', jsonb_build_object('location', l)))) AS outcome
  FROM unnest(ARRAY['/', '/tmp/lance_namespace_locations/root/tenant', '/tmp/lance_namespace_locations/root/tenant/x',
                    'file:///tmp/lance_namespace_locations/root', '/tmp/lance_namespace_locations/root/x/../tenant/',
                    '/tmp//lance_namespace_locations/root/tenant', '/tmp/lance_namespace_locations/root/tenant2',
                    '/tmp/lance_namespace_locations/root/x']) l;
SET ROLE regress_loc_writer;
SELECT lance_create_namespace('{"id": ["wns", "lmine"], "properties": {"location": "file:///tmp/lance_namespace_locations/mine"}}') -> 'properties' AS created;
SELECT lance_declare_table('{"id": ["wns", "lmine", "../root/tenant/t"]}');
RESET ROLE;
-- a file URI is read with its escapes decoded: there a '/' in a name is a folder
SELECT lance_create_namespace('{"id": ["wns", "lfile"], "properties": {"location": "file:///tmp/lance_namespace_locations/root"}}') -> 'properties' AS by_admin;
SELECT pg_temp.try_as('regress_loc_writer', $$SELECT lance_create_namespace('{"id": ["wns", "lfile", "tenant"]}')$$) AS "tenant",
       pg_temp.try_as('regress_loc_writer', $$SELECT lance_declare_table('{"id": ["wns", "lfile", "tenant/t"]}')$$) AS "tenant/t",
       pg_temp.try_as('regress_loc_writer', $$SELECT lance_declare_table('{"id": ["wns", "lfile", "t"]}')$$) AS t;
SELECT lance_drop_namespace('{"id": ["wns", "lfile"]}') ? 'transaction_id' AS dropped;
SELECT lance_drop_namespace('{"id": ["wns", "lup"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT lance_drop_namespace('{"id": ["wns", "lmine"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SET lance_namespace.local_roots = '';
\! rm -rf /tmp/lance_namespace_locations

--
-- A writer's namespace location must keep clear of tables' folders too: at,
-- inside or around one, its tables would go into another table's folder.
--
SELECT lance_register_table('{"id": ["wns", "other"], "location": "s3://brook/data/t.lance"}') ->> 'location' AS registered;
SELECT l AS location, pg_temp.try_as('regress_loc_writer', pg_catalog.format(
           'SELECT lance_create_namespace(%L)',
           jsonb_build_object('id', ARRAY['wns', 'n'], 'properties', jsonb_build_object('location', l)))) AS outcome
  FROM unnest(ARRAY['s3://brook', 's3://brook/data', 's3://brook/data/t.lance/', 's3://brook/data/t.lance/in',
                    's3://brook/data2', 's3://brook/data/u.lance']) l;
SELECT lance_deregister_table('{"id": ["wns", "other"]}') ? 'location' AS deregistered;

--
-- Below lance_namespace.root the same: a name that enters a managed prefix
-- the parent's location is not in is an administrator's to create.
--
SET lance_namespace.root = 's3://lake';
SELECT lance_set_storage('{"location": "s3://lake/wns/cat", "options": {}}') ->> 'location' AS set;
SELECT pg_temp.try_as('regress_loc_writer', $$SELECT lance_create_namespace('{"id": ["wns", "cat"]}')$$) AS cat,
       pg_temp.try_as('regress_loc_writer', $$SELECT lance_create_namespace('{"id": ["wns", "dog"]}')$$) AS dog,
       pg_temp.try_as('regress_loc_writer', $$SELECT lance_declare_table('{"id": ["wns", "cat/t"]}')$$) AS "cat/t",
       pg_temp.try_as('regress_loc_writer', $$SELECT lance_declare_table('{"id": ["wns", "t"]}')$$) AS t,
       pg_temp.try_as('regress_loc_admin', $$SELECT lance_create_namespace('{"id": ["wns", "cat"]}')$$) AS cat_by_admin;
SELECT lance_remove_storage('{"location": "s3://lake/wns/cat"}') ->> 'location' AS removed;
SET lance_namespace.root = '';

--
-- A new setting takes over what lies at its prefix.  Tables a writer
-- registered, and namespace locations it gave, where nothing was managed
-- would become managed, with the setting's keys handed to their readers:
-- lance_set_storage refuses (13) and names them, until the administrator
-- has looked and passes "take_over": true.
--
SET ROLE regress_loc_writer;
SELECT lance_register_table('{"id": ["wns", "placed"], "location": "s3://pond/tenant/t.lance"}') ->> 'location' AS registered;
SELECT lance_create_namespace('{"id": ["wns", "ahead"], "properties": {"location": "s3://pond/up"}}') -> 'properties' AS created;
SELECT lance_create_namespace('{"id": ["wns", "ahead", "x"]}') -> 'properties' AS created;
RESET ROLE;
SELECT lance_set_storage('{"location": "s3://pond/tenant", "options": {"aws_access_key_id": "AK", "aws_secret_access_key": "SECRET-POND"}}');
SELECT lance_set_storage('{"location": "s3://pond/up/x", "options": {"aws_access_key_id": "AK", "aws_secret_access_key": "SECRET-POND"}}');
SELECT lance_set_storage('{"location": "s3://pond", "options": {}}');
SELECT lance_set_storage('{"location": "s3://pond/tenant", "options": {}, "take_over": "yes"}');
-- nothing was set
SELECT count(*) AS settings FROM lance_catalog.storage WHERE location LIKE 's3://pond%';
-- beside them, or below a setting that stays theirs, nothing is taken over
SELECT lance_set_storage('{"location": "s3://pond/tenant2", "options": {}}') ->> 'location' AS set;
SELECT lance_set_storage('{"location": "s3://pond/up2", "options": {}}') ->> 'location' AS set;
-- with take_over, as meant
SELECT lance_set_storage('{"location": "s3://pond/tenant", "options": {}, "take_over": true}') ->> 'location' AS set;
SELECT lance_describe_table('{"id": ["wns", "placed"]}') -> 'managed_versioning' AS managed;
-- replacing a setting (new keys) takes over nothing new: an administrator's
-- namespace located there since is no reason to refuse
SELECT lance_create_namespace('{"id": ["wns", "inside"], "properties": {"location": "s3://pond/tenant/ns"}}') -> 'properties' AS by_admin;
SELECT lance_set_storage('{"location": "s3://pond/tenant", "options": {"aws_access_key_id": "AK2", "aws_secret_access_key": "SECRET-2"}}') -> 'options' ->> 'aws_access_key_id' AS replaced;
SELECT lance_drop_namespace('{"id": ["wns", "inside"]}') ? 'transaction_id' AS dropped;
-- a setting above one that covers the table does not take it over
SELECT lance_deregister_table('{"id": ["wns", "placed"]}') ? 'location' AS deregistered;
SELECT lance_register_table('{"id": ["wns", "placed"], "location": "s3://pond/tenant2/t.lance"}') ->> 'location' AS registered;
SELECT lance_drop_namespace('{"id": ["wns", "ahead"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT lance_set_storage('{"location": "s3://pond", "options": {}}') ->> 'location' AS set;
-- below a setting that covers them, the tables are managed already: a
-- narrower setting takes nothing over
SELECT lance_register_table('{"id": ["wns", "deep"], "location": "s3://pond/deep/t.lance"}') ->> 'location' AS registered;
SELECT lance_set_storage('{"location": "s3://pond/deep", "options": {}}') ->> 'location' AS set;
-- more than ten are named as ten, and "more"
SELECT count(*) AS registered
  FROM generate_series(1, 12) i,
       LATERAL lance_register_table(jsonb_build_object('id', ARRAY['wns', 'many' || i], 'location', 's3://river/t' || i)) r;
SELECT lance_set_storage('{"location": "s3://river", "options": {}}');
-- tables in one another's folders, named by their ids
SELECT lance_register_table('{"id": ["wns", "inner"], "location": "s3://river/t1/inner"}') ->> 'location' AS registered;
SELECT lance_set_storage('{"location": "s3://river", "options": {}, "take_over": true}');
SELECT lance_remove_storage(jsonb_build_object('location', l)) ->> 'location' AS removed
  FROM unnest(ARRAY['s3://pond', 's3://pond/deep', 's3://pond/tenant', 's3://pond/tenant2', 's3://pond/up2']) l;

--
-- A table at or above the folders where the catalog places tables holds
-- every table placed there: a writer's location at or above
-- lance_namespace.root, a local root, a storage setting's prefix or a
-- namespace's location is refused (15), however spelled; beside them, or
-- below an unmanaged namespace location, it is not.
--
\! mkdir -p /tmp/lance_namespace_locations/around/tables /tmp/lance_namespace_locations/around/free && chmod -R 777 /tmp/lance_namespace_locations
SET lance_namespace.local_roots = '/tmp/lance_namespace_locations/around/tables';
SET lance_namespace.root = '/tmp/lance_namespace_locations/around/tables';
SELECT lance_create_namespace('{"id": ["wns", "placed_ns"], "properties": {"location": "s3://pond/placed"}}') -> 'properties' AS by_admin;
SELECT l AS location, pg_temp.try_as('regress_loc_writer', pg_catalog.format(
           'SELECT lance_register_table(%L)',
           jsonb_build_object('id', ARRAY['wns', 'grab'], 'location', l))) AS register,
       pg_temp.try_as('regress_loc_writer', pg_catalog.format(
           'SELECT lance_declare_table(%L)',
           jsonb_build_object('id', ARRAY['wns', 'grab'], 'location', l))) AS declare
  FROM unnest(ARRAY['/tmp/lance_namespace_locations/around/tables',
                    '/tmp/lance_namespace_locations/around/tables/',
                    'file:///tmp/lance_namespace_locations/around/tables',
                    'file://localhost/tmp/lance_namespace_locations/around/tables/',
                    '/tmp/lance_namespace_locations/./around/tables',
                    '/tmp/lance_namespace_locations/around/free/../tables',
                    '/tmp/lance_namespace_locations/around',
                    '/tmp/lance_namespace_locations',
                    '/tmp', '/',
                    's3://lake/cat', 's3://lake/', 's3://lake',
                    's3://pond/placed', 's3://pond/placed/', 's3://pond',
                    '/tmp/lance_namespace_locations/around/free/t.lance',
                    '/tmp/lance_namespace_locations/around/tables2',
                    's3://pond/placed/t.lance', 's3://pond/placedx']) l;
-- the message names the rule
SET ROLE regress_loc_writer;
SELECT lance_register_table('{"id": ["wns", "grab"], "location": "/tmp/lance_namespace_locations/around/tables/"}');
SELECT lance_register_table('{"id": ["wns", "grab"], "location": "file:///tmp/lance_namespace_locations"}');
SELECT lance_register_table('{"id": ["wns", "grab"], "location": "s3://pond/placed/"}');
RESET ROLE;
-- One placed so before, or by an administrator, no longer stops another
-- writer's DeclareTable (it answered 13 "inside or around another table's
-- folder" in every namespace), and lance_stats() names it for the
-- administrator to move.
SELECT lance_register_table('{"id": ["wns", "at_root"], "location": "/tmp/lance_namespace_locations/around/tables/"}') ->> 'location' AS by_admin;
SELECT lance_register_table('{"id": ["wns", "above"], "location": "file:///tmp/lance_namespace_locations"}') ->> 'location' AS by_admin;
SELECT lance_register_table('{"id": ["wns", "inside"], "location": "/tmp/lance_namespace_locations/around/tables/wns/taken.lance"}') ->> 'location' AS by_admin;
SELECT lance_create_namespace('{"id": ["fresh"]}') ? 'transaction_id' AS created;
SELECT lance_grant('{"id": ["fresh"], "role": "regress_loc_writer", "privilege": "write"}') ->> 'changed' AS granted;
SET ROLE regress_loc_writer;
SELECT lance_declare_table('{"id": ["fresh", "mine"]}') ->> 'location' LIKE '/tmp/lance_namespace_locations/around/tables/fresh/mine_%.lance' AS declared;
SELECT lance_declare_table('{"id": ["wns", "mine"]}') ->> 'location' LIKE '/tmp/lance_namespace_locations/around/tables/wns/mine_%.lance' AS declared;
RESET ROLE;
SELECT t ->> 'id' AS id, t ->> 'location' AS location
  FROM pg_catalog.jsonb_array_elements(lance_stats() -> 'tables_around_roots') t;
-- A table in the way of a folder the catalog chose (here one an
-- administrator registered at the namespace's folder, around it): the
-- writer is told what to do (the folder's random suffix masked), and the
-- server log names the table in the way, for the administrator.
SELECT lance_register_table('{"id": ["wns", "in_the_way"], "location": "/tmp/lance_namespace_locations/around/tables/wns"}') ? 'location' AS by_admin;
CREATE FUNCTION pg_temp.declare_as_writer(request jsonb) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    message text;
    hint text;
BEGIN
    SET LOCAL ROLE regress_loc_writer;
    PERFORM lance_declare_table(request);
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS message = MESSAGE_TEXT, hint = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ': ' || regexp_replace(message, '_[0-9a-f]{8}\.lance', '_<suffix>.lance')
           || ' (' || COALESCE(hint::jsonb ->> 'detail', '') || ')';
END
$$;
-- (the writer never sees that name, whatever its client_min_messages)
SET client_min_messages = log;
SELECT pg_temp.declare_as_writer('{"id": ["wns", "blocked"]}');
RESET client_min_messages;
-- (the server log's line: test/gateway/run.sh, "tables in the way")
SELECT lance_deregister_table('{"id": ["wns", "in_the_way"]}') ? 'location' AS deregistered;
-- Only where the catalog manages no table does one around a root stop
-- nobody: a table an administrator registered at a storage setting's
-- prefix is managed, its readers get keys for the whole prefix, so a
-- writer's table below it is still refused (13); and one around a folder
-- the root is below, not the table's, still counts.
SET lance_namespace.root = 's3://lake/cat/tables';
SELECT lance_register_table('{"id": ["wns", "at_prefix"], "location": "s3://lake/cat"}') ->> 'location' AS by_admin;
SELECT pg_temp.declare_as_writer('{"id": ["wns", "under_prefix"]}');
SELECT lance_deregister_table('{"id": ["wns", "at_prefix"]}') ? 'location' AS deregistered;
SET lance_namespace.root = '/tmp/lance_namespace_locations/around/tables/deep/root';
SELECT lance_create_namespace('{"id": ["wns", "beside"], "properties": {"location": "/tmp/lance_namespace_locations/around/tables/deep/beside"}}') -> 'properties' AS by_admin;
SELECT lance_register_table('{"id": ["wns", "deep_outer"], "location": "/tmp/lance_namespace_locations/around/tables/deep"}') ->> 'location' AS by_admin;
SELECT pg_temp.declare_as_writer('{"id": ["wns", "beside", "t"]}');
SELECT lance_deregister_table('{"id": ["wns", "deep_outer"]}') ? 'location' AS deregistered;
-- Nor does one around a root stop a writer's namespace location below it
-- (15 before): here the root is on S3, where no setting manages it.
SET lance_namespace.root = 's3://open/tables';
SELECT lance_register_table('{"id": ["wns", "open_root"], "location": "s3://open"}') ->> 'location' AS by_admin;
SELECT pg_temp.try_as('regress_loc_writer', 'SELECT lance_create_namespace(''{"id": ["wns", "mine_open"], "properties": {"location": "s3://open/tables/mine"}}'')') AS namespace_below;
SELECT lance_drop_namespace('{"id": ["fresh"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SET lance_namespace.local_roots = '';
SET lance_namespace.root = '';

-- clean up
SELECT lance_drop_namespace('{"id": ["wns"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT lance_remove_storage('{"location": "s3://lake/cat"}') ->> 'location' AS removed;
DROP ROLE regress_loc_writer, regress_loc_admin;
