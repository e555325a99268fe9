-- TraceId: generation, decoding, clock rules and errors.
-- Runs with shardid.node_id = 7 (test/regress/regress.conf).
CREATE EXTENSION shardid;
SET timezone = 'UTC';
-- Runs a statement and reports its SQLSTATE and message, with the figures
-- that depend on the moment (milliseconds) masked.
CREATE FUNCTION pg_temp.error_of(statement text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, '\d+ ms', 'N ms');
END $$;

-- A fresh ID: positive, node 7 in bits 37..22, counter never 0.
SELECT id > 0 AS positive, (id >> 22) & 65535 AS node_bits, (id & 4194303) > 0 AS counter_not_zero
FROM (SELECT next_trace_id() AS id) s;

-- Its second: from now()'s to the clock's when it is read (TraceId keeps
-- seconds), whatever the machine's load; 2 s more above for a node state
-- that leads the clock a little after a restart. TraceIds read the kernel's
-- coarse clock (src/core/clock.hpp), which may lag now()'s precise one by a
-- tick or a few (a fresh-machine run: an ID of the second before now()'s,
-- now() just past a second's start): the lower end is 50 ms before now().
SELECT node_no, counter > 0 AS counter_ok,
       created_at BETWEEN date_trunc('second', now() - interval '50 milliseconds')
                      AND clock_timestamp() + interval '2 seconds' AS within_the_statement
FROM trace_id_decode(next_trace_id());

SELECT trace_id_timestamp(id) = (trace_id_decode(id)).created_at AS timestamp_matches_decode
FROM (SELECT next_trace_id() AS id) s;

-- One million in one statement: distinct, strictly increasing in generation
-- order, all on node 7, first and last within the statement (from now()'s
-- second, the coarse clock's lag allowed as above, to the clock's when they
-- are checked, after all were made, and 2 s as above: on a busy machine the
-- statement alone can take 2 s).
WITH g AS (SELECT n, next_trace_id() AS id FROM generate_series(1, 1000000) n),
     o AS (SELECT n, id, lag(id) OVER (ORDER BY n) AS prev FROM g)
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(prev IS NULL OR id > prev) AS strictly_increasing,
       bool_and((id >> 22) & 65535 = 7) AS all_node_7,
       bool_and(n NOT IN (1, 1000000)
                OR trace_id_timestamp(id) BETWEEN date_trunc('second', now() - interval '50 milliseconds')
                                              AND clock_timestamp() + interval '2 seconds') AS ends_within_the_statement
FROM o;

-- Decoding a hand-built ID: second 1795000000 (2026-11-18 11:06:40 UTC),
-- node 7, counter 42.
SELECT * FROM trace_id_decode(((1795000000::bigint & 33554431) << 38) | (7 << 22) | 42,
                              '2026-11-18 00:00:00+00');
-- The 25-bit time repeats every 2^25 s (about 388 days): the same ID
-- resolves to the latest match not after near + 1 day.
SELECT trace_id_timestamp(((1795000000::bigint & 33554431) << 38) | (7 << 22) | 42, near) AS resolved, near
FROM (VALUES (timestamptz '2026-11-17 11:06:40+00'),   -- exactly 1 day before: still this one
             (timestamptz '2026-11-17 11:06:39+00'),   -- 1 s earlier: the previous period
             (timestamptz '2027-11-01 00:00:00+00')) v(near);
SELECT trace_id_decode(NULL) IS NULL AS strict;

-- Values that cannot be TraceIds.
\set VERBOSITY default
SELECT trace_id_decode(0);
\echo :LAST_ERROR_SQLSTATE
SELECT trace_id_decode(-42);
\echo :LAST_ERROR_SQLSTATE
SELECT trace_id_decode((123::bigint << 38) | (7 << 22));
\echo :LAST_ERROR_SQLSTATE
SELECT trace_id_timestamp(((123::bigint) << 38) | 1, 'infinity');
\echo :LAST_ERROR_SQLSTATE

-- The wall clock steps back a minute: IDs keep increasing, from the same
-- logical second. The clock and the lead are the whole server's (set in
-- its configuration and reloaded; a session cannot set them), so the
-- reload is waited for before each step.
CREATE TEMP TABLE before_step AS SELECT next_trace_id() AS id;
ALTER SYSTEM SET shardid.clock_offset_ms = -60000;
SELECT pg_reload_conf() AS reloaded, pg_sleep(0.5) IS NOT NULL AS waited;
SHOW shardid.clock_offset_ms;
CREATE TEMP TABLE after_step AS SELECT next_trace_id() AS id;
SELECT a.id > b.id AS larger, a.id >> 38 = b.id >> 38 AS same_logical_second
FROM before_step b, after_step a;

-- While the clock is behind, using up the second's 4,194,303 counters would
-- move the logical clock 60 s ahead of it: past shardid.max_clock_lead the
-- statement fails.
ALTER SYSTEM SET shardid.max_clock_lead = '10s';
SELECT pg_reload_conf() AS reloaded, pg_sleep(0.5) IS NOT NULL AS waited;
SHOW shardid.max_clock_lead;
SELECT pg_temp.error_of('SELECT count(next_trace_id()) FROM generate_series(1, 4194304)');
-- With a larger lead allowed, the logical clock moves one second ahead, and
-- a full second of counters (4,194,303) fits in it.
ALTER SYSTEM SET shardid.max_clock_lead = '5min';
SELECT pg_reload_conf() AS reloaded, pg_sleep(0.5) IS NOT NULL AS waited;
SHOW shardid.max_clock_lead;
WITH g AS (SELECT n, next_trace_id() AS id FROM generate_series(1, 4194303) n),
     o AS (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM g)
SELECT count(*) AS ids, bool_and(prev IS NULL OR id > prev) AS strictly_increasing,
       (SELECT max(id) FROM o) >> 38 = ((SELECT id FROM after_step) >> 38) + 1 AS moved_one_second
FROM o;
ALTER SYSTEM RESET shardid.max_clock_lead;
ALTER SYSTEM RESET shardid.clock_offset_ms;
SELECT pg_reload_conf() AS reloaded, pg_sleep(0.5) IS NOT NULL AS waited;
SHOW shardid.clock_offset_ms;
SELECT next_trace_id() > (SELECT id FROM after_step) AS still_larger_after_reset;

-- Parallel workers share the node-wide state with their leader.
CREATE TABLE rows_for_workers AS SELECT x FROM generate_series(1, 200000) x;
ANALYZE rows_for_workers;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT next_trace_id() FROM rows_for_workers;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids
FROM (SELECT next_trace_id() AS id FROM rows_for_workers) s;
RESET ALL;
DROP TABLE rows_for_workers;

-- As a column default.
CREATE TABLE orders (id bigint PRIMARY KEY DEFAULT next_trace_id(), item text);
INSERT INTO orders (item) SELECT 'item ' || g FROM generate_series(1, 1000) g;
SELECT count(*), count(DISTINCT id), bool_and(id > 0) FROM orders;
SELECT node_no, count(*) FROM orders, trace_id_decode(id) GROUP BY node_no;
DROP TABLE orders;
