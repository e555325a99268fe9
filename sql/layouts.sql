-- Snowflake, Instagram and user-defined layouts: generate, decode, query by time.
-- Runs with shardid.node_id = 7.
SET client_min_messages = warning;  -- the same output alone or after other tests
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
SET timezone = 'UTC';
\set VERBOSITY default

SELECT name, builtin, epoch, time_unit, time_bits, shard_bits, sequence_bits, total_bits,
       javascript_safe, shards, ids_per_tick, ends_at
FROM shardid_layouts ORDER BY name;

-- IDs other systems published decode to the times, shards and sequences
-- those systems document.
-- Tweet 204697221847986177, created Mon May 21 22:16:35 +0000 2012:
-- datacenter 1 and worker 3 read together as shard 35.
SELECT * FROM id_decode('twitter', 204697221847986177);
-- Discord's documented examples (shard = worker << 5 | process).
SELECT id, d.*, (d.shard >> 5) AS worker, (d.shard & 31) AS process
FROM (VALUES (175928847299117063), (105484726235607040), (90339695967350784)) v(id),
     id_decode('discord', id) d;
-- Icicle's own test vector: time 1489959427000 ms, shard 789, sequence 456.
SELECT * FROM id_decode('icicle', 143322835047240136);
-- Instagram media posted 2020-08-26T13:43:27Z and 2020-08-25T13:52:46Z.
SELECT id, d.* FROM (VALUES (2384288897814875714), (2383568809444681765)) v(id), instagram_decode(id) d;
-- The Instagram engineering post's example: shard 1341, sequence 5001 % 1024.
SELECT shard, sequence FROM instagram_decode((1387263000::bigint << 23) | (1341 << 10) | 905);
SELECT instagram_timestamp(2384288897814875714), id_timestamp('instagram', 2384288897814875714);

-- Generation: the shard argument, or shardid.node_id when NULL or omitted.
SELECT d.shard, d.created_at > now() - interval '2 s' AS recent
FROM (VALUES (next_snowflake_id()), (next_snowflake_id(NULL)), (next_snowflake_id(1023)),
             (next_id('snowflake')), (next_id('discord', 33))) v(id),
     snowflake_decode(id) d;
SELECT d.shard FROM (VALUES (next_instagram_id(1341)), (next_instagram_id(8191)), (next_instagram_id())) v(id),
     instagram_decode(id) d;
SELECT (SELECT shard FROM id_decode('discord', next_id('discord', 33))) AS discord_shard,
       (SELECT shard FROM id_decode('twitter', next_id('twitter', 1000))) AS twitter_shard;

-- Shards out of range: 22003, naming the range.
SELECT next_snowflake_id(1024);
\echo :LAST_ERROR_SQLSTATE
SELECT next_snowflake_id(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT next_instagram_id(8192);
\echo :LAST_ERROR_SQLSTATE
SET shardid.node_id = 2000;
SELECT next_snowflake_id();
\echo :LAST_ERROR_SQLSTATE
SELECT (SELECT shard FROM instagram_decode(next_instagram_id())) AS instagram_takes_2000;
RESET shardid.node_id;

-- Two million in one statement: no duplicates, strictly increasing, and the
-- 4,096-per-ms cap met by waiting, not by running ahead of the clock.
WITH g AS (SELECT n, next_snowflake_id() AS id FROM generate_series(1, 2000000) n),
     o AS (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM g)
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(prev IS NULL OR id > prev) AS strictly_increasing,
       snowflake_timestamp(max(id)) <= clock_timestamp() + interval '100 ms' AS not_ahead_of_clock,
       snowflake_timestamp(max(id)) - snowflake_timestamp(min(id)) >= interval '488 ms' AS took_at_least_2m_over_4096_ms
FROM o;
-- The same for Instagram's 1,024 per ms.
WITH g AS (SELECT n, next_instagram_id(5) AS id FROM generate_series(1, 2000000) n),
     o AS (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM g)
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(prev IS NULL OR id > prev) AS strictly_increasing,
       instagram_timestamp(max(id)) <= clock_timestamp() + interval '100 ms' AS not_ahead_of_clock,
       instagram_timestamp(max(id)) - instagram_timestamp(min(id)) >= interval '1953 ms' AS took_at_least_2m_over_1024_ms
FROM o;

-- id_compose and id_decode are inverses over the edges of every field of
-- every built-in layout.
WITH edges AS (
    SELECT l.name, t, s, q
    FROM shardid_layouts l,
         unnest(ARRAY[l.epoch, l.epoch + interval '1 ms', l.ends_at - interval '1 ms']) t,
         unnest(ARRAY[0, l.shards - 1]) s,
         unnest(ARRAY[0, l.ids_per_tick - 1]) q
    WHERE l.builtin AND NOT (t = l.epoch AND s = 0 AND q = 0))
SELECT count(*) AS cases,
       bool_and(d.created_at = e.t AND d.shard = e.s AND d.sequence = e.q) AS all_round_trip
FROM edges e, id_decode(e.name, id_compose(e.name, e.t, e.s::int, e.q::int)) d;
SELECT id_compose('snowflake', '2020-01-01 00:00:00.001+00', 0, 0) AS one_tick,
       id_compose('snowflake', '2020-01-01 00:00:00.001999+00', 1, 2) AS floored_to_the_ms,
       id_compose('icicle', to_timestamp(1489959427), 789, 456) AS icicle_vector;

-- Time bounds.
SELECT snowflake_min_id('2020-01-01 00:00:00.005+00') = 5::bigint << 22 AS min_is_first_of_tick,
       snowflake_min_id('1999-01-01') AS before_epoch,
       instagram_min_id('2020-08-26 13:43:27.313+00') <= 2384288897814875714 AS includes_the_post,
       instagram_min_id('2020-08-26 13:43:27.314+00') > 2384288897814875714 AS excludes_the_post,
       id_min('twitter', '2012-05-21 22:16:35.436+00') <= 204697221847986177 AS includes_the_tweet;

-- A time-range filter on the primary key is an index range scan, and finds
-- exactly the rows whose decoded time is in range.
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT next_snowflake_id(), payload text);
INSERT INTO events (id, payload)
SELECT id_compose('snowflake', '2026-11-20 12:00:00.5+00'::timestamptz - g * interval '1 minute', 7, 0), 'row ' || g
FROM generate_series(1, 600) g;
ANALYZE events;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM events WHERE id >= snowflake_min_id(now() - interval '1 hour');
SELECT count(*) AS by_index,
       (SELECT count(*) FROM events WHERE snowflake_timestamp(id) >= '2026-11-20 11:00:00.5+00') AS by_decoding
FROM events WHERE id >= snowflake_min_id('2026-11-20 11:00:00.5+00');
RESET enable_seqscan;
RESET enable_bitmapscan;
DROP TABLE events;

-- Users' own layouts.
SELECT create_layout('js_orders', '2024-01-01', '1 ms', 41, 4, 8);     -- 53 bits: JavaScript-safe
SELECT create_layout('per_second', '2024-01-01', '1 s', 33, 10, 20);
SELECT create_layout('tiny_seq', '2024-01-01', '1 ms', 41, 4, 1);      -- 2 IDs per ms
-- A layout that has run out of time, or runs out within a year, is refused
-- (next_id() would fail with it from then on) unless asked for.
SELECT create_layout('tiny', '2024-01-01', '1 ms', 20, 0, 10);          -- ended 17 minutes after its epoch
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY terse
SELECT create_layout('half_year', date_trunc('day', now()) - interval '1 year', '1 day', 9, 0, 10);  -- 512 days: ends within a year
\set VERBOSITY default
BEGIN;  -- one that ends in 659 days is accepted
SELECT create_layout('a_year_on', date_trunc('day', now()) - interval '1 year', '1 day', 10, 0, 10);
ROLLBACK;
SELECT create_layout('short_lived', '2020-01-01', '1 s', 2, 0, 10, short_lived => true);  -- ended 4 s after its epoch
SELECT count(*) AS refused_ones_made FROM shardid_user_layout WHERE name IN ('tiny', 'half_year');
SELECT name, epoch, time_unit, total_bits, javascript_safe, shards, ids_per_tick, ends_at
FROM shardid_layouts WHERE NOT builtin ORDER BY name;
SELECT d.shard, d.sequence, id < 1::bigint << 53 AS fits_javascript
FROM (SELECT next_id('js_orders', 15) AS id) v, id_decode('js_orders', id) d;
SELECT date_trunc('second', d.created_at) = d.created_at AS whole_second_tick,
       abs(extract(epoch FROM d.created_at - now())) < 2 AS recent
FROM id_decode('per_second', next_id('per_second', 3)) d;
-- Sequence used up: waits for the next tick, never wraps.
WITH g AS (SELECT n, next_id('tiny_seq', 1) AS id FROM generate_series(1, 400) n)
SELECT count(DISTINCT id) AS distinct_ids,
       id_timestamp('tiny_seq', max(id)) - id_timestamp('tiny_seq', min(id)) >= interval '199 ms' AS waited
FROM g;
SELECT next_id('short_lived', 0);
\echo :LAST_ERROR_SQLSTATE

-- Layouts cannot be redefined, changed or dropped.
SELECT create_layout('js_orders', '2025-01-01', '1 ms', 41, 4, 8);
\echo :LAST_ERROR_SQLSTATE
SELECT create_layout('snowflake', '2025-01-01', '1 ms', 41, 10, 12);
\echo :LAST_ERROR_SQLSTATE
UPDATE shardid_user_layout SET time_bits = 40 WHERE name = 'js_orders';
\echo :LAST_ERROR_SQLSTATE
DELETE FROM shardid_user_layout WHERE name = 'js_orders';
\echo :LAST_ERROR_SQLSTATE

-- Invalid definitions.
SELECT create_layout('too_wide', '2024-01-01', '1 ms', 41, 10, 13);
\echo :LAST_ERROR_SQLSTATE
SELECT create_layout('monthly', '2024-01-01', '1 month', 30, 10, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT create_layout('sub_ms', '2024-01-01', '0.5 ms', 30, 10, 10);
\echo :LAST_ERROR_SQLSTATE
SELECT create_layout('no_seq', '2024-01-01', '1 ms', 41, 10, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT create_layout('Bad Name', '2024-01-01', '1 ms', 41, 10, 12);
\echo :LAST_ERROR_SQLSTATE
SELECT create_layout('negative', '2024-01-01', '1 ms', 41, -1, 12);
\echo :LAST_ERROR_SQLSTATE
SELECT create_layout('too_long', '2024-01-01', '1000000 days', 41, 10, 12);
\echo :LAST_ERROR_SQLSTATE

-- Decoding and composing errors.
SELECT * FROM id_decode('snowflake', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM snowflake_decode(-5);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM id_decode('js_orders', 1::bigint << 53);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM id_decode('no_such_layout', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT next_id(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT id_compose('snowflake', '2019-12-31 23:59:59+00', 0, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT id_compose('snowflake', '2100-01-01', 0, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT id_compose('instagram', now(), 8192, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT id_compose('instagram', now(), 0, 1024);
\echo :LAST_ERROR_SQLSTATE
SELECT snowflake_min_id('infinity');
\echo :LAST_ERROR_SQLSTATE
SELECT id_decode('snowflake', NULL) IS NULL AS strict;

-- Ordinary roles: use layouts, but create_layout needs a grant.
CREATE ROLE layout_user;
SET ROLE layout_user;
SELECT (SELECT shard FROM id_decode('js_orders', next_id('js_orders', 2))) AS shard;
SELECT create_layout('mine', '2024-01-01', '1 ms', 41, 10, 12);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO shardid_user_layout (name, epoch, time_unit, time_bits, shard_bits, sequence_bits)
VALUES ('sneaky', '2024-01-01', '1 ms', 41, 10, 12);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT EXECUTE ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer) TO layout_user;
SET ROLE layout_user;
SELECT create_layout('granted', '2024-01-01', '1 ms', 41, 10, 12);
-- A short-lived layout takes the grant of the seven-argument form too.
SELECT create_layout('granted_brief', '2024-01-01', '1 ms', 20, 0, 10, short_lived => true);
\echo :LAST_ERROR_SQLSTATE
SELECT create_layout('granted_brief', '2024-01-01', '1 ms', 20, 0, 10);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SELECT name FROM shardid_layouts WHERE name = 'granted';
REVOKE EXECUTE ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer) FROM layout_user;
DROP ROLE layout_user;
-- A layout whose shard field is wider than id_decode()'s integer column:
-- a shard above 2^31 - 1 is refused (22003), never cut to its low 32 bits.
SELECT create_layout('wide_shard', '2024-01-01', '1 s', 30, 32, 1);
SELECT * FROM id_decode('wide_shard', (5::bigint << 33) | (2147483647::bigint << 1) | 1);
SELECT * FROM id_decode('wide_shard', (5::bigint << 33) | (2147483648::bigint << 1) | 1);
\echo :LAST_ERROR_SQLSTATE
