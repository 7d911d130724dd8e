-- (4g) ListAllTables, the first page of 100 tables, in the large catalog: as
-- an administrator, and as lance_bench_reader, a role with read on one
-- namespace in the middle of the catalog (the variant's PGOPTIONS set role).
SELECT lance_list_all_tables('{"limit": 100}');
