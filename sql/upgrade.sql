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
-- A layout made before 1.2 got the function that carries it through
-- pg_dump: outside the extension (so pg_dump dumps it), dropped with it.
SELECT p.proname, d.deptype FROM pg_proc p
JOIN pg_depend d ON d.objid = p.oid AND d.refclassid = 'pg_extension'::regclass
WHERE p.proname LIKE 'shardid\_layout$%';
-- The upgraded extension has the same objects as a fresh install: every
-- function with its arguments, volatility, settings and body.
CREATE TABLE upgraded_objects AS
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, p.provolatile, p.proparallel,
       p.prosecdef, p.proconfig, md5(p.prosrc) AS body, obj_description(p.oid, 'pg_proc') AS comment
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'shardid';
SELECT count(*) AS functions, count(*) FILTER (WHERE comment IS NULL) AS without_comment FROM upgraded_objects;
DROP TABLE kept;
DROP EXTENSION shardid CASCADE;
CREATE EXTENSION shardid;
SELECT extversion FROM pg_extension WHERE extname = 'shardid';
CREATE TABLE fresh_objects AS
SELECT p.proname, pg_get_function_identity_arguments(p.oid) AS args, p.provolatile, p.proparallel,
       p.prosecdef, p.proconfig, md5(p.prosrc) AS body, obj_description(p.oid, 'pg_proc') AS comment
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'shardid';
(TABLE upgraded_objects EXCEPT TABLE fresh_objects) UNION ALL (TABLE fresh_objects EXCEPT TABLE upgraded_objects);
-- Every SQL and PL/pgSQL function pins its search_path, pg_catalog first.
SELECT p.proname, p.proconfig FROM pg_proc p
JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'shardid'
JOIN pg_language l ON l.oid = p.prolang AND l.lanname IN ('sql', 'plpgsql')
WHERE p.proconfig IS NULL OR NOT p.proconfig[1] LIKE 'search_path=pg_catalog%';
DROP TABLE upgraded_objects, fresh_objects;
