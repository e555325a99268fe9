-- Catalog caches and layout edges, what one session can show (the rest is in
-- test/hostile/node_state_bounds.sh and the unit tests).
-- Section 1: backend caches hold only committed catalog state. Layouts and
-- keys are cached per backend; a definition read inside a transaction that
-- made it and then rolled back must be forgotten at the rollback, whatever
-- is committed under the same name afterwards.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
-- The ID with tick 1000, all low 12 bits set: 41/0/12 reads it as shard 0,
-- sequence 4095; 41/4/8 as shard 15, sequence 255.
\set probe 4096004095
-- 1. A layout made, used and rolled back; then committed with another shape.
BEGIN;
SELECT create_layout('rolled_back', '2024-01-01', '1 ms', 41, 0, 12);
SELECT shard, sequence FROM id_decode('rolled_back', :probe);
SELECT next_id('rolled_back', 0) > 0 AS generated;
ROLLBACK;
SELECT * FROM id_decode('rolled_back', :probe);
SELECT create_layout('rolled_back', '2024-01-01', '1 ms', 41, 4, 8);
SELECT shard, sequence FROM id_decode('rolled_back', :probe);
SELECT (id_decode('rolled_back', next_id('rolled_back', 3))).shard AS generated_shard;
-- The same call site (one prepared plan) across the rollback.
PREPARE decode_it(text) AS SELECT shard, sequence FROM id_decode($1, 4096004095);
BEGIN;
SELECT create_layout('rolled_back_too', '2024-01-01', '1 ms', 41, 0, 12);
EXECUTE decode_it('rolled_back_too');
ROLLBACK;
SELECT create_layout('rolled_back_too', '2024-01-01', '1 ms', 41, 4, 8);
EXECUTE decode_it('rolled_back_too');
-- The review's case: another session commits the name with another shape
-- while this one still has the rolled-back shape cached; both then generate
-- at the same time. Before the fix this session went on with 41/0/12 and the
-- two sessions issued duplicates.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
SELECT format('dbname=%s port=%s host=%s', current_database(), current_setting('port'),
              split_part(current_setting('unix_socket_directories'), ',', 1)) AS other_session \gset
SELECT dblink_connect('other', :'other_session');
BEGIN;
SELECT create_layout('concurrent', '2024-01-01', '1 ms', 41, 0, 12);
SELECT next_id('concurrent', 0) > 0 AS generated;
ROLLBACK;
SELECT dblink_exec('other', $$DO 'BEGIN PERFORM create_layout(''concurrent'', ''2024-01-01'', ''1 ms'', 41, 4, 8); END'$$);
SELECT dblink_send_query('other', $$SELECT next_id('concurrent', 0) FROM generate_series(1, 200000)$$);
CREATE TEMP TABLE both_sessions AS SELECT next_id('concurrent', 0) AS id FROM generate_series(1, 200000);
INSERT INTO both_sessions SELECT id FROM dblink_get_result('other') AS r(id bigint);
-- Shard 0 of 41/4/8 leaves bits 8..11 clear; the rolled-back 41/0/12 would
-- have put sequence bits there.
SELECT count(*) AS ids, count(*) - count(DISTINCT id) AS duplicates,
       count(*) FILTER (WHERE (id >> 8) & 15 <> 0) AS not_shard_0_of_the_committed_shape
FROM both_sessions;
SELECT dblink_disconnect('other');
-- 2. The same with a subtransaction.
BEGIN;
SAVEPOINT s;
SELECT create_layout('in_savepoint', '2024-01-01', '1 ms', 41, 0, 12);
SELECT shard, sequence FROM id_decode('in_savepoint', :probe);
ROLLBACK TO SAVEPOINT s;
SELECT create_layout('in_savepoint', '2024-01-01', '1 ms', 41, 4, 8);
SELECT shard, sequence FROM id_decode('in_savepoint', :probe);
COMMIT;
-- 3. A key made, used and rolled back; then committed with another secret.
BEGIN;
SELECT create_obfuscation_key('rolled_key', '\x000102030405060708090a0b0c0d0e0f');
SELECT obfuscate_id(42, 'rolled_key') AS under_first \gset
ROLLBACK;
SELECT create_obfuscation_key('rolled_key', '\xf0f1f2f3f4f5f6f7f8f9fafbfcfdfeff');
SELECT create_obfuscation_key('same_as_committed', '\xf0f1f2f3f4f5f6f7f8f9fafbfcfdfeff');
SELECT obfuscate_id(42, 'rolled_key') <> :under_first AS not_the_rolled_back_key,
       obfuscate_id(42, 'rolled_key') = obfuscate_id(42, 'same_as_committed') AS the_committed_key;
-- 4. A carrier function made by a superuser and used, then rolled back:
--    without a catalog row the layout is gone again.
BEGIN;
SELECT format('CREATE FUNCTION shardid_carrier.%I() RETURNS text LANGUAGE sql IMMUTABLE AS %L',
              shardid_carrier_name('carried_only'),
              shardid_carrier_body('carried_only', '2024-01-01', '1 ms', 41, 0, 12)) \gexec
SELECT shard, sequence FROM id_decode('carried_only', :probe);
ROLLBACK;
SELECT * FROM id_decode('carried_only', :probe);
-- 5. DROP and CREATE EXTENSION in the same session: a layout of the same
--    name with another shape is read afresh.
SELECT create_layout('recreated', '2024-01-01', '1 ms', 41, 0, 12);
SELECT shard, sequence FROM id_decode('recreated', :probe);
DROP EXTENSION shardid CASCADE;
CREATE EXTENSION shardid;
SELECT create_layout('recreated', '2024-01-01', '1 ms', 41, 4, 8);
SELECT shard, sequence FROM id_decode('recreated', :probe);
-- Section 4: a layout name outside the rule, written into the catalog by a
-- superuser, is refused when read (it would reach the node state).
INSERT INTO shardid_user_layout (name, epoch, time_unit, time_bits, shard_bits, sequence_bits)
VALUES ('hourly orders', '2020-01-01', '1 hour', 30, 4, 8);
SELECT next_id('hourly orders', 1);
\echo :LAST_ERROR_SQLSTATE
-- Section 6a: after shardid_advance_past() past an ID of a high shard, the
-- next ID of every shard sorts above it, a lower shard's included (the whole
-- tick counts as used).
SELECT create_layout('shard_move', '2024-01-01', '1 ms', 40, 13, 10);
SELECT id_compose('shard_move', now() + interval '2 s', 5000, 3) AS moved \gset
SELECT shardid_advance_past('shard_move', :moved) > interval '0' AS advanced;
SELECT bool_and(next_id('shard_move', s) > :moved) AS every_shard_above
FROM (VALUES (0), (1), (4999), (5000), (8191)) v(s);
-- Section 6b: a layout that outlives timestamptz. A filter answers for an ID
-- beyond timestamptz's range (its time is later than every finite instant);
-- the decoders give a clear error.
SELECT create_layout('far', '2020-01-01', '1 day', 36, 4, 8);
SELECT id, id_created_within('far', id, tstzrange('2020-01-01', '2030-01-01')) AS in_the_2020s,
       id_created_within('far', id, tstzrange('2020-01-01', NULL)) AS from_2020_on
FROM (VALUES (id_compose('far', '2024-05-01', 1, 1)), ((1::bigint << 35) << 12)) v(id) ORDER BY id;
SELECT count(*) FILTER (WHERE id_created_within('far', id, tstzrange('2024-01-01', '2025-01-01'))) AS in_2024
FROM (VALUES (id_compose('far', '2024-05-01', 1, 1)), ((1::bigint << 35) << 12)) v(id);
SELECT id_timestamp('far', (1::bigint << 35) << 12);
