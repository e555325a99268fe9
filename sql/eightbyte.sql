-- Eight-byte IDs, bit-compatible with Lable's Java "uniqueid" library.
-- Runs with shardid.node_id = 7.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
SET timezone = 'UTC';
\set VERBOSITY default

-- The reference library's own byte vectors.
SELECT encode(eightbyte_id_build(to_timestamp(0), 0, 0, 0, 'spread'), 'hex') AS zero,
       encode(eightbyte_id_build(to_timestamp(((1::bigint << 42) - 1) / 1000.0), 63, 2047, 15, 'spread'), 'hex') AS mostly_ones,
       encode(eightbyte_id_build(to_timestamp(143062936275 / 1000.0), 0, 0, 0, 'spread'), 'hex') AS ts_a,
       encode(eightbyte_id_build(to_timestamp(17179869181 / 1000.0), 0, 0, 0, 'spread'), 'hex') AS ts_b;
SELECT encode(substr(eightbyte_id_build(to_timestamp(0), 34, 0, 0, 'spread'), 6, 1), 'hex') AS sequence_0x22,
       encode(substr(eightbyte_id_build(to_timestamp(0), 0, 39, 0, 'spread'), 7, 2), 'hex') AS generator_0x27,
       encode(substr(eightbyte_id_build(to_timestamp(0), 0, 0, 5, 'spread'), 7, 2), 'hex') AS cluster_5,
       encode(substr(eightbyte_id_build(to_timestamp(0), 0, 0, 0, 'time_sequential'), 7, 2), 'hex') AS time_mode;
-- Decoding gives the parts back, in both modes.
SELECT d.* FROM eightbyte_id_decode('\xcb54ecf284000000') d;
SELECT m, d.created_at, d.sequence, d.generator_id, d.cluster_id, d.mode
FROM unnest(ARRAY['spread', 'time_sequential']) m,
     eightbyte_id_decode(eightbyte_id_build('2026-11-21 12:34:56.789+00', 10, 2047, 15, m)) d;

-- Generation: generator = shardid.node_id, cluster = shardid.cluster_id.
SELECT length(id) AS bytes, d.generator_id, d.cluster_id, d.mode,
       abs(extract(epoch FROM d.created_at - now())) < 2 AS recent
FROM (VALUES (next_eightbyte_id()), (next_eightbyte_id('time_sequential'))) v(id), eightbyte_id_decode(id) d;
SET shardid.cluster_id = 5;
SELECT d.cluster_id FROM eightbyte_id_decode(next_eightbyte_id()) d;
RESET shardid.cluster_id;
-- Time-sequential IDs increase as bytes (and as bigints); none repeat.
WITH g AS (SELECT n, next_eightbyte_id('time_sequential') AS id FROM generate_series(1, 20000) n),
     o AS (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM g)
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(prev IS NULL OR id > prev) AS increasing_bytes,
       bool_and(prev IS NULL OR eightbyte_id_to_bigint(id) > eightbyte_id_to_bigint(prev)) AS increasing_bigints
FROM o;
-- Spread IDs of consecutive milliseconds cover the first byte's 256 values
-- evenly: over 1,024 milliseconds, each value exactly four times (built for
-- given times, so how fast this machine generates does not matter).
WITH g AS (SELECT get_byte(eightbyte_id_build('2026-01-01'::timestamptz + n * interval '1 ms', 0, 0, 0, 'spread'), 0)
                  AS first_byte
           FROM generate_series(0, 1023) n),
     c AS (SELECT first_byte, count(*) AS n FROM g GROUP BY first_byte)
SELECT count(*) AS first_byte_values, min(n) = 4 AND max(n) = 4 AS even,
       (SELECT count(DISTINCT x) FROM (SELECT next_eightbyte_id() AS x FROM generate_series(1, 20000)) s) AS distinct_spread
FROM c;

-- Time-sequential ids as positive bigints, and back.
SELECT eightbyte_id_from_bigint(eightbyte_id_to_bigint(i)) = i AS round_trip
FROM (SELECT eightbyte_id_build('2026-11-21', 1, 2, 3, 'time_sequential') AS i) s;
SELECT eightbyte_id_to_bigint(eightbyte_id_build('2026-11-21', 0, 0, 0, 'time_sequential'));

-- Errors.
SELECT next_eightbyte_id('bogus');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM eightbyte_id_decode('\x01020304050607');
\echo :LAST_ERROR_SQLSTATE
SELECT eightbyte_id_build(now(), 64, 0, 0, 'spread');
\echo :LAST_ERROR_SQLSTATE
SELECT eightbyte_id_build(now(), 0, 2048, 0, 'spread');
\echo :LAST_ERROR_SQLSTATE
SELECT eightbyte_id_build(now(), 0, 0, 16, 'spread');
\echo :LAST_ERROR_SQLSTATE
SELECT eightbyte_id_build('1969-12-31 23:59:59+00', 0, 0, 0, 'spread');
\echo :LAST_ERROR_SQLSTATE
SELECT eightbyte_id_build('2110-01-01', 0, 0, 0, 'spread');
\echo :LAST_ERROR_SQLSTATE
SELECT eightbyte_id_to_bigint(eightbyte_id_build(now(), 0, 0, 0, 'spread'));
\echo :LAST_ERROR_SQLSTATE
SELECT eightbyte_id_to_bigint(eightbyte_id_build('2040-01-01', 0, 0, 0, 'time_sequential'));
\echo :LAST_ERROR_SQLSTATE
SELECT eightbyte_id_from_bigint(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT eightbyte_id_from_bigint(1234);
\echo :LAST_ERROR_SQLSTATE
SET shardid.node_id = 2048;
SELECT next_eightbyte_id();
\echo :LAST_ERROR_SQLSTATE
RESET shardid.node_id;
SET shardid.cluster_id = 16;
\echo :LAST_ERROR_SQLSTATE
