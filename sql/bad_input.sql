-- Malformed, out-of-range and hostile input to every function that takes an
-- ID, a time, a shard or a layout name: a clear error with the right
-- SQLSTATE, never a crash. Ordinary roles cannot touch the shared state.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
SET timezone = 'UTC';

-- Runs a statement; reports its SQLSTATE (or 'ok').
CREATE FUNCTION pg_temp.sqlstate_of(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END $$;

-- Extreme IDs through every decoder.
SELECT f, id, pg_temp.sqlstate_of(format('SELECT * FROM %s(%s)', f, id)) AS result
FROM unnest(ARRAY['trace_id_decode', 'trace_id_timestamp', 'snowflake_decode', 'snowflake_timestamp',
                  'instagram_decode', 'instagram_timestamp']) f,
     unnest(ARRAY[-9223372036854775808, -1, 0, 1, 9223372036854775807]) id
ORDER BY f, id;
SELECT l, id, pg_temp.sqlstate_of(format('SELECT * FROM id_decode(%L, %s)', l, id)) AS result
FROM unnest(ARRAY['twitter', 'discord', 'icicle']) l,
     unnest(ARRAY[-9223372036854775808, 0, 9223372036854775807]) id
ORDER BY l, id;

-- Extreme times.
SELECT t, pg_temp.sqlstate_of(format('SELECT snowflake_min_id(%L)', t)) AS min_id,
       pg_temp.sqlstate_of(format('SELECT id_compose(''instagram'', %L, 0, 0)', t)) AS compose,
       pg_temp.sqlstate_of(format('SELECT trace_id_timestamp(4567125011206242346, %L)', t)) AS trace_near
FROM unnest(ARRAY['-infinity', 'infinity', '4713-01-01 00:00:00+00 BC', '294276-12-31 23:59:59+00',
                  '1970-01-01 00:00:00+00', '2089-09-06 15:47:35.552+00']) t
ORDER BY t;

-- Extreme shards and sequences.
SELECT s, pg_temp.sqlstate_of(format('SELECT next_snowflake_id(%s)', s)) AS snowflake,
       pg_temp.sqlstate_of(format('SELECT next_instagram_id(%s)', s)) AS instagram,
       pg_temp.sqlstate_of(format('SELECT id_compose(''twitter'', now(), %s, 0)', s)) AS compose_shard,
       pg_temp.sqlstate_of(format('SELECT id_compose(''twitter'', now(), 0, %s)', s)) AS compose_sequence
FROM unnest(ARRAY[-2147483648, -1, 0, 1023, 1024, 8191, 8192, 2147483647]) s
ORDER BY s;

-- Hostile layout names: no injection, no overflow, a clean 42704 / 22023.
SELECT left(n, 40) AS name, length(n),
       pg_temp.sqlstate_of(format('SELECT next_id(%L)', n)) AS next_id,
       pg_temp.sqlstate_of(format('SELECT * FROM id_decode(%L, 1)', n)) AS decode,
       pg_temp.sqlstate_of(format('SELECT create_layout(%L, ''2024-01-01'', ''1 ms'', 41, 10, 12)', n)) AS create
FROM unnest(ARRAY['', ' ', 'snowflake ', 'SNOWFLAKE', 'snow''flake', 'x''); DROP TABLE shardid_user_layout; --',
                  'naïve', E'tab\there', repeat('a', 63), repeat('a', 64), repeat('z', 100000),
                  'shardid_user_layout', '%s%s%n']) n
ORDER BY n;
SELECT to_regclass('shardid_user_layout') IS NOT NULL AS catalog_still_there;
SELECT pg_temp.sqlstate_of('SELECT next_id(NULL, 1)') AS null_layout,
       pg_temp.sqlstate_of('SELECT create_layout(NULL, now(), ''1 ms'', 41, 10, 12)') AS null_create,
       pg_temp.sqlstate_of('SELECT create_layout(''x'', now(), NULL, 41, 10, 12)') AS null_unit,
       pg_temp.sqlstate_of('SELECT create_layout(''x'', ''infinity'', ''1 ms'', 41, 10, 12)') AS infinite_epoch,
       pg_temp.sqlstate_of('SELECT create_layout(''x'', ''1960-01-01'', ''1 ms'', 41, 10, 12)') AS epoch_before_1970,
       pg_temp.sqlstate_of('SELECT create_layout(''x'', now(), ''-1 ms'', 41, 10, 12)') AS negative_unit,
       pg_temp.sqlstate_of('SELECT create_layout(''x'', now(), ''1 ms'', 2147483647, 10, 12)') AS huge_width;

-- Ordinary roles: generate and decode, read the status, but nothing more.
CREATE ROLE shardid_plain;
SET ROLE shardid_plain;
SELECT pg_temp.sqlstate_of('SELECT next_snowflake_id()') AS generate,
       pg_temp.sqlstate_of('SELECT * FROM shardid_status') AS status,
       pg_temp.sqlstate_of('SET shardid.node_id = 1') AS set_node,
       pg_temp.sqlstate_of('SET shardid.clock_offset_ms = 86400000') AS set_offset,
       pg_temp.sqlstate_of('SET shardid.max_clock_lead = 0') AS set_lead,
       pg_temp.sqlstate_of('DELETE FROM shardid_user_layout') AS delete_layouts,
       pg_temp.sqlstate_of('TRUNCATE shardid_user_layout') AS truncate_layouts,
       pg_temp.sqlstate_of('SELECT pg_read_file(''shardid.hwm'')') AS read_mark;
RESET ROLE;
DROP ROLE shardid_plain;
