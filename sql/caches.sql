-- Backend caches hold only committed catalog state (second hostile review,
-- section 1). Layouts and keys are cached per backend; a definition read
-- inside a transaction that made it and then rolled back must be forgotten
-- at the rollback, whatever is committed under the same name afterwards.
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
SELECT format('CREATE FUNCTION %I() RETURNS text LANGUAGE sql IMMUTABLE AS %L',
              shardid_layout_anchor_name('carried_only'),
              shardid_layout_anchor_body('carried_only', '2024-01-01', '1 ms', 41, 0, 12)) \gexec
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
