-- shardid 1.2 -> 1.3: shard claims at Instagram's scale that outlive
-- etcd's data (docs/coordination.md).
--   - shardid_coordination() gains rechecks_failed and unconfirmed_seconds:
--     re-checks of the shard values held that could not be made, and the
--     time the node issued nothing for want of one. (A function's result
--     columns cannot be changed in place: it is made again, with its
--     grants.)
\echo Use "ALTER EXTENSION shardid UPDATE TO '1.3'" to load this file. \quit

DROP FUNCTION shardid_coordination();
CREATE FUNCTION shardid_coordination(OUT source text, OUT state text, OUT node_id integer, OUT node_id_from text,
                                     OUT claimed_at timestamptz, OUT lease_id text, OUT lease_ttl integer,
                                     OUT issuing_until timestamptz, OUT window_start timestamptz,
                                     OUT window_end timestamptz, OUT endpoint text, OUT last_error text,
                                     OUT last_answer_at timestamptz, OUT requests bigint, OUT errors bigint,
                                     OUT password_in_clear boolean, OUT not_held_seconds double precision,
                                     OUT expiring_episodes bigint, OUT expiring_seconds double precision,
                                     OUT renewals_late bigint, OUT refused_waiting bigint,
                                     OUT refused_clock_lead bigint, OUT refused_misconfigured bigint,
                                     OUT rechecks_failed bigint, OUT unconfirmed_seconds double precision)
    RETURNS record
    AS 'MODULE_PATHNAME', 'shardid_coordination'
    LANGUAGE C VOLATILE PARALLEL SAFE;
REVOKE EXECUTE ON FUNCTION shardid_coordination() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION shardid_coordination() TO pg_monitor;
COMMENT ON FUNCTION shardid_coordination() IS
    'where this node''s id comes from (setting, etcd or citus, and node_id_from: which file and line of the configuration asks for it; on a Citus worker its group fence) and, with etcd, the claim: id held, lease, until when IDs '
    'are issued without a renewal, the time window recorded in etcd, endpoint, last error, whether the etcd password goes over http://; since the server started: seconds without a node id, episodes and '
    'seconds of expiring, late renewals, generations refused by cause, re-checks of the shard values held that could not be made, and seconds '
    'in which they were unconfirmed (a scrape every minute sees a 3 s outage); superusers and pg_monitor';

-- On a Citus worker (the update comes from the coordinator, over Citus' own
-- connection), the default key CREATE EXTENSION made is marked
-- from_coordinator, as 1.3 makes it: the worker refuses it once its
-- metadata is taken away (src/pg/functions/keys.cpp, confirm_key()).
UPDATE shardid_key k SET from_coordinator = true
WHERE k.made_by_install
  AND pg_catalog.current_setting('application_name') OPERATOR(pg_catalog.~~) 'citus\_internal gpid=%';
COMMENT ON COLUMN shardid_key.from_coordinator IS
    'on a Citus worker: sent by the coordinator, which replaces it when its own changes (shardid_sync_keys()), '
    'or made by the CREATE EXTENSION the coordinator sent';

-- A value shardid.shards no longer lists after a reload is refused at once
-- (state "not declared").
COMMENT ON FUNCTION shardid_shard_claims() IS
    'node ids from etcd: every shard field value this node holds, claims or is refused: the layout that first used '
    'it, its claim space, the shard, the state (claiming, held, held elsewhere, refused, taking over, releasing, ahead of the clock, not declared), '
    'whether it is the node''s own id, the mark it was claimed above, since when it is held, when an ID last used '
    'it, and another holder or what is wrong; superusers and pg_monitor';

-- Call numbers never repeat across a change of the call-number key
-- (src/core/callnum.hpp, key eras): a worker asks the coordinator for a run
-- id in its key's era.
DROP FUNCTION shardid_take_cluster_counter(text, bigint);
CREATE FUNCTION shardid_take_cluster_counter(counter text, above bigint, key bigint DEFAULT 0) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_take_cluster_counter'
    LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION shardid_take_cluster_counter(text, bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION shardid_take_cluster_counter(text, bigint, bigint) IS
    'on a Citus coordinator, asked by a worker: a DecimalId generator id (counter ''generator'') or a call-number '
    'run id (''run'', in the key era of the call-number key with fingerprint key) above the worker''s floor; the '
    'coordinator hands out every one of the cluster (superusers)';
CREATE FUNCTION shardid_take_cluster_runs(above bigint, key bigint, n integer) RETURNS bigint[]
    AS 'MODULE_PATHNAME', 'shardid_take_cluster_runs'
    LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION shardid_take_cluster_runs(bigint, bigint, integer) FROM PUBLIC;
COMMENT ON FUNCTION shardid_take_cluster_runs(bigint, bigint, integer) IS
    'on a Citus coordinator, asked by a worker refilling its spare call-number runs: n (1 to 64) run ids in the '
    'key era of the call-number key with fingerprint key, above the worker''s floor, made durable in one record '
    '(superusers)';
-- Keys under a fence (src/pg/citus/key_lease.cpp): a Citus worker leases the
-- coordinator's key ring.
CREATE TRIGGER shardid_key_ring_leases
    BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON shardid_key
    FOR EACH STATEMENT EXECUTE FUNCTION shardid_key_ring_spread();
CREATE FUNCTION shardid_citus_key_lease(fence integer) RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_citus_key_lease'
    LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION shardid_citus_key_lease(integer) FROM PUBLIC;
COMMENT ON FUNCTION shardid_citus_key_lease(integer) IS
    'on a Citus coordinator, asked by a worker''s fence: the key ring under a lease of '
    'at most fence ms, which a change of the ring waits out before it changes a row (superusers)';
COMMENT ON FUNCTION next_call_number() IS
    'next short public call number: 8 base62 characters, run_id | sequence shuffled by shardid.call_number_key, '
    'in that key''s era of run ids (run_id >> 22): never issued twice across keys (255 eras at most)';
COMMENT ON FUNCTION call_number_decode(text) IS
    'version, run id and sequence of a call number (with the key shardid.call_number_key names, which must be the '
    'key of the number''s era, run_id >> 22; in SQL only: the key never leaves the server)';
COMMENT ON FUNCTION reveal_id(bigint, text, integer) IS
    'the inverse of obfuscate_id with the same key and domain (in SQL only: the key never leaves the server)';
