\set ECHO none
--
-- pg_temp.outcome(call): run the statement `call` and answer 'ok', or its
-- SQLSTATE and the code of the ErrorResponse in its DETAIL ("LN013 code
-- 13"), for the regression tests that check the errors of many calls at
-- once (\i from the repository root, where pg_regress runs).  Echo is off
-- while it loads so that each expected file does not repeat it.
--
CREATE FUNCTION pg_temp.outcome(call text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    detail text;
BEGIN
    EXECUTE call;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
    RETURN SQLSTATE || ' code ' || (detail::jsonb ->> 'code');
END
$$;
\set ECHO all
