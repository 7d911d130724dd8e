--
-- Identity, not names, in the change log and in authorization: entries
-- record object ids and the caller's OID, grants and API keys the name
-- their role had with its OID; a feed reader that may see nothing still
-- advances.
--
SET client_min_messages = warning;
CREATE ROLE regress_fi_reader;
CREATE ROLE regress_fi_gateway;
SELECT max(seq) AS start FROM lance_catalog.change \gset

-- A namespace re-created under a dropped one's name does not show its
-- readers the old one's history.
SELECT lance_create_namespace('{"id": ["fi_ns"]}') ? 'transaction_id' AS created;
SELECT lance_register_table('{"id": ["fi_ns", "old"], "location": "s3://fi/old.lance"}') ? 'transaction_id' AS registered;
SELECT lance_drop_namespace('{"id": ["fi_ns"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT lance_create_namespace('{"id": ["fi_ns"]}') ? 'transaction_id' AS created_again;
SELECT lance_register_table('{"id": ["fi_ns", "new"], "location": "s3://fi/new.lance"}') ? 'transaction_id' AS registered;
SELECT lance_grant('{"id": ["fi_ns"], "role": "regress_fi_reader", "privilege": "read"}') ->> 'changed' AS granted;
SET ROLE regress_fi_reader;
SELECT seq - :start AS n, operation, objects FROM lance_changes(:start, 100) WHERE operation IS NOT NULL ORDER BY seq;
RESET ROLE;
-- entries name objects for display; ids say which object it was
SELECT c.seq - :start AS n, c.operation, c.objects,
       c.object_ids[1] = (SELECT id FROM lance_catalog.object WHERE name = 'fi_ns') AS this_fi_ns,
       c.namespace_ids[1] AS root, c.role_id = current_user::regrole AS by_me
  FROM lance_catalog.change c WHERE c.seq > :start ORDER BY c.seq;

-- "$" inside a name: namespace "fi$x" is not namespace "x" in "fi".
SELECT lance_create_namespace('{"id": ["fi"]}') ? 'transaction_id' AS created;
SELECT lance_create_namespace('{"id": ["fi", "x"]}') ? 'transaction_id' AS created;
SELECT lance_create_namespace('{"id": ["fi$x"]}') ? 'transaction_id' AS created;
SELECT lance_register_table('{"id": ["fi", "x", "t"], "location": "s3://fi/x/t.lance"}') ? 'transaction_id' AS registered;
SELECT lance_register_table('{"id": ["fi$x", "t"], "location": "s3://fi/dollar/t.lance"}') ? 'transaction_id' AS registered;
SELECT max(seq) AS dollar_start FROM lance_catalog.change WHERE operation = 'CreateNamespace' AND objects = '{fi}' \gset
SELECT lance_grant('{"id": ["fi$x"], "role": "regress_fi_reader", "privilege": "read"}') ->> 'changed' AS granted;
SET ROLE regress_fi_reader;
-- (objects shows both as "fi$x": namespace_ids tells them apart)
SELECT operation, objects, cardinality(namespace_ids) AS levels_above FROM lance_changes(:dollar_start, 100) WHERE operation IS NOT NULL ORDER BY seq;
RESET ROLE;
SELECT lance_revoke('{"id": ["fi$x"], "role": "regress_fi_reader", "privilege": "read"}') ->> 'changed' AS revoked;
SELECT lance_grant('{"id": ["fi", "x"], "role": "regress_fi_reader", "privilege": "read"}') ->> 'changed' AS granted;
SET ROLE regress_fi_reader;
SELECT operation, objects, cardinality(namespace_ids) AS levels_above FROM lance_changes(:dollar_start, 100) WHERE operation IS NOT NULL ORDER BY seq;
RESET ROLE;

-- A role re-created under a dropped role's name does not see that role's
-- entries (it is another role: another OID).
CREATE ROLE regress_fi_maker;
SELECT lance_grant('{"id": ["fi"], "role": "regress_fi_maker", "privilege": "write"}') ->> 'changed' AS granted;
SET ROLE regress_fi_maker;
SELECT lance_create_namespace('{"id": ["fi", "made"]}') ? 'transaction_id' AS made;
SELECT count(*) AS own_entries FROM lance_changes(:start, 1000) WHERE role_id = current_user::regrole;
RESET ROLE;
SELECT lance_revoke('{"id": ["fi", "made"], "role": "regress_fi_maker", "privilege": "manage"}') ->> 'changed' AS revoked;
DROP ROLE regress_fi_maker;
CREATE ROLE regress_fi_maker;
SET ROLE regress_fi_maker;
SELECT count(*) AS entries_of_the_old_role FROM lance_changes(:start, 1000) WHERE operation IS NOT NULL;
RESET ROLE;
DROP ROLE regress_fi_maker;

--
-- Grants and API keys go with their role: DROP ROLE removes them in its
-- transaction (a rollback keeps them), and a rename carries them along.
--
CREATE ROLE regress_fi_gone;
SELECT lance_grant('{"id": ["fi"], "role": "regress_fi_gone", "privilege": "read"}') ->> 'changed' AS granted;
SELECT lance_create_api_key('regress_fi_gone') AS gone_key \gset
BEGIN;
DROP ROLE regress_fi_gone;
ROLLBACK;
SELECT (SELECT count(*) FROM lance_catalog.grant WHERE role_name = 'regress_fi_gone') AS grants,
       (SELECT count(*) FROM lance_catalog.api_key WHERE role_name = 'regress_fi_gone') AS keys;
ALTER ROLE regress_fi_gone RENAME TO regress_fi_renamed;
SELECT lance_list_grants('{"id": ["fi"]}') -> 'grants' AS grants;
SET ROLE regress_fi_gateway;
SELECT status FROM lance_rest('GET', '/v1/namespace/fi/list', NULL, NULL, jsonb_build_object('x-api-key', :'gone_key'));
RESET ROLE;
DROP ROLE regress_fi_renamed;
SELECT (SELECT count(*) FROM lance_catalog.grant WHERE role_name IN ('regress_fi_gone', 'regress_fi_renamed')) AS grants,
       (SELECT count(*) FROM lance_catalog.api_key WHERE role_name IN ('regress_fi_gone', 'regress_fi_renamed')) AS keys;

-- Where the role is dropped without the library (another session, another
-- database), its grants and key stay, and pass to no role that gets its
-- OID later: a grant counts while the role with its OID has the name it
-- had.  (A role made with the same OID cannot be forced, so the rows are
-- pointed at a new role's OID, which is what they would find.)
CREATE ROLE regress_fi_old;
SELECT lance_grant('{"id": ["fi"], "role": "regress_fi_old", "privilege": "read"}') ->> 'changed' AS granted;
SELECT lance_create_api_key('regress_fi_old') AS old_key \gset
-- The rows such a drop leaves are kept aside and put back after the drop,
-- so that the test does not depend on whether this session's server
-- preloads the library (whose hook removes them).
CREATE TEMP TABLE fi_left_grants AS SELECT * FROM lance_catalog.grant WHERE role_name = 'regress_fi_old';
CREATE TEMP TABLE fi_left_keys AS SELECT * FROM lance_catalog.api_key WHERE role_name = 'regress_fi_old';
DROP ROLE regress_fi_old;
CREATE ROLE regress_fi_new;
DELETE FROM lance_catalog.grant WHERE role_name = 'regress_fi_old';
DELETE FROM lance_catalog.api_key WHERE role_name = 'regress_fi_old';
INSERT INTO lance_catalog.grant (object_id, role, privilege, granted_by, granted_at, role_name)
SELECT object_id, 'regress_fi_new'::regrole, privilege, granted_by, granted_at, role_name FROM fi_left_grants;
INSERT INTO lance_catalog.api_key (id, role, key_hash, created_by, created_at, role_name)
SELECT id, 'regress_fi_new'::regrole, key_hash, created_by, created_at, role_name FROM fi_left_keys;
SELECT (SELECT count(*) FROM fi_left_grants) AS grants_left, (SELECT count(*) FROM fi_left_keys) AS keys_left;
SET ROLE regress_fi_new;
SELECT lance_list_namespaces('{"id": []}') -> 'namespaces' AS namespaces_seen;
SELECT lance_describe_namespace('{"id": ["fi"]}');
RESET ROLE;
SELECT lance_list_grants('{"id": ["fi"]}') -> 'grants' AS grants;
SET ROLE regress_fi_gateway;
SELECT status FROM lance_rest('GET', '/v1/namespace/fi/list', NULL, NULL, jsonb_build_object('x-api-key', :'old_key'));
RESET ROLE;
-- granted again, the row names the role it counts for now
SELECT lance_grant('{"id": ["fi"], "role": "regress_fi_new", "privilege": "read"}') ->> 'changed' AS granted;
SET ROLE regress_fi_new;
SELECT lance_describe_namespace('{"id": ["fi"]}') ? 'properties' AS described;
RESET ROLE;
DROP ROLE regress_fi_new;
SELECT count(*) AS rows_left FROM lance_catalog.grant WHERE role_name IN ('regress_fi_old', 'regress_fi_new');
DELETE FROM lance_catalog.api_key WHERE role_name = 'regress_fi_old';

--
-- A reader that may see none of the entries still advances: a last row
-- with only seq set carries the number it scanned up to.
--
CREATE ROLE regress_fi_none;
SELECT max(seq) AS before_hidden FROM lance_catalog.change \gset
SELECT count(lance_create_table_version(jsonb_build_object('id', '["fi", "x", "t"]'::jsonb,
           'version', v, 'manifest_path', 'm/' || v))) AS hidden_entries
  FROM generate_series(1, 5) v;
SELECT max(seq) AS last_seq FROM lance_catalog.change \gset
SET ROLE regress_fi_none;
SELECT seq = :last_seq AS scanned_to_the_end, operation, objects, transaction_id
  FROM lance_changes(:before_hidden, 100);
-- asked again from there: nothing
SELECT count(*) AS after_the_position FROM lance_changes(:last_seq, 100);
-- the position row counts against max_entries: with 0, no row at all
SELECT count(*) AS rows FROM lance_changes(:before_hidden, 0);
RESET ROLE;
-- the reader of fi$x gets the entries it may see, then the position
SELECT lance_grant('{"id": ["fi$x"], "role": "regress_fi_none", "privilege": "read"}') ->> 'changed' AS granted;
SELECT lance_create_table_version('{"id": ["fi$x", "t"], "version": 1, "manifest_path": "d/1"}') ? 'transaction_id' AS visible;
SELECT lance_create_table_version('{"id": ["fi", "x", "t"], "version": 9, "manifest_path": "m/9"}') ? 'transaction_id' AS hidden;
SELECT max(seq) AS last_seq FROM lance_catalog.change \gset
SET ROLE regress_fi_none;
SELECT operation, objects, versions, seq = :last_seq AS at_the_end FROM lance_changes(:before_hidden, 100) ORDER BY seq;
RESET ROLE;

-- One call looks at no more than ten entries per entry it may answer, at
-- least 100: a reader that may see none of 130 entries gets, asking for 5,
-- the position row at 100 entries on, then at the end.
SELECT max(seq) AS before_many FROM lance_catalog.change \gset
SELECT count(lance_create_table_version(jsonb_build_object('id', '["fi", "x", "t"]'::jsonb,
           'version', v, 'manifest_path', 'm/' || v))) AS hidden_entries
  FROM generate_series(100, 229) v;
SET ROLE regress_fi_none;
SELECT seq - :before_many AS scanned, operation FROM lance_changes(:before_many, 5);
SELECT seq - :before_many AS scanned, operation FROM lance_changes(:before_many + 100, 5);
-- asking for 20 looks at up to 200
SELECT seq - :before_many AS scanned, operation FROM lance_changes(:before_many, 20);
RESET ROLE;

-- Names do not leak through the feed: a table moved out of a namespace the
-- reader cannot see keeps that namespace's name in its entries, which the
-- reader is not shown while that namespace is there (every namespace on an
-- entry's paths counts, not only the object's last one), nor once it is
-- gone (its nearest namespace still there, here the root, counts).
CREATE ROLE regress_fi_mallory;
SELECT max(seq) AS leak_start FROM lance_catalog.change \gset
SELECT lance_create_namespace('{"id": ["fi_hr_secret"]}') ? 'transaction_id' AS created;
SELECT lance_create_namespace('{"id": ["fi_pub"]}') ? 'transaction_id' AS created;
SELECT lance_grant('{"id": ["fi_pub"], "role": "regress_fi_mallory", "privilege": "read"}') ->> 'changed' AS granted;
SELECT lance_declare_table('{"id": ["fi_hr_secret", "plan_2027"], "location": "s3://fi/plan.lance"}') ? 'location' AS declared;
SELECT lance_rename_table('{"id": ["fi_hr_secret", "plan_2027"], "new_table_name": "tbl", "new_namespace_id": ["fi_pub"]}') ? 'transaction_id' AS moved;
SELECT lance_rename_table('{"id": ["fi_pub", "tbl"], "new_table_name": "tbl2"}') ? 'transaction_id' AS renamed_in_pub;
SET ROLE regress_fi_mallory;
SELECT operation, objects FROM lance_changes(:leak_start, 100) WHERE operation IS NOT NULL ORDER BY seq;
SELECT lance_describe_namespace('{"id": ["fi_hr_secret"]}');
RESET ROLE;
SELECT lance_drop_namespace('{"id": ["fi_hr_secret"]}') ? 'transaction_id' AS dropped;
SET ROLE regress_fi_mallory;
SELECT operation, objects FROM lance_changes(:leak_start, 100) WHERE operation IS NOT NULL ORDER BY seq;
RESET ROLE;
-- read on the root shows them all
SELECT lance_grant('{"id": [], "role": "regress_fi_mallory", "privilege": "read"}') ->> 'changed' AS granted;
SET ROLE regress_fi_mallory;
SELECT operation, objects FROM lance_changes(:leak_start, 100) WHERE operation IS NOT NULL ORDER BY seq;
RESET ROLE;
SELECT lance_revoke('{"id": [], "role": "regress_fi_mallory", "privilege": "read"}') ->> 'changed' AS revoked;
SELECT lance_drop_namespace('{"id": ["fi_pub"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
DROP ROLE regress_fi_mallory;

SELECT lance_drop_namespace('{"id": ["fi_ns"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT lance_drop_namespace('{"id": ["fi"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
SELECT lance_drop_namespace('{"id": ["fi$x"], "behavior": "Cascade"}') ? 'transaction_id' AS dropped;
DROP ROLE regress_fi_reader, regress_fi_gateway, regress_fi_none;
