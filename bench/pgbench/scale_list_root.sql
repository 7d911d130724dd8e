-- (4f) ListNamespaces of the root, a page of 100 names, in the large catalog:
-- as an administrator, and as lance_bench_reader, a role with read on one
-- namespace (the variant's PGOPTIONS set role), whose root lists that one.
SELECT lance_list_namespaces('{"id": [], "limit": 100}');
