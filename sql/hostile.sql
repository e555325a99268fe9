-- A hostile but ordinary role, and the paths where shardid runs SQL or
-- reads its own tables on a caller's behalf. The role plants look-alike
-- operators and functions in a schema it controls (and, as a database
-- owner might, in the extension's schema public); every planted object
-- records that it ran, and tries to make its role a superuser. None may ever
-- run: the log stays empty and the role stays ordinary.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
DROP ROLE IF EXISTS shardid_hostile;
RESET client_min_messages;
CREATE ROLE shardid_hostile LOGIN;
CREATE SCHEMA hostile AUTHORIZATION shardid_hostile;
GRANT CREATE ON SCHEMA public TO shardid_hostile;
CREATE TABLE public.hostile_log (planted text, ran_as text);
GRANT INSERT ON public.hostile_log TO PUBLIC;
SELECT create_layout('hostile_orders', '2024-01-01', '1 ms', 41, 4, 8);
SELECT create_obfuscation_key('hostile_key', '\x000102030405060708090a0b0c0d0e0f');
SELECT create_layout('monthly_two', '2020-01-01', '30 days', 30, 4, 1);

\c - shardid_hostile
CREATE FUNCTION hostile.evil_texteq(text, text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.hostile_log VALUES ('hostile.=(text,text)', current_user);
    BEGIN EXECUTE 'ALTER ROLE shardid_hostile SUPERUSER'; EXCEPTION WHEN OTHERS THEN NULL; END;
    RETURN $1 OPERATOR(pg_catalog.=) $2;
END $$;
CREATE OPERATOR hostile.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hostile.evil_texteq);
CREATE FUNCTION hostile.evil_mul(numeric, integer) RETURNS numeric LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.hostile_log VALUES ('hostile.*(numeric,integer)', current_user);
    BEGIN EXECUTE 'ALTER ROLE shardid_hostile SUPERUSER'; EXCEPTION WHEN OTHERS THEN NULL; END;
    RETURN 0;
END $$;
CREATE OPERATOR hostile.* (LEFTARG = numeric, RIGHTARG = integer, FUNCTION = hostile.evil_mul);
-- As a database owner could: look-alikes of what shardid's SQL bodies call,
-- in the extension's own schema (exact argument types, so they would win
-- over pg_catalog's on any path that lists public).
CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.hostile_log VALUES ('public.now()', current_user);
    BEGIN EXECUTE 'ALTER ROLE shardid_hostile SUPERUSER'; EXCEPTION WHEN OTHERS THEN NULL; END;
    RETURN '2000-01-01';
END $$;
CREATE FUNCTION public.pg_get_serial_sequence(text, name) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.hostile_log VALUES ('public.pg_get_serial_sequence(text,name)', current_user);
    RETURN NULL;
END $$;
CREATE FUNCTION public.length(bytea) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.hostile_log VALUES ('public.length(bytea)', current_user);
    RETURN 16;
END $$;
CREATE FUNCTION public.format(text, regclass, integer, bigint) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.hostile_log VALUES ('public.format(...)', current_user);
    RETURN 'SELECT 1';
END $$;
CREATE FUNCTION public.array_position(smallint[], smallint) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.hostile_log VALUES ('public.array_position(smallint[],smallint)', current_user);
    RETURN 1;
END $$;

-- 1. The key ring, read for obfuscate_id, reveal_id, next_opaque_id and
--    the call-number shuffle, in a session that has cached nothing, with
--    the role's schema ahead of pg_catalog.
\c - shardid_hostile
SET search_path = hostile, pg_catalog, public;
BEGIN;  -- the planted operator works for its own role (its log row rolled back)
SELECT 'a' = 'a' AS planted_operator_is_live_for_the_caller;
ROLLBACK;
SELECT obfuscate_id(5, 'hostile_key') = obfuscate_id(5, 'hostile_key') AS key_read,
       reveal_id(obfuscate_id(5, 'hostile_key'), 'hostile_key') AS revealed,
       obfuscate_id(5) > 0 AS default_key_read;
SELECT reveal_id(next_opaque_id('snowflake', 'hostile_key'), 'hostile_key') > 0 AS opaque_id;
SELECT length(call_number_compose(0, 1, 2)) AS call_number_chars;
SELECT obfuscate_id(5, 'no_such_key');
\echo :LAST_ERROR_SQLSTATE
-- 2. A user layout, read for next_id and the decoders (nothing cached).
\c - shardid_hostile
SET search_path = hostile, pg_catalog, public;
BEGIN;
SELECT 2::numeric * 3 AS planted_mul_is_live_for_the_caller;
ROLLBACK;
SELECT * FROM id_decode('hostile_orders', id_compose('hostile_orders', '2026-11-20 00:00:00.123+00', 3, 7));
SELECT id_timestamp('hostile_orders', next_id('hostile_orders', 1)) > '2026-01-01' AS generated;
SELECT count(*) AS slots_of_hostile_orders FROM shardid_status WHERE layout OPERATOR(pg_catalog.=) 'hostile_orders';
-- A look-alike of a layout's dump carrier, planted where the extension's
-- functions live: never read (carriers live in shardid_carrier), never run.
CREATE FUNCTION public."shardid_layout$planted"() RETURNS text LANGUAGE sql IMMUTABLE
    AS $$SELECT 'shardid layout v1: name=planted epoch_ms=0 unit_ms=1 time_bits=41 shard_bits=10 sequence_bits=12'::text$$;
SELECT * FROM id_decode('planted', 12345);
\echo :LAST_ERROR_SQLSTATE
DROP FUNCTION public."shardid_layout$planted"();
-- And where carriers live, nothing of hers can be put, replaced or dropped.
CREATE FUNCTION shardid_carrier."shardid_layout$planted"() RETURNS text LANGUAGE sql IMMUTABLE
    AS $$SELECT 'shardid layout v1: name=planted epoch_ms=0 unit_ms=1 time_bits=41 shard_bits=10 sequence_bits=12'::text$$;
\echo :LAST_ERROR_SQLSTATE
DROP FUNCTION shardid_carrier."shardid_layout$hostile_orders"();
\echo :LAST_ERROR_SQLSTATE
-- 3. The role cannot reach the key ring or the layout catalog directly.
SELECT * FROM shardid_key;
\echo :LAST_ERROR_SQLSTATE
SELECT create_layout('planted_layout', '2024-01-01', '1 ms', 41, 4, 8);
\echo :LAST_ERROR_SQLSTATE

-- 4. SQL and PL/pgSQL bodies run by a superuser with public (planted) on
--    its path: create_layout (SECURITY DEFINER), create_obfuscation_key,
--    drop_obfuscation_key, decimal_id_generator_progression,
--    shardid_convert_column, and the layout catalog's trigger.
\c - postgres
SET search_path = hostile, pg_catalog, public;
SELECT create_layout('pinned_layout', '2024-01-01', '1 ms', 41, 4, 8);
SELECT create_obfuscation_key('pinned_key');
SELECT drop_obfuscation_key('pinned_key');
SELECT decimal_id_generator_progression(0, 1) > 0 AS progression;
CREATE TABLE public.legacy_keys (id serial PRIMARY KEY, v text);
CREATE TABLE public.legacy_refs (ref int REFERENCES public.legacy_keys (id));
INSERT INTO public.legacy_keys (v) VALUES ('a'), ('b');
SELECT shardid_convert_column('public.legacy_keys', 'id');
SELECT pg_get_expr(adbin, adrelid) AS new_default FROM pg_attrdef WHERE adrelid = 'public.legacy_keys'::regclass;
UPDATE shardid_user_layout SET time_bits = 40 WHERE name OPERATOR(pg_catalog.=) 'pinned_layout';
\echo :LAST_ERROR_SQLSTATE
RESET search_path;
-- Nothing planted ever ran, and the role is still ordinary.
SELECT planted, ran_as FROM public.hostile_log;
SELECT rolsuper AS hostile_became_superuser FROM pg_roles WHERE rolname = 'shardid_hostile';

-- 5. The layout catalog is permanent against TRUNCATE too.
TRUNCATE shardid_user_layout;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) > 0 AS layouts_kept FROM shardid_user_layout;

-- 6. A row written into the catalog directly (bypassing create_layout's
--    checks) is checked when read: no division by zero, no odd shapes.
INSERT INTO shardid_user_layout (name, epoch, time_unit, time_bits, shard_bits, sequence_bits)
VALUES ('zero_unit', '2024-01-01', '0', 41, 4, 8), ('month_unit', '2024-01-01', '1 mon', 30, 4, 8),
       ('huge_unit', '2024-01-01', '106751991 days 23:59:59', 41, 4, 8);
SELECT * FROM id_decode('zero_unit', 12345);
\echo :LAST_ERROR_SQLSTATE
SELECT next_id('month_unit', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT id_timestamp('huge_unit', 12345);
\echo :LAST_ERROR_SQLSTATE
-- An interval that overflows as microseconds is refused, not read as
-- something else.
SELECT create_layout('overflowing_unit', '2024-01-01', '106751992 days', 2, 4, 8);
\echo :LAST_ERROR_SQLSTATE

-- 7. Every layout create_layout accepts works with the view and functions.
SELECT create_layout('longest_ticks', '2024-01-01', '1000 days', 26, 4, 8);
SELECT create_layout('widest_time', '1970-01-01', '1 ms', 62, 0, 1);
SELECT name, ends_at, total_bits FROM shardid_layouts
WHERE name IN ('longest_ticks', 'widest_time', 'snowflake') ORDER BY name;
SELECT id_min('widest_time', '2026-11-20') > 0 AS min_id, id_timestamp('widest_time', id_min('widest_time', '2026-11-20'));
SELECT id_timestamp('longest_ticks', next_id('longest_ticks', 0)) <= now() AS longest_generates;

-- 8. Reads never write: in a read-only transaction, in a session that has
--    cached nothing, every reader works (the default key exists from
--    CREATE EXTENSION on).
\c - shardid_hostile
SET default_transaction_read_only = on;
SELECT reveal_id(obfuscate_id(42), 'default') AS default_key_read_only,
       reveal_id(obfuscate_id(42, 'hostile_key', 53), 'hostile_key', 53) AS named_key_read_only;
SELECT (call_number_decode(call_number_compose(0, 8452, 11827))).* ;
SELECT (id_decode('hostile_orders', id_compose('hostile_orders', '2026-11-20', 1, 2))).shard AS layout_read_only;
SELECT base62_decode(base62_encode(123456789)), base32_decode(base32_encode(123456789));
BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY;
SELECT reveal_id(obfuscate_id(7)) AS serializable_read_only;
COMMIT;
RESET default_transaction_read_only;

-- 9. Waits can be cancelled: a layout of two IDs per 30-day tick waits for
--    the next tick on the third call, until statement_timeout ends it.
SET statement_timeout = '1s';
SELECT count(next_id('monthly_two', 1)) FROM generate_series(1, 3);
\echo :LAST_ERROR_SQLSTATE
RESET statement_timeout;

-- 10. A rolled-back switch of the DecimalId progression never lets its
--     generator id come back: the next one is above it.
\c - postgres
BEGIN;
SELECT decimal_id_generator_progression(((s.last_value + 1) % 4)::int, 4) AS rolled_back
FROM shardid_generator_seq s \gset
ROLLBACK;
CREATE TEMP TABLE after_rollback AS SELECT decimal_id_new_generator() AS generator;
SELECT generator > :rolled_back AS above_the_rolled_back_one FROM after_rollback;
SELECT (decimal_id_decode(next_decimal_id())).generator_id = (SELECT generator FROM after_rollback) AS in_use;

-- 11. DROP/CREATE EXTENSION: the recreated sequences start over, but no
--     generator id or run id this node took before comes back, also in a
--     session (a pooled connection) that keeps its run.
CREATE TABLE public.before_drop AS
SELECT (decimal_id_decode(next_decimal_id())).generator_id AS generator,
       (call_number_decode(next_call_number())).run_id AS run;
DROP TABLE public.legacy_refs, public.legacy_keys;
DROP EXTENSION shardid;
CREATE EXTENSION shardid;
SELECT last_value AS recreated_sequence_starts_over FROM shardid_generator_seq;
SELECT decimal_id_new_generator() > (SELECT generator FROM before_drop) AS generator_above_before_drop;
\c - postgres
SELECT (call_number_decode(next_call_number())).run_id > (SELECT max(run) FROM public.before_drop) AS run_above_before_drop;

-- 12. shardid_convert_column with the extension in a schema whose name
--     needs quoting.
DROP EXTENSION shardid;
CREATE SCHEMA "Shard Id";
CREATE EXTENSION shardid SCHEMA "Shard Id";
CREATE TABLE public.quoted_keys (id serial PRIMARY KEY);
INSERT INTO public.quoted_keys DEFAULT VALUES;
SELECT "Shard Id".shardid_convert_column('public.quoted_keys', 'id');
INSERT INTO public.quoted_keys DEFAULT VALUES;
SELECT count(*) AS rows, max(id) > 1 AS new_id_generated FROM public.quoted_keys;
DROP TABLE public.quoted_keys;
DROP EXTENSION shardid;
DROP SCHEMA "Shard Id";
CREATE EXTENSION shardid;

-- Clean up what was planted.
DROP FUNCTION public.now(), public.pg_get_serial_sequence(text, name), public.length(bytea),
              public.format(text, regclass, integer, bigint), public.array_position(smallint[], smallint);
DROP TABLE public.hostile_log, public.before_drop;
DROP SCHEMA hostile CASCADE;
REVOKE CREATE ON SCHEMA public FROM shardid_hostile;
DROP ROLE shardid_hostile;
