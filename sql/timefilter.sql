-- Time filters planned as index range scans; converting existing tables.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
SET timezone = 'UTC';
\set VERBOSITY default

-- One row per 30 s over 12 hours, for each scheme, at fixed times.
CREATE TABLE sf (id bigint PRIMARY KEY, n int);
CREATE TABLE ig (id bigint PRIMARY KEY, n int);
CREATE TABLE tr (id bigint PRIMARY KEY, n int);
INSERT INTO sf SELECT id_compose('snowflake', '2026-11-20 00:00:00+00'::timestamptz + g * interval '30 s', 7, g % 4096), g
FROM generate_series(0, 1439) g;
INSERT INTO ig SELECT id_compose('instagram', '2026-11-20 00:00:00+00'::timestamptz + g * interval '30 s', 1341, g % 1024), g
FROM generate_series(0, 1439) g;
INSERT INTO tr SELECT (((extract(epoch FROM '2026-11-20 00:00:00+00'::timestamptz + g * interval '30 s')::bigint & 33554431) << 38)
                      | (7 << 22) | (g + 1)), g
FROM generate_series(0, 1439) g;
ANALYZE sf, ig, tr;
SET enable_seqscan = off;
SET enable_bitmapscan = off;

-- The plans: an Index Cond on the ID.
EXPLAIN (COSTS OFF) SELECT n FROM sf
WHERE snowflake_created_within(id, tstzrange('2026-11-20 01:00+00', '2026-11-20 02:00+00'));
EXPLAIN (COSTS OFF) SELECT n FROM sf
WHERE id_created_within('snowflake', id, tstzrange(now() - interval '1 day', now()));
EXPLAIN (COSTS OFF) SELECT n FROM ig
WHERE instagram_created_within(id, tstzrange('2026-11-20 01:00+00', '2026-11-20 02:00+00'));
EXPLAIN (COSTS OFF) SELECT n FROM tr
WHERE trace_id_created_within(id, tstzrange('2026-11-20 01:00+00', '2026-11-20 02:00+00'));

-- The results equal a full scan with the decoder, at the edges of the
-- range: inclusive and exclusive bounds, a row exactly on a bound.
CREATE TEMP TABLE periods (p tstzrange);
INSERT INTO periods VALUES
    ('[2026-11-20 01:00:00+00, 2026-11-20 02:00:00+00)'), ('[2026-11-20 01:00:00+00, 2026-11-20 02:00:00+00]'),
    ('(2026-11-20 01:00:00+00, 2026-11-20 02:00:00+00)'), ('(2026-11-20 01:00:00+00, 2026-11-20 02:00:00+00]'),
    ('[2026-11-20 01:00:00.001+00, 2026-11-20 01:00:30+00)'), ('[2026-11-19 23:59:59.999+00, 2026-11-20 00:00:00+00]'),
    ('[2026-11-20 11:59:30+00,)'), ('(,2026-11-20 00:00:30+00]'), ('empty'), ('(,)'),
    ('[2026-11-21 00:00+00, 2026-11-22 00:00+00)');
SELECT p,
       (SELECT count(*) FROM sf WHERE snowflake_created_within(id, p)) AS sf_index,
       (SELECT count(*) FROM sf WHERE p @> snowflake_timestamp(id) OFFSET 0) AS sf_decode,
       (SELECT count(*) FROM ig WHERE instagram_created_within(id, p)) AS ig_index,
       (SELECT count(*) FROM ig WHERE p @> instagram_timestamp(id) OFFSET 0) AS ig_decode,
       -- A TraceId period must start within the 2^25 s before its end: the
       -- periods without a lower bound are refused (below), not answered.
       CASE WHEN NOT lower_inf(p) OR isempty(p) THEN
            (SELECT count(*) FROM tr WHERE trace_id_created_within(id, p)) END AS tr_index,
       CASE WHEN NOT lower_inf(p) OR isempty(p) THEN
            (SELECT count(*) FROM tr WHERE p @> trace_id_timestamp(id, '2026-11-20 12:00+00') OFFSET 0) END AS tr_decode
FROM periods ORDER BY p;
-- Infinite timestamps as bounds mean what they say.
SELECT count(*) FILTER (WHERE snowflake_created_within(id, '[-infinity, infinity]')) AS sf_everything,
       count(*) FILTER (WHERE snowflake_created_within(id, '[-infinity, 2026-11-20 00:00:30+00]')) AS sf_until,
       count(*) FILTER (WHERE snowflake_created_within(id, '[2026-11-20 11:59:00+00, infinity)')) AS sf_from,
       count(*) FILTER (WHERE snowflake_created_within(id, '[infinity, infinity]')) AS sf_at_infinity,
       count(*) FILTER (WHERE id_created_within('instagram', id, '(-infinity, infinity)')) AS named_everything
FROM sf;
SELECT count(*) FILTER (WHERE instagram_created_within(id, '[-infinity, infinity]')) AS ig_everything FROM ig;
SELECT count(*) FILTER (WHERE trace_id_created_within(id, '[2026-11-20 11:59:00+00, infinity)')) AS tr_from FROM tr;
SELECT id_range_min('snowflake', '[-infinity, infinity]') AS min_all, id_range_max('snowflake', '[infinity,infinity]') < 1 AS none_at_infinity;
-- A TraceId holds its time modulo 2^25 s: a period reaching back further
-- than that from its end would take in every TraceId, so it is refused.
-- (The detail names the earliest start, which depends on now(): terse.)
\set VERBOSITY terse
SELECT count(*) FROM tr WHERE trace_id_created_within(id, tstzrange('2025-01-01', '2026-11-21'));
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM tr WHERE trace_id_created_within(id, '(,)');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
SELECT trace_id_created_within(trace_id_range_min(tstzrange('2026-11-20 00:00+00', '2026-11-20 00:00:01+00')),
                               tstzrange('2026-11-20 00:00+00', '2026-11-20 00:00:01+00')) AS short_period_still_works;

-- Without an index, or with a layout that is not a constant, the predicate
-- still answers correctly.
RESET enable_seqscan;
RESET enable_bitmapscan;
CREATE TEMP TABLE mixed (layout text, id bigint);
INSERT INTO mixed SELECT 'snowflake', id FROM sf WHERE n < 10;
INSERT INTO mixed SELECT 'instagram', id FROM ig WHERE n < 10;
SELECT layout, count(*) FROM mixed
WHERE id_created_within(layout, id, tstzrange('2026-11-20 00:00+00', '2026-11-20 00:02+00'))
GROUP BY layout ORDER BY layout;
-- A TraceId range across the 25-bit wrap cannot be one ID range: no index
-- condition narrows it, and the answer is still right.
SELECT trace_id_range_min(tstzrange('2026-11-20 00:00+00', '2027-12-20 00:00+00')) AS min_when_wrapping,
       trace_id_range_max(tstzrange('2026-11-20 00:00+00', '2027-12-20 00:00+00')) AS max_when_wrapping;
SELECT id_created_within('snowflake', 0, '(,)') AS invalid_id_is_outside,
       id_created_within('snowflake', id_compose('snowflake', '2026-11-20 00:00+00', 0, 0), 'empty') AS empty_range;

-- Converting existing tables: serial, identity, and integer keys with a
-- foreign key; new IDs sort above the existing ones.
CREATE TABLE legacy_serial (id serial PRIMARY KEY, v text);
INSERT INTO legacy_serial (v) SELECT 'old ' || g FROM generate_series(1, 100) g;
CREATE TABLE legacy_child (id bigserial PRIMARY KEY, parent int REFERENCES legacy_serial (id));
INSERT INTO legacy_child (parent) SELECT g FROM generate_series(1, 100) g;
SELECT shardid_convert_column('legacy_serial', 'id');
SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'legacy_child'::regclass AND attname = 'parent';
SELECT pg_get_serial_sequence('legacy_serial', 'id') IS NULL AS sequence_dropped,
       pg_get_expr(adbin, adrelid) AS new_default
FROM pg_attrdef WHERE adrelid = 'legacy_serial'::regclass;
INSERT INTO legacy_serial (v) VALUES ('new 1'), ('new 2');
SELECT count(*) AS rows, count(*) FILTER (WHERE v LIKE 'new%' AND id > 100) AS new_above_old,
       (SELECT count(*) FROM legacy_child) AS children_kept
FROM legacy_serial;
INSERT INTO legacy_child (parent) SELECT id FROM legacy_serial WHERE v = 'new 1';

CREATE TABLE legacy_identity (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
INSERT INTO legacy_identity (v) VALUES ('a'), ('b');
SELECT shardid_convert_column('legacy_identity', 'id', 'instagram');
INSERT INTO legacy_identity (v) VALUES ('c');
SELECT v, id > 2 AS above, (SELECT shard FROM instagram_decode(id)) FROM legacy_identity WHERE v = 'c';

-- Refusals change nothing.
CREATE TABLE huge (id bigint PRIMARY KEY);
INSERT INTO huge VALUES (9000000000000000000);
SELECT shardid_convert_column('huge', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 'huge'::regclass;
CREATE TABLE texty (id text PRIMARY KEY);
SELECT shardid_convert_column('texty', 'id');
\echo :LAST_ERROR_SQLSTATE
SELECT shardid_convert_column('legacy_serial', 'nope');
\echo :LAST_ERROR_SQLSTATE
SELECT shardid_convert_column('legacy_serial', 'id', 'no_such_layout');
\echo :LAST_ERROR_SQLSTATE
-- The support function dispatches on the C function a call runs, not on the
-- name or the number of arguments: another function given it (a superuser
-- can) is left alone, never taken for snowflake_created_within.
CREATE FUNCTION other_filter(id bigint, period tstzrange) RETURNS boolean
    LANGUAGE sql IMMUTABLE SUPPORT shardid_created_within_support AS 'SELECT true';
SELECT (SELECT count(*) FROM sf WHERE other_filter(id, tstzrange('2030-01-01', '2030-01-02')))
     = (SELECT count(*) FROM sf) AND (SELECT count(*) FROM sf) > 0 AS left_alone;
DROP FUNCTION other_filter(bigint, tstzrange);
DROP TABLE sf, ig, tr, legacy_child, legacy_serial, legacy_identity, huge, texty;
