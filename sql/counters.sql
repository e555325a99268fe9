-- DecimalId, call numbers, base62 and Crockford base32.
-- Runs with shardid.launch_id = 65 (test/regress/regress.conf).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
\set VERBOSITY default

-- DecimalId: readable in decimal.
SELECT * FROM decimal_id_decode(14150009200065);
SELECT id, d.* FROM (SELECT next_decimal_id() AS id) v, decimal_id_decode(id) d;
WITH g AS (SELECT n, next_decimal_id() AS id FROM generate_series(1, 100000) n),
     o AS (SELECT n, id, lag(id) OVER (ORDER BY n) AS prev FROM g)
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(prev IS NULL OR id > prev) AS strictly_increasing,
       bool_and(prev IS NULL OR (id - prev) = 10000000000) AS counter_steps_by_one,
       bool_and(id % 100000 = 65) AS launch_65
FROM o;
-- A new generator id (as at a restart, or when the counter runs out)
-- restarts the counter; the pair (generator, counter) is never reused.
SELECT decimal_id_new_generator() AS generator;
SELECT d.* FROM decimal_id_decode(next_decimal_id()) d;
-- Several nodes: node 1 of 4 takes generator ids 1, 5, 9, ... (above any it used).
SELECT decimal_id_generator_progression(1, 4) AS first_of_node_1;
SELECT d.generator_id FROM decimal_id_decode(next_decimal_id()) d;
SELECT decimal_id_new_generator() AS next, decimal_id_new_generator() AS after_that;
SELECT decimal_id_generator_progression(4, 4);
\echo :LAST_ERROR_SQLSTATE
SELECT decimal_id_generator_progression(0, 0);
\echo :LAST_ERROR_SQLSTATE

-- Errors.
SET shardid.launch_id = -1;
SELECT next_decimal_id();
\echo :LAST_ERROR_SQLSTATE
RESET shardid.launch_id;
SET shardid.launch_id = 100000;
\echo :LAST_ERROR_SQLSTATE
SELECT decimal_id_decode(0);
\echo :LAST_ERROR_SQLSTATE
SELECT decimal_id_decode(9200065);
\echo :LAST_ERROR_SQLSTATE
SELECT decimal_id_decode(9223372030000000000);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM decimal_id_decode(9223372029999999999);

-- Call numbers: 8 base62 characters; a backend takes a new run id every
-- 16,384 numbers. A known key-ring key makes the shuffle (and this output)
-- the same on every run.
SELECT create_obfuscation_key('cn_test', '\x0f0e0d0c0b0a09080706050403020100');
SET shardid.call_number_key = 'cn_test';
WITH g AS (SELECT n, next_call_number() AS c FROM generate_series(1, 20000) n)
SELECT count(*) AS numbers, count(DISTINCT c) AS distinct_numbers,
       bool_and(length(c) = 8 AND c ~ '^[0-9A-Za-z]{8}$') AS all_8_base62,
       count(DISTINCT d.run_id) AS runs, min(d.sequence) AS min_sequence, max(d.sequence) AS max_sequence,
       bool_and(d.version = 0) AS version_0
FROM g, call_number_decode(c) d;
-- The shuffle does not keep order: some consecutive numbers compare
-- backwards (unshuffled, none would). How many depends on the key.
WITH g AS (SELECT n, next_call_number() AS c FROM generate_series(1, 1000) n),
     o AS (SELECT c, lag(c) OVER (ORDER BY n) AS prev FROM g)
SELECT count(*) FILTER (WHERE c COLLATE "C" < prev COLLATE "C") AS backwards_of_999,
       count(*) FILTER (WHERE c COLLATE "C" < prev COLLATE "C") > 0 AS order_not_kept
FROM o;
-- The spec's example, and back.
SELECT call_number_compose(0, 8452, 11827) AS example;
SELECT * FROM call_number_decode(call_number_compose(0, 8452, 11827));
SELECT * FROM call_number_decode(call_number_compose(7, 4194303, 16383));
-- Run ids from 2^22 on are key eras (run_id >> 22, one key each): their
-- numbers lie above every number of era 0, and carry version 0 only.
SELECT call_number_compose(0, 4194304, 0) AS era_1_first, call_number_compose(0, 1073741823, 16383) AS era_255_last;
SELECT * FROM call_number_decode(call_number_compose(0, 1073741823, 16383));
SELECT call_number_compose(1, 4194304, 0);
\echo :LAST_ERROR_SQLSTATE
-- Another key, another shuffle (the default key is random per database).
RESET shardid.call_number_key;
SELECT call_number_compose(0, 8452, 11827) <> (SELECT call_number_compose(0, 8452, 11827)
                                              FROM (SELECT set_config('shardid.call_number_key', 'cn_test', true)) s)
       AS other_key_other_text;
SELECT * FROM call_number_decode(call_number_compose(0, 8452, 11827));
-- Not call numbers: 22P02.
SELECT call_number_decode('1234567');
\echo :LAST_ERROR_SQLSTATE
SELECT call_number_decode('123456789');
\echo :LAST_ERROR_SQLSTATE
SELECT call_number_decode('1234-678');
\echo :LAST_ERROR_SQLSTATE
SELECT call_number_decode('zzzzzzzz');
\echo :LAST_ERROR_SQLSTATE
SELECT call_number_compose(8, 0, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT call_number_compose(0, 0, 16384);
\echo :LAST_ERROR_SQLSTATE

-- Ordinary roles generate both without rights on the sequences, and cannot
-- move the generator.
CREATE ROLE counters_user;
SET ROLE counters_user;
SELECT d.launch_id FROM decimal_id_decode(next_decimal_id()) d;
SELECT length(next_call_number());
SELECT nextval('shardid_generator_seq');
\echo :LAST_ERROR_SQLSTATE
SELECT decimal_id_new_generator();
\echo :LAST_ERROR_SQLSTATE
SELECT decimal_id_generator_progression(0, 2);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE counters_user;

-- base62 and Crockford base32.
SELECT v, base62_encode(v) AS b62, base62_encode(v, 11) AS b62_padded,
       base32_encode(v) AS b32, base32_encode(v, 13) AS b32_padded
FROM unnest(ARRAY[0, 61, 62, 1234567890, 9223372036854775807]) v;
SELECT base62_decode('AzL8n0Y58m7') = 9223372036854775807 AS b62_max,
       base32_decode('14sc0pj') AS lower_case, base32_decode('1LIO') = base32_decode('1110') AS aliases,
       base62_decode('00000000005') AS leading_zeros;
-- Padded to a fixed width, the encodings sort like the numbers.
WITH v AS (SELECT (random() * 9.2e18)::bigint AS n FROM generate_series(1, 5000)
           UNION ALL SELECT unnest(ARRAY[0, 1, 61, 62, 9223372036854775807]))
SELECT bool_and(r_num = r_62 AND r_num = r_32) AS order_kept
FROM (SELECT rank() OVER (ORDER BY n) AS r_num,
             rank() OVER (ORDER BY base62_encode(n, 11) COLLATE "C") AS r_62,
             rank() OVER (ORDER BY base32_encode(n, 13) COLLATE "C") AS r_32
      FROM v) s;
SELECT base62_encode(-1);
\echo :LAST_ERROR_SQLSTATE
SELECT base62_decode('abc!');
\echo :LAST_ERROR_SQLSTATE
SELECT base62_decode('AzL8n0Y58m8');
\echo :LAST_ERROR_SQLSTATE
SELECT base62_decode('');
\echo :LAST_ERROR_SQLSTATE
SELECT base32_decode('U');
\echo :LAST_ERROR_SQLSTATE
SELECT base32_decode('80000000000000');
\echo :LAST_ERROR_SQLSTATE
SELECT base32_encode(1, 65);
\echo :LAST_ERROR_SQLSTATE

-- The cluster's call-number key lives in etcd: with node ids from settings
-- it is refused, and PUBLIC may not call it at all.
SELECT shardid_set_call_number_key('default');
\echo :LAST_ERROR_SQLSTATE
CREATE ROLE call_key_clerk;
SET ROLE call_key_clerk;
SELECT shardid_set_call_number_key('default');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE call_key_clerk;

-- A Citus coordinator hands out the cluster's counters to its workers
-- (docs/citus.md): without Citus it is refused, saying why; an ordinary
-- role may not call it at all.
SELECT shardid_take_cluster_counter('generator', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT shardid_take_cluster_runs(-1, 12345, 16);
\echo :LAST_ERROR_SQLSTATE
CREATE ROLE counter_clerk;
SET ROLE counter_clerk;
SELECT shardid_take_cluster_counter('generator', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT shardid_take_cluster_runs(-1, 12345, 16);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE counter_clerk;
