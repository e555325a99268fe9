-- Sharding: moving a logical shard to this node (shardid_advance_past) and
-- tables partitioned by the time inside their IDs.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
SET timezone = 'UTC';
\set VERBOSITY default

-- A logical shard arrives from a node whose clock is 5 s ahead: its highest
-- ID is 5 s in this node's future.
SELECT id_compose('instagram', clock_timestamp() + interval '5 s', 5, 1000 % 1024) AS moved_max \gset
-- Without the step, this node's next ID of shard 5 sorts below it.
SELECT next_instagram_id(5) < :moved_max AS below_without_the_step;
-- With it, every later ID sorts above, for the moved shard and any other.
SELECT shardid_advance_past('instagram', :moved_max) BETWEEN interval '3 s' AND interval '5 s' AS lead_reported;
SELECT bool_and(next_instagram_id(5) > :moved_max) AND bool_and(next_instagram_id(6) > :moved_max) AS above
FROM generate_series(1, 2000);
-- The node state covers it durably before the call returns, and
-- shardid_status shows the lead.
SELECT high_water_mark > instagram_timestamp(:moved_max) AS mark_covers_it, clock_lead_ms > 2000 AS lead_shown
FROM shardid_status WHERE layout = 'instagram';
-- Advancing past an older ID changes nothing; NULL (an empty shard) is NULL.
SELECT last_tick_at AS tick_before FROM shardid_status WHERE layout = 'instagram' \gset
SELECT shardid_advance_past('instagram', id_compose('instagram', now() - interval '1 day', 5, 0)) > interval '0' AS still_leads;
SELECT last_tick_at = :'tick_before' AS unchanged FROM shardid_status WHERE layout = 'instagram';
SELECT shardid_advance_past('instagram', NULL) IS NULL AS null_is_null;

-- Bounded by shardid.max_clock_lead (10 s here): a shard from a node 60 s
-- ahead is refused, and nothing moves; with a lead of 20 s, 15 s is allowed.
\set VERBOSITY sqlstate
SELECT shardid_advance_past('instagram', id_compose('instagram', clock_timestamp() + interval '60 s', 5, 0));
SELECT shardid_advance_past('instagram', -1);
SELECT shardid_advance_past('no_such_layout', 1);
\set VERBOSITY default
SELECT last_tick_at = :'tick_before' AS unchanged_after_refusal FROM shardid_status WHERE layout = 'instagram';
ALTER SYSTEM SET shardid.max_clock_lead = '20s';  -- the whole server's, reloaded
SELECT pg_reload_conf() AS reloaded, pg_sleep(0.5) IS NOT NULL AS waited;
SHOW shardid.max_clock_lead;
SELECT shardid_advance_past('instagram', id_compose('instagram', clock_timestamp() + interval '15 s', 5, 0)) > interval '12 s'
    AS allowed_within_a_larger_lead;
ALTER SYSTEM RESET shardid.max_clock_lead;
SELECT pg_reload_conf() AS reloaded, pg_sleep(0.5) IS NOT NULL AS waited;
SHOW shardid.max_clock_lead;

-- Superusers only: PUBLIC cannot call it, and a grant is not enough.
CREATE ROLE sharding_mover;
SET ROLE sharding_mover;
SELECT shardid_advance_past('instagram', 1);
RESET ROLE;
GRANT EXECUTE ON FUNCTION shardid_advance_past(text, bigint) TO sharding_mover;
SET ROLE sharding_mover;
SELECT shardid_advance_past('instagram', 1);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION shardid_advance_past(text, bigint) FROM sharding_mover;
DROP ROLE sharding_mover;
SELECT proname, provolatile, proisstrict, proparallel FROM pg_proc WHERE proname = 'shardid_advance_past';

-- Partitions by the time inside the ID: range partitions on a snowflake ID
-- column with bounds from snowflake_min_id(), relative to now so that the
-- plans below never depend on the hour the test runs.
CREATE TABLE events (id bigint NOT NULL DEFAULT next_snowflake_id(), payload text) PARTITION BY RANGE (id);
DO $$
BEGIN
    EXECUTE format('CREATE TABLE events_old PARTITION OF events FOR VALUES FROM (%s) TO (%s)',
                   snowflake_min_id(now() - interval '3 days'), snowflake_min_id(now() - interval '1 day'));
    EXECUTE format('CREATE TABLE events_recent PARTITION OF events FOR VALUES FROM (%s) TO (%s)',
                   snowflake_min_id(now() - interval '1 day'), snowflake_min_id(now() + interval '1 day'));
    EXECUTE format('CREATE TABLE events_next PARTITION OF events FOR VALUES FROM (%s) TO (%s)',
                   snowflake_min_id(now() + interval '1 day'), snowflake_min_id(now() + interval '3 days'));
END $$;
INSERT INTO events (id, payload)
SELECT id_compose('snowflake', now() - g * interval '1 minute', 7, 0), 'old ' || g FROM generate_series(1, 3000, 7) g;
INSERT INTO events (payload) SELECT 'new ' || g FROM generate_series(1, 100) g;
SELECT tableoid::regclass AS partition, count(*) FROM events GROUP BY 1 ORDER BY 1;
-- What a plan reads: its scans and the partitions it removed (values
-- vary with the time the test runs, so only these lines are shown).
CREATE FUNCTION scans(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line ~ '(Scan on|Subplans Removed|One-Time Filter: false)' THEN
            RETURN NEXT regexp_replace(trim(line), '^->  ', '');
        END IF;
    END LOOP;
END $$;
-- Constant bounds, from timestamps known when planning: pruned by the
-- planner; an hour two days ago reads only the old partition.
SELECT (now() - interval '2 days')::text AS two_days_ago \gset
SELECT scans(format('SELECT count(*) FROM events WHERE id >= snowflake_min_id(%L) AND id < snowflake_min_id(%L)',
                    :'two_days_ago', (:'two_days_ago'::timestamptz + interval '1 hour')::text));
-- now()-relative bounds: pruned when the executor starts; the last hour
-- reads only the recent partition.
SELECT scans('SELECT count(*) FROM events WHERE id >= snowflake_min_id(now() - interval ''1 hour'') AND id < snowflake_min_id(now())');
-- The same periods through snowflake_created_within(): its planner support
-- adds the period's ID range to the call, which prunes in the same ways.
SELECT scans(format('SELECT count(*) FROM events WHERE snowflake_created_within(id, tstzrange(%L, %L))',
                    :'two_days_ago', (:'two_days_ago'::timestamptz + interval '1 hour')::text));
SELECT scans('SELECT count(*) FROM events WHERE snowflake_created_within(id, tstzrange(now() - interval ''1 hour'', now()))');
SELECT count(*) = 100 + (SELECT count(*) FROM generate_series(1, 60, 7)) AS last_hour_rows
FROM events WHERE id >= snowflake_min_id(now() - interval '1 hour') AND id < snowflake_min_id(clock_timestamp());
SELECT count(*) = 100 + (SELECT count(*) FROM generate_series(1, 60, 7)) AS last_hour_rows_created_within
FROM events WHERE snowflake_created_within(id, tstzrange(now() - interval '1 hour', clock_timestamp()));
-- The rewritten predicate is the same predicate: for periods around
-- existing rows (bounds inclusive or not, a millisecond either side), each
-- planned as a constant, the call selects exactly the rows whose time lies
-- in the period.
CREATE FUNCTION disagreements() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    p tstzrange;
    by_call bigint;
    by_time bigint;
    n bigint := 0;
BEGIN
    FOR p IN
        SELECT tstzrange(snowflake_timestamp(e.id) - interval '1 ms' * (e.g % 3),
                         snowflake_timestamp(e.id) + interval '1 ms' * (e.g % 2),
                         (ARRAY['[]', '[)', '(]', '()'])[1 + e.g % 4])
        FROM (SELECT id, row_number() OVER (ORDER BY id) AS g FROM events) e WHERE e.g % 5 = 0
    LOOP
        EXECUTE format('SELECT count(*) FROM events WHERE snowflake_created_within(id, %L::tstzrange)', p) INTO by_call;
        EXECUTE format('SELECT count(*) FROM events WHERE snowflake_timestamp(id) <@ %L::tstzrange', p) INTO by_time;
        IF by_call <> by_time THEN
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END $$;
SELECT disagreements();
DROP FUNCTION disagreements();
DROP TABLE events;
DROP FUNCTION scans(text);

-- What pg_partman's p_time_encoder / p_time_decoder demand of a pair of
-- functions: IMMUTABLE, NULL on NULL (STRICT), and an exact round trip of
-- the partition boundaries (whole milliseconds).
SELECT p.oid::regprocedure AS function, provolatile = 'i' AS immutable, proisstrict AS strict
FROM pg_proc p
WHERE p.oid IN ('snowflake_min_id(timestamptz)'::regprocedure, 'snowflake_timestamp(bigint)'::regprocedure,
                'instagram_min_id(timestamptz)'::regprocedure, 'instagram_timestamp(bigint)'::regprocedure)
ORDER BY 1::text;
SELECT bool_and(snowflake_timestamp(snowflake_min_id(t)) = t) AS snowflake_round_trip,
       bool_and(instagram_timestamp(instagram_min_id(t)) = t) AS instagram_round_trip,
       bool_and(snowflake_min_id(snowflake_timestamp(snowflake_min_id(t))) = snowflake_min_id(t)) AS snowflake_id_round_trip
FROM (SELECT date_trunc('milliseconds', timestamptz '2026-11-01 00:00:00+00' + g * interval '37 minutes 11.123 s') AS t
      FROM generate_series(0, 5000) g) s;
