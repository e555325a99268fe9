-- The upgrade path: install 1.0, make data, ALTER EXTENSION UPDATE.
SET client_min_messages = warning;
DROP EXTENSION IF EXISTS shardid CASCADE;
RESET client_min_messages;
CREATE EXTENSION shardid VERSION '1.0';
SELECT extversion FROM pg_extension WHERE extname = 'shardid';
SELECT create_layout('upgrade_layout', '2024-01-01', '1 ms', 41, 4, 16);
CREATE TABLE kept (id bigint PRIMARY KEY DEFAULT next_id('upgrade_layout', 2), v text);
INSERT INTO kept (v) SELECT 'before ' || g FROM generate_series(1, 10) g;
SELECT count(*) AS created_within_exists FROM pg_proc WHERE proname = 'id_created_within';
ALTER EXTENSION shardid UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'shardid';
SELECT count(*) AS created_within_exists FROM pg_proc WHERE proname = 'id_created_within';
INSERT INTO kept (v) SELECT 'after ' || g FROM generate_series(1, 10) g;
SELECT count(*) AS rows, count(DISTINCT id) AS distinct_ids,
       (SELECT min(id) FROM kept WHERE v LIKE 'after%') > (SELECT max(id) FROM kept WHERE v LIKE 'before%') AS after_above_before,
       count(*) FILTER (WHERE id_created_within('upgrade_layout', id, tstzrange(now() - interval '1 minute', now() + interval '1 minute'))) AS recent
FROM kept;
-- The installed 1.1 (1.0 then the upgrade) has the same objects as the upgraded one.
SELECT count(*) AS functions FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'shardid';
DROP TABLE kept;
DROP EXTENSION shardid CASCADE;
CREATE EXTENSION shardid;
SELECT extversion FROM pg_extension WHERE extname = 'shardid';
SELECT count(*) AS functions FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'shardid';
