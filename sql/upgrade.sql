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
-- A role granted create_layout() keeps it through the update (1.2 gives it
-- a seven-argument form for short-lived layouts, granted on its own); no
-- one else gains either.
CREATE ROLE shardid_upgrade_admin;
GRANT EXECUTE ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer) TO shardid_upgrade_admin;
ALTER EXTENSION shardid UPDATE;
SELECT extversion FROM pg_extension WHERE extname = 'shardid';
SELECT has_function_privilege('shardid_upgrade_admin', 'create_layout(text, timestamptz, interval, integer, integer, integer)', 'EXECUTE') AS admin_keeps_it,
       has_function_privilege('shardid_upgrade_admin', 'create_layout(text, timestamptz, interval, integer, integer, integer, boolean)', 'EXECUTE') AS admin_short_lived,
       has_function_privilege('pg_monitor', 'create_layout(text, timestamptz, interval, integer, integer, integer)', 'EXECUTE') AS others_have_it;
-- ... and it still makes layouts, as the superuser who owns the function.
SET ROLE shardid_upgrade_admin;
SELECT create_layout('made_after_update', '2024-01-01', '1 ms', 41, 4, 16);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer) FROM shardid_upgrade_admin;
DROP ROLE shardid_upgrade_admin;
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
WHERE p.proname LIKE 'shardid\_layout$%'
ORDER BY p.proname;
-- The upgraded extension has the same objects as a fresh install, which runs
-- the full script shardid--1.4.sql alone: two different paths. Compared
-- object by object: functions (arguments, result, volatility, strictness,
-- parallel safety, security, settings, support function, body, privileges,
-- comment), relations (kind, privileges, comment), columns (type, NOT NULL,
-- default, comment), constraints, triggers, view definitions, sequences,
-- schemas, and what pg_dump dumps of the extension's tables. (NOT NULL is
-- compared with the columns: PostgreSQL 18 also keeps it as a constraint.)
CREATE FUNCTION pg_temp.shardid_objects() RETURNS TABLE (kind text, name text, def text) LANGUAGE sql AS $$
WITH members AS (
    SELECT d.classid, d.objid FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
    WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'shardid')
SELECT 'function', p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')',
       concat_ws(' | ', pg_get_function_result(p.oid), p.provolatile, p.proisstrict, p.proparallel, p.prosecdef,
                 p.proconfig::text, p.prosupport::text, md5(p.prosrc), p.proacl::text,
                 coalesce(obj_description(p.oid, 'pg_proc'), 'NO COMMENT'))
FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
UNION ALL
SELECT 'relation', c.relname, concat_ws(' | ', c.relkind, c.relacl::text, obj_description(c.oid, 'pg_class'))
FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
UNION ALL
SELECT 'column', c.relname || '.' || a.attname,
       concat_ws(' | ', a.attnum, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                 pg_get_expr(ad.adbin, ad.adrelid), col_description(c.oid, a.attnum))
FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef ad ON ad.adrelid = c.oid AND ad.adnum = a.attnum
UNION ALL
SELECT 'constraint', c.relname || '.' || co.conname, pg_get_constraintdef(co.oid)
FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
JOIN pg_constraint co ON co.conrelid = c.oid AND co.contype <> 'n'
UNION ALL
SELECT 'trigger', c.relname || '.' || t.tgname, pg_get_triggerdef(t.oid) || ' enabled ' || t.tgenabled::text
FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
JOIN pg_trigger t ON t.tgrelid = c.oid AND NOT t.tgisinternal
UNION ALL
SELECT 'view', c.relname, pg_get_viewdef(c.oid)
FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid WHERE c.relkind = 'v'
UNION ALL
SELECT 'sequence', c.relname, concat_ws(' | ', s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcycle)
FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
JOIN pg_sequence s ON s.seqrelid = c.oid
UNION ALL
SELECT 'schema', n.nspname, concat_ws(' | ', n.nspacl::text, obj_description(n.oid, 'pg_namespace'))
FROM pg_namespace n JOIN members m ON m.classid = 'pg_namespace'::regclass AND m.objid = n.oid
UNION ALL
SELECT 'dumped', c::regclass::text, coalesce(e.extcondition[i], '')
FROM pg_extension e, unnest(e.extconfig) WITH ORDINALITY AS x(c, i) WHERE e.extname = 'shardid'
$$;
CREATE TABLE upgraded_objects AS SELECT * FROM pg_temp.shardid_objects();
SELECT kind, count(*) FROM upgraded_objects GROUP BY kind ORDER BY kind;
SELECT count(*) AS functions_without_comment FROM upgraded_objects WHERE kind = 'function' AND def LIKE '%NO COMMENT';
DROP TABLE kept;
DROP EXTENSION shardid CASCADE;
CREATE EXTENSION shardid;
SELECT extversion FROM pg_extension WHERE extname = 'shardid';
CREATE TABLE fresh_objects AS SELECT * FROM pg_temp.shardid_objects();
-- Nothing differs (each row would be an object of one path only).
(TABLE upgraded_objects EXCEPT TABLE fresh_objects) UNION ALL (TABLE fresh_objects EXCEPT TABLE upgraded_objects);
-- Every SQL and PL/pgSQL function pins its search_path, pg_catalog first.
SELECT p.proname, p.proconfig FROM pg_proc p
JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'shardid'
JOIN pg_language l ON l.oid = p.prolang AND l.lanname IN ('sql', 'plpgsql')
WHERE p.proconfig IS NULL OR NOT p.proconfig[1] LIKE 'search_path=pg_catalog%';
DROP TABLE upgraded_objects, fresh_objects;
