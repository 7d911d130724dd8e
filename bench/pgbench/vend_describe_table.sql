-- (7c) DescribeTable of a table on S3 whose storage setting vends :vend
-- (sts: temporary credentials, kept by the backend after its first call;
-- none: no keys), called directly in SQL by a writer (the superuser).
SELECT lance_describe_table(format('{"id": ["b7", "%s"]}', :vend::text)::jsonb);
