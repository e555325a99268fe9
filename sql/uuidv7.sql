-- UUIDv7 (RFC 9562): layout, readers, errors, order, the time filter.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
SET timezone = 'UTC';
\set VERBOSITY default

-- RFC 9562, appendix A.6: made at 2022-02-22 14:22:22-05, rand_a 0xCC3.
SELECT * FROM uuidv7_decode('017F22E2-79B0-7CC3-98C4-DC0C0C07398F');
SELECT uuidv7_timestamp('017F22E2-79B0-7CC3-98C4-DC0C0C07398F'),
       uuidv7_min('2022-02-22 19:22:22.000999+00');

-- A fresh one: version 7, variant 10, made now.
SELECT substr(u::text, 15, 1) AS version, substr(u::text, 20, 1) IN ('8', '9', 'a', 'b') AS variant_10,
       abs(extract(epoch FROM uuidv7_timestamp(u) - clock_timestamp())) < 5 AS made_now,
       (uuidv7_decode(u)).shard AS shard
FROM (SELECT next_uuidv7() AS u) x;

-- Strictly increasing, 100,000 in one statement (25 ms of counters at
-- least: the 12-bit counter runs out within a millisecond and waits).
SELECT count(*) AS n, count(*) FILTER (WHERE prev >= u) AS out_of_order, count(DISTINCT u) AS distinct_uuids,
       count(DISTINCT uuidv7_timestamp(u)) >= 25 AS spans_milliseconds
FROM (SELECT u, lag(u) OVER (ORDER BY n) AS prev
      FROM (SELECT n, next_uuidv7() AS u FROM generate_series(1, 100000) n) g) x;

-- 4,096 per millisecond: a statement that waits for the next millisecond
-- again and again ends at once with statement_timeout.
SET statement_timeout = '200ms';
SELECT count(next_uuidv7()) FROM (SELECT generate_series(1, 100000000)) g;
RESET statement_timeout;

-- The shard field: off by default; a shard given without it is refused.
SELECT next_uuidv7(5);
SET shardid.uuidv7_shard_bits = 10;
SELECT (uuidv7_decode(next_uuidv7(5), 10)).shard AS given,
       (uuidv7_decode(next_uuidv7(), 10)).shard AS node_id,
       (uuidv7_decode(next_uuidv7(NULL), 10)).shard AS node_id_for_null;
SELECT next_uuidv7(1024);
SELECT next_uuidv7(-1);
SET shardid.uuidv7_shard_bits = 32;
SELECT (uuidv7_decode(next_uuidv7(2147483647), 32)).shard AS widest;
SET shardid.uuidv7_shard_bits = 33;
RESET shardid.uuidv7_shard_bits;

-- Not UUIDv7: refused by the decoders, not within any period.
SELECT uuidv7_decode('f47ac10b-58cc-4372-a567-0e02b2c3d479');
SELECT uuidv7_timestamp('017f22e2-79b0-7cc3-d8c4-dc0c0c07398f');
SELECT uuidv7_decode('017F22E2-79B0-7CC3-98C4-DC0C0C07398F', 33);
SELECT uuidv7_created_within(gen_random_uuid(), '(,)') AS v4_within;
SELECT uuidv7_min('1969-12-31 23:59:59.999+00');
SELECT uuidv7_min('infinity');

-- Time filter: one UUIDv7 per 30 s over 12 hours at fixed times.
CREATE TABLE u7 (id uuid PRIMARY KEY, n int);
INSERT INTO u7
SELECT (lpad(to_hex((extract(epoch FROM t) * 1000)::bigint), 12, '0') || '7' || lpad(to_hex(g % 4096), 3, '0')
        || '8' || lpad(to_hex(g), 15, '0'))::uuid, g
FROM generate_series(0, 1439) g, LATERAL (SELECT '2026-11-20 00:00:00+00'::timestamptz + g * interval '30 s' AS t) x;
ANALYZE u7;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT n FROM u7
WHERE uuidv7_created_within(id, tstzrange('2026-11-20 01:00+00', '2026-11-20 02:00+00'));
EXPLAIN (COSTS OFF) SELECT n FROM u7 WHERE uuidv7_created_within(id, tstzrange(now() - interval '1 day', now()));
CREATE TEMP TABLE periods (p tstzrange);
INSERT INTO periods VALUES
    ('[2026-11-20 01:00:00+00, 2026-11-20 02:00:00+00)'), ('[2026-11-20 01:00:00+00, 2026-11-20 02:00:00+00]'),
    ('(2026-11-20 01:00:00+00, 2026-11-20 02:00:00+00)'), ('[2026-11-20 01:00:00.001+00, 2026-11-20 01:00:30+00)'),
    ('[2026-11-20 11:59:30+00,)'), ('(,2026-11-20 00:00:30+00]'), ('empty'), ('(,)'),
    ('[-infinity, infinity]'), ('[infinity, infinity]'), ('[1960-01-01+00, 1969-12-31+00]');
SELECT p, (SELECT count(*) FROM u7 WHERE uuidv7_created_within(id, p)) AS index,
          (SELECT count(*) FROM u7 WHERE p @> uuidv7_timestamp(id) OFFSET 0) AS decode
FROM periods ORDER BY p;
RESET enable_seqscan;
RESET enable_bitmapscan;

-- Partitions by month, bounded by uuidv7_min: a period prunes them.
CREATE TABLE u7p (id uuid PRIMARY KEY DEFAULT next_uuidv7(), n int) PARTITION BY RANGE (id);
CREATE TABLE u7p_2026_10 PARTITION OF u7p FOR VALUES FROM (uuidv7_min('2026-10-01+00')) TO (uuidv7_min('2026-11-01+00'));
CREATE TABLE u7p_2026_11 PARTITION OF u7p FOR VALUES FROM (uuidv7_min('2026-11-01+00')) TO (uuidv7_min('2026-12-01+00'));
CREATE TABLE u7p_2026_12 PARTITION OF u7p FOR VALUES FROM (uuidv7_min('2026-12-01+00')) TO (uuidv7_min('2027-01-01+00'));
INSERT INTO u7p SELECT uuidv7_min('2026-10-15+00'::timestamptz + g * interval '1 day'), g FROM generate_series(0, 60) g;
ANALYZE u7p;
CREATE FUNCTION scans(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
        IF line ~ '(Scan on|Subplans Removed)' THEN
            RETURN NEXT regexp_replace(regexp_replace(trim(line), '^->  ', ''), ' using \S+', '');
        END IF;
    END LOOP;
END $$;
SELECT scans($q$SELECT n FROM u7p WHERE uuidv7_created_within(id, tstzrange('2026-11-20 01:00+00', '2026-11-20 02:00+00'))$q$);
SELECT scans($q$SELECT n FROM u7p WHERE uuidv7_created_within(id, tstzrange('2026-11-20+00'::timestamptz - interval '30 days', '2026-11-20+00'))$q$);
SELECT count(*) FILTER (WHERE uuidv7_created_within(id, tstzrange('2026-11-01+00', '2026-12-01+00'))) AS november,
       count(*) FILTER (WHERE tableoid = 'u7p_2026_11'::regclass) AS in_its_partition
FROM u7p;
DROP FUNCTION scans(text);

-- Converting a uuid key from gen_random_uuid() (fixed version 4 keys here,
-- for stable counts) and two older UUIDv7 keys.
CREATE TABLE legacy (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), n int);
INSERT INTO legacy SELECT overlay(overlay(md5(g::text) PLACING '4' FROM 13) PLACING '8' FROM 17)::uuid, g
FROM generate_series(1, 1000) g;
INSERT INTO legacy VALUES (uuidv7_min('2020-01-01+00'), 1001), (uuidv7_min('2024-01-01+00'), 1002);
SELECT shardid_convert_uuid_column('legacy', 'id');
INSERT INTO legacy (n) SELECT g FROM generate_series(1003, 1100) g;
SELECT count(*) FILTER (WHERE n > 1002) AS new_keys,
       count(*) FILTER (WHERE n > 1002 AND substr(id::text, 15, 1) = '7') AS new_v7,
       (SELECT min(id::text) FROM legacy WHERE n > 1002) > (SELECT max(id::text) FROM legacy WHERE n IN (1001, 1002))
           AS new_above_old_v7
FROM legacy;
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'legacy'::regclass;
-- A key from a clock ahead: refused. Not a uuid column: refused.
INSERT INTO legacy VALUES (uuidv7_min('2999-01-01+00'), 2000);
SELECT shardid_convert_uuid_column('legacy', 'id');
SELECT shardid_convert_uuid_column('legacy', 'n');
SELECT shardid_convert_uuid_column('legacy', 'nope');
DROP TABLE legacy;

-- The setting is for superusers; readers are for everyone.
CREATE ROLE uuid_reader;
SET ROLE uuid_reader;
SET shardid.uuidv7_shard_bits = 4;
SELECT uuidv7_timestamp('017F22E2-79B0-7CC3-98C4-DC0C0C07398F');
RESET ROLE;
DROP ROLE uuid_reader;
DROP TABLE u7, u7p;
