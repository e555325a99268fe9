-- Without shared_preload_libraries, the first backend that generates an ID
-- attaches the node-wide state lazily; everything else behaves the same.
SHOW shared_preload_libraries;
CREATE EXTENSION shardid;
WITH g AS (SELECT n, next_trace_id() AS id FROM generate_series(1, 100000) n),
     o AS (SELECT id, lag(id) OVER (ORDER BY n) AS prev FROM g)
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids,
       bool_and(prev IS NULL OR id > prev) AS strictly_increasing,
       bool_and((id >> 22) & 65535 = 7) AS all_node_7
FROM o;
-- Parallel workers attach too, and share the state.
CREATE TABLE rows_for_workers AS SELECT x FROM generate_series(1, 100000) x;
ANALYZE rows_for_workers;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT count(*) AS ids, count(DISTINCT id) AS distinct_ids
FROM (SELECT next_trace_id() AS id FROM rows_for_workers) s;
RESET ALL;
DROP TABLE rows_for_workers;
-- The node state takes only what it needs of the slack PostgreSQL leaves
-- in its segment: the Citus part (90 kB) is attached by Citus' paths alone.
SELECT obfuscate_id(42) IS NOT NULL AS obfuscated, next_call_number() IS NOT NULL AS call_number;
SELECT name FROM pg_shmem_allocations WHERE name LIKE 'shardid%' ORDER BY name;
-- A value set before shardid is loaded that PostgreSQL does not accept
-- keeps the setting's default, with only PostgreSQL's WARNING; shardid then
-- issues nothing in that session (cluster 0 is not what was configured).
\c
SET shardid.cluster_id = 'x3';
SELECT next_trace_id() IS NOT NULL AS issued;
SELECT state, last_error FROM shardid_coordination();
SET shardid.cluster_id = 3;
SELECT next_trace_id() IS NOT NULL AS issued;
-- A new session with a value it accepts issues.
\c
SET shardid.cluster_id = 3;
SELECT next_trace_id() IS NOT NULL AS issued;
SELECT state, last_error FROM shardid_coordination();
-- Node ids from etcd need the coordinator, which only preloading starts: a
-- session told to take its id from etcd does not issue under
-- shardid.node_id instead.
\c
SET shardid.node_id_source = 'etcd';
SELECT next_trace_id() IS NOT NULL AS issued;
SELECT state, last_error FROM shardid_coordination();
\c
