-- shardid's settings: defaults, ranges, and who may change them.
SET timezone = 'UTC';
SET client_min_messages = warning;  -- the same output alone or after other tests
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
\set VERBOSITY default

SHOW shardid.node_id;
SHOW shardid.max_clock_lead;
SHOW shardid.clock_offset_ms;
SELECT name, context, unit, min_val, max_val FROM pg_settings WHERE name LIKE 'shardid.%' ORDER BY name;

-- Unset node id: 55000 with a hint.
SET shardid.node_id = -1;
SELECT next_trace_id();
\echo :LAST_ERROR_SQLSTATE
-- Out of the 16-bit node field: 22003 naming the range.
SET shardid.node_id = 65536;
SELECT next_trace_id();
\echo :LAST_ERROR_SQLSTATE
SET shardid.node_id = 65535;
SELECT (trace_id_decode(next_trace_id())).node_no;
SET shardid.node_id = 0;
SELECT (trace_id_decode(next_trace_id())).node_no;
-- Below -1 is not a value at all.
SET shardid.node_id = -2;
\echo :LAST_ERROR_SQLSTATE
SET shardid.no_such_setting = 1;
\echo :LAST_ERROR_SQLSTATE
RESET shardid.node_id;

-- Ordinary roles generate and decode, but cannot change identity or clock
-- settings.
CREATE ROLE shardid_app LOGIN;
CREATE TABLE events (id bigint PRIMARY KEY DEFAULT next_trace_id(), what text);
GRANT INSERT, SELECT ON events TO shardid_app;
SET ROLE shardid_app;
INSERT INTO events (what) VALUES ('signup'), ('login');
SELECT what, (trace_id_decode(id)).node_no FROM events ORDER BY id;
SET shardid.node_id = 3;
\echo :LAST_ERROR_SQLSTATE
SET shardid.clock_offset_ms = -60000;
\echo :LAST_ERROR_SQLSTATE
SET shardid.max_clock_lead = '1h';
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- The settings that move the node's shared clock, or decide whether its
-- state reaches standbys, are the whole server's: no session sets them,
-- a superuser's neither.
SET shardid.clock_offset_ms = 86400000;
\echo :LAST_ERROR_SQLSTATE
SET shardid.max_clock_lead = '1h';
\echo :LAST_ERROR_SQLSTATE
SET shardid.wal_log_mark = off;
\echo :LAST_ERROR_SQLSTATE
ALTER ROLE shardid_app SET shardid.max_clock_lead = '1h';
\echo :LAST_ERROR_SQLSTATE

-- A superuser may set it per role or database too.
ALTER ROLE shardid_app SET shardid.node_id = 12;
SELECT setconfig FROM pg_db_role_setting WHERE setrole = 'shardid_app'::regrole;
ALTER ROLE shardid_app RESET shardid.node_id;

DROP TABLE events;
DROP ROLE shardid_app;

-- Node ids from etcd (shardid.node_id_source): its settings are hidden from
-- ordinary roles, and so is the claim's state.
SELECT source, state, node_id IS NOT NULL AS has_node_id FROM shardid_coordination();
-- Where the node id comes from, down to the file and line (pg_regress
-- appends its settings to postgresql.conf), or a SET of this session.
SELECT node_id_from ~ '^setting: shardid\.node_id \(postgresql\.conf line [0-9]+\)$' AS names_file_and_line
FROM shardid_coordination();
SET shardid.node_id = 8;
SELECT node_id_from FROM shardid_coordination();
RESET shardid.node_id;
CREATE ROLE guc_etcd_reader;
SET ROLE guc_etcd_reader;
SELECT name FROM pg_settings WHERE name LIKE 'shardid.etcd%' OR name = 'shardid.node_id_source' ORDER BY name;
SELECT * FROM shardid_coordination();
RESET ROLE;
DROP ROLE guc_etcd_reader;

-- shardid.shards: the shards this node declares it owns (the whole
-- server's: set in postgresql.conf); a malformed list is refused as given.
SET shardid.shards = '0-511';
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default
ALTER SYSTEM SET shardid.shards = '5-3';
ALTER SYSTEM SET shardid.shards = '0-511,x';
ALTER SYSTEM SET shardid.shards = '0-2147483648';
\set VERBOSITY terse
-- Without a coordinator, no shard value is claimed: no claims, no release.
SELECT count(*) FROM shardid_shard_claims();
SELECT cause FROM shardid_shard_refusals() ORDER BY cause;
SELECT shardid_release_shard('snowflake', 5);
SELECT shardid_release_shard('snowflake', 1024);
