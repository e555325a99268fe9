-- Each rule lives once, in the C++ core. Where SQL must repeat one (a
-- table's CHECK, a sequence's bound, a PL/pgSQL test), this file checks
-- that the repetition agrees with the core, case by case at the edges, so
-- a change on one side alone fails here.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;

-- Does a statement succeed? (rolled back either way)
CREATE FUNCTION pg_temp.accepts(stmt text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        EXECUTE stmt;
        RAISE EXCEPTION USING ERRCODE = 'P0003';
    EXCEPTION
        WHEN SQLSTATE 'P0003' THEN RETURN true;
        WHEN OTHERS THEN RETURN false;
    END;
END $$;

-- 1. Names: the core's rule (shardid_check_layout, create_layout's check),
--    the key ring's CHECK and create_obfuscation_key's own test agree.
SELECT n AS name,
       pg_temp.accepts(format('SELECT shardid_check_layout(%L, ''2024-01-01'', ''1 ms'', 41, 0, 12)', n)) AS core,
       pg_temp.accepts(format('INSERT INTO shardid_key (name, secret) VALUES (%L, ''\x00112233445566778899aabbccddeeff'')', n)) AS key_check,
       pg_temp.accepts(format('SELECT create_obfuscation_key(%L)', n)) AS key_function
FROM unnest(ARRAY['a', '_', '9', 'a_1', repeat('x', 63), repeat('x', 64), '', 'A', 'a-b', 'a b', 'é', 'a.b']) n;

-- 2. Widths: the core (shardid_check_layout) and the catalog's CHECKs accept the
--    same (time, shard, sequence) bits.
SELECT t, s, q,
       pg_temp.accepts(format('SELECT shardid_check_layout(''w'', ''2024-01-01'', ''1 ms'', %s, %s, %s)', t, s, q)) AS core,
       pg_temp.accepts(format('INSERT INTO shardid_user_layout (name, epoch, time_unit, time_bits, shard_bits, sequence_bits) VALUES (''w'', ''2024-01-01'', ''1 ms'', %s, %s, %s)', t, s, q)) AS catalog_check
FROM (VALUES (1, 0, 1), (62, 0, 1), (1, 61, 1), (1, 0, 62), (41, 10, 12), (41, 10, 13), (0, 10, 12), (41, 10, 0),
             (63, 0, 0), (1, 62, 0), (20, 20, 23), (20, 20, 24), (-1, 10, 12), (41, -1, 12)) v(t, s, q)
ORDER BY t, s, q;

-- 3. DecimalId's five-digit fields: the generator sequence's bound and the
--    launch id setting's range (from the core) agree.
SELECT s.seqmax AS generator_seq_max, g.max_val::bigint AS launch_id_max, s.seqmax = g.max_val::bigint AS agree
FROM pg_sequence s, pg_settings g
WHERE s.seqrelid = 'shardid_generator_seq'::regclass AND g.name = 'shardid.launch_id';
SELECT (decimal_id_decode(10000000000 * 1 + 100000 * (max_val::bigint) + 1)).generator_id = max_val::int AS fits
FROM pg_settings WHERE name = 'shardid.launch_id';

-- 4. The eight-byte cluster id: the setting's range and the builder's.
SELECT max_val::int AS cluster_id_max,
       pg_temp.accepts(format('SELECT eightbyte_id_build(now(), 0, 0, %s, ''spread'')', max_val)) AS builds_max,
       pg_temp.accepts(format('SELECT eightbyte_id_build(now(), 0, 0, %s, ''spread'')', max_val::int + 1)) AS builds_above
FROM pg_settings WHERE name = 'shardid.cluster_id';

-- 5. TraceId's window: trace_id_created_within accepts periods that start
--    no earlier than 2^25 s before their end plus a day, the window that
--    trace_id_timestamp(id, near) resolves into (both from the core).
SELECT pg_temp.accepts($$SELECT trace_id_created_within(1::bigint << 22 | 1,
           tstzrange('2026-01-01'::timestamptz + interval '1 day' - (2^25)::int * interval '1 s', '2026-01-01'))$$) AS at_window,
       pg_temp.accepts($$SELECT trace_id_created_within(1::bigint << 22 | 1,
           tstzrange('2026-01-01'::timestamptz + interval '1 day' - (2^25)::int * interval '1 s' - interval '1 ms', '2026-01-01'))$$) AS beyond_window;

-- 6. Reserved names: presets and names kept for later presets are refused.
SELECT n, pg_temp.accepts(format('SELECT create_layout(%L, ''2024-01-01'', ''1 ms'', 41, 0, 12)', n)) AS accepted
FROM unnest(ARRAY['snowflake', 'instagram', 'uuidv7', 'sonyflake', 'ulid', 'uuidv7_orders']) n;
\set VERBOSITY sqlstate
SELECT create_layout('uuidv7', '2024-01-01', '1 ms', 41, 0, 12);
\set VERBOSITY default

-- 7. Call-number run ids: the run sequence's bound and the core's 30-bit
--    run field agree (its largest value composes and reads back; one more
--    does not compose).
SELECT s.seqmax AS run_seq_max,
       (call_number_decode(call_number_compose(0, s.seqmax::int, 0))).run_id = s.seqmax AS composes_max,
       pg_temp.accepts(format('SELECT call_number_compose(0, %s, 0)', s.seqmax + 1)) AS composes_above
FROM pg_sequence s WHERE s.seqrelid = 'shardid_run_seq'::regclass;
