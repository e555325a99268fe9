-- Keyed permutations: IDs that do not leak order or volume.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
\set VERBOSITY default

-- A known key gives a known permutation (so these outputs are stable).
SELECT create_obfuscation_key('fixed', '\x000102030405060708090a0b0c0d0e0f');
SELECT v, obfuscate_id(v, 'fixed') AS obfuscated, reveal_id(obfuscate_id(v, 'fixed'), 'fixed') AS revealed,
       obfuscate_id(v, 'fixed', 53) AS js_safe
FROM unnest(ARRAY[1, 2, 3, 1000000, 9007199254740991]) v;
-- Bijective on the values tried, exact inverses, inside the domain.
SELECT count(DISTINCT o) AS distinct_outputs, bool_and(reveal_id(o, 'fixed') = v) AS inverse,
       bool_and(o BETWEEN 1 AND 9223372036854775807) AS in_63_bits,
       bool_and(o53 BETWEEN 1 AND 9007199254740991 AND reveal_id(o53, 'fixed', 53) = v) AS js_domain
FROM (SELECT v, obfuscate_id(v, 'fixed') AS o, obfuscate_id(v, 'fixed', 53) AS o53
      FROM generate_series(1, 100000) v) s;
-- Order is hidden: consecutive inputs compare up about half the time.
SELECT count(*) FILTER (WHERE o > prev) BETWEEN 40000 AND 60000 AS order_hidden
FROM (SELECT obfuscate_id(v, 'fixed') AS o, lag(obfuscate_id(v, 'fixed')) OVER (ORDER BY v) AS prev
      FROM generate_series(1, 100000) v) s;
-- Another key, an unrelated permutation.
SELECT create_obfuscation_key('other');
SELECT count(*) FILTER (WHERE obfuscate_id(v, 'fixed') = obfuscate_id(v, 'other')) AS equal_outputs
FROM generate_series(1, 10000) v;

-- The default key is made on first use; next_opaque_id hides a fresh
-- snowflake ID, and reveal_id gives it (and its time) back.
SELECT d.shard, abs(extract(epoch FROM d.created_at - now())) < 2 AS recent
FROM (SELECT reveal_id(next_opaque_id()) AS id) v, snowflake_decode(id) d;
SELECT count(*) AS keys FROM shardid_key WHERE name = 'default';
SELECT (id_decode('twitter', reveal_id(next_opaque_id('twitter', 'fixed'), 'fixed'))).shard;

-- Call numbers take their shuffle from the key ring.
SET shardid.call_number_key = 'fixed';
SELECT call_number_compose(0, 8452, 11827) AS with_fixed;
SELECT * FROM call_number_decode(call_number_compose(0, 8452, 11827));
RESET shardid.call_number_key;

-- Errors.
SELECT obfuscate_id(0);
\echo :LAST_ERROR_SQLSTATE
SELECT obfuscate_id(-5);
\echo :LAST_ERROR_SQLSTATE
SELECT obfuscate_id(9007199254740992, 'fixed', 53);
\echo :LAST_ERROR_SQLSTATE
SELECT obfuscate_id(5, 'fixed', 64);
\echo :LAST_ERROR_SQLSTATE
SELECT obfuscate_id(5, 'no_such_key');
\echo :LAST_ERROR_SQLSTATE
SELECT create_obfuscation_key('fixed');
\echo :LAST_ERROR_SQLSTATE
SELECT create_obfuscation_key('short', '\x0102');
\echo :LAST_ERROR_SQLSTATE
SELECT create_obfuscation_key('Bad Name');
\echo :LAST_ERROR_SQLSTATE
SELECT drop_obfuscation_key('no_such_key');
\echo :LAST_ERROR_SQLSTATE
SET shardid.call_number_key = 'no_such_key';
SELECT call_number_compose(0, 1, 2);
\echo :LAST_ERROR_SQLSTATE
RESET shardid.call_number_key;

-- Ordinary roles use the keys through the functions, but cannot read or
-- change the key ring.
CREATE ROLE key_user;
SET ROLE key_user;
SELECT obfuscate_id(1000000, 'fixed') = 2 AS same_as_above_is_not_the_point,
       reveal_id(obfuscate_id(1000000, 'fixed'), 'fixed') AS revealed;
SELECT secret FROM shardid_key;
\echo :LAST_ERROR_SQLSTATE
SELECT create_obfuscation_key('mine');
\echo :LAST_ERROR_SQLSTATE
SELECT drop_obfuscation_key('fixed');
\echo :LAST_ERROR_SQLSTATE
UPDATE shardid_key SET secret = '\x00000000000000000000000000000000';
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE key_user;

-- Rotation: a new key for new IDs, the old one kept for reveal_id.
SELECT drop_obfuscation_key('other');
SELECT obfuscate_id(5, 'other');
\echo :LAST_ERROR_SQLSTATE

-- Without Citus the key ring is the node's own: its trigger sends nothing,
-- shardid_sync_keys() is refused, saying why, and an ordinary role cannot
-- write the ring through shardid_key_apply() (docs/citus.md).
SELECT create_obfuscation_key('local_only');
SELECT drop_obfuscation_key('local_only');
SELECT shardid_sync_keys();
\echo :LAST_ERROR_SQLSTATE
CREATE ROLE key_user;
SET ROLE key_user;
SELECT shardid_key_apply('default', '\x00000000000000000000000000000000', now());
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE key_user;
