-- shardid 1.4: the full install script. CREATE EXTENSION shardid runs this
-- script alone; installations of 1.0, 1.1, 1.2 or 1.3 reach the same objects
-- through shardid--1.0--1.1.sql, shardid--1.1--1.2.sql,
-- shardid--1.2--1.3.sql and shardid--1.3--1.4.sql (sql/upgrade.sql compares
-- the two paths object by object).
--   - Every SQL and PL/pgSQL body resolves names with pg_catalog first and
--     nothing a caller controls: search_path = pg_catalog, pg_temp, and the
--     extension's own objects qualified with its schema.
\echo Use "CREATE EXTENSION shardid" to load this file. \quit

-- TraceId (SPEC 2.1): 0 | 25-bit Unix seconds | 16-bit node | 22-bit counter

CREATE FUNCTION next_trace_id() RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_next_trace_id'
    LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION next_trace_id() IS
    'next TraceId of this node: 25-bit seconds | 16-bit shardid.node_id | 22-bit counter';

CREATE FUNCTION trace_id_decode(id bigint, near timestamptz DEFAULT now(),
                                OUT created_at timestamptz, OUT node_no integer, OUT counter integer)
    AS 'MODULE_PATHNAME', 'shardid_trace_id_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION trace_id_decode(bigint, timestamptz) IS
    'fields of a TraceId; its 25-bit time resolves to the latest second not after near + 1 day';

CREATE FUNCTION trace_id_timestamp(id bigint, near timestamptz DEFAULT now()) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'shardid_trace_id_timestamp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION trace_id_timestamp(bigint, timestamptz) IS
    'creation time of a TraceId, resolved near the given time (default now())';

-- "time | shard | sequence" layouts (SPEC 2.3, 2.4, 3)
--
-- Built-in layouts live in the C++ core; users' layouts in this table. A
-- layout is permanent: issued IDs depend on its definition, so rows cannot
-- be changed or deleted (DROP EXTENSION removes them all).

CREATE TABLE shardid_user_layout (
    name          text PRIMARY KEY,
    epoch         timestamptz NOT NULL,
    time_unit     interval NOT NULL,
    time_bits     smallint NOT NULL CHECK (time_bits BETWEEN 1 AND 62),
    shard_bits    smallint NOT NULL CHECK (shard_bits BETWEEN 0 AND 61),
    sequence_bits smallint NOT NULL CHECK (sequence_bits BETWEEN 1 AND 62),
    created_at    timestamptz NOT NULL DEFAULT now(),
    CHECK (time_bits + shard_bits + sequence_bits <= 63)
);
COMMENT ON TABLE shardid_user_layout IS 'layouts made with create_layout(); permanent, dumped by pg_dump';
SELECT pg_catalog.pg_extension_config_dump('shardid_user_layout', '');
REVOKE ALL ON shardid_user_layout FROM PUBLIC;
GRANT SELECT ON shardid_user_layout TO PUBLIC;

CREATE FUNCTION shardid_refuse_layout_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'the shardid layout catalog cannot be truncated'
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'IDs already issued with a layout are decoded and ordered by its definition.',
                  HINT = 'Layouts are removed only with the extension (DROP EXTENSION shardid).';
    END IF;
    RAISE EXCEPTION 'layout "%" cannot be changed or dropped', OLD.name
        USING ERRCODE = 'object_not_in_prerequisite_state',
              DETAIL = 'IDs already issued with a layout are decoded and ordered by its definition.',
              HINT = 'Create a layout with a new name instead.';
END $$;
COMMENT ON FUNCTION shardid_refuse_layout_change() IS
    'trigger: layouts are permanent (refuses UPDATE, DELETE and TRUNCATE of shardid_user_layout)';
CREATE TRIGGER shardid_user_layout_permanent
    BEFORE UPDATE OR DELETE ON shardid_user_layout
    FOR EACH ROW EXECUTE FUNCTION shardid_refuse_layout_change();
CREATE TRIGGER shardid_user_layout_no_truncate
    BEFORE TRUNCATE ON shardid_user_layout
    FOR EACH STATEMENT EXECUTE FUNCTION shardid_refuse_layout_change();

-- Backends cache layouts and keys; a change of either catalog sends a cache
-- invalidation, which other backends apply when it commits and this one
-- applies at once and again if it rolls back (src/pg/generate/layouts.cpp), so no
-- cache ever holds a definition that was not committed.
CREATE FUNCTION shardid_catalog_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'shardid_catalog_changed'
    LANGUAGE C;
COMMENT ON FUNCTION shardid_catalog_changed() IS
    'trigger: tells every session to forget what it cached from a shardid catalog (layouts, keys) when it changes';
CREATE TRIGGER shardid_user_layout_changed
    AFTER INSERT ON shardid_user_layout
    FOR EACH STATEMENT EXECUTE FUNCTION shardid_catalog_changed();
-- It fires whatever session_replication_role is (a logical-replication
-- apply, or a session of a replication tool, writes with "replica"): a cache
-- kept past a change of its source is not one of committed state.
ALTER TABLE shardid_user_layout ENABLE ALWAYS TRIGGER shardid_user_layout_changed;

CREATE FUNCTION shardid_check_layout(name text, epoch timestamptz, time_unit interval,
                                     time_bits integer, shard_bits integer, sequence_bits integer)
    RETURNS void
    AS 'MODULE_PATHNAME', 'shardid_check_layout'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- A user layout's definition is kept twice: as the catalog row, and as a
-- function of its own, "shardid_layout$<name>"() (its carrier), in the
-- schema shardid_carrier. That schema is the extension's (a member, made by
-- the superuser who installs shardid, no privilege granted to anyone), so
-- no other role can drop, replace, pre-create or shadow a carrier: not even
-- a database owner, who owns the schema public. The carriers themselves are
-- not members: pg_dump dumps them (the objects of an extension's schema that
-- are not members are dumped) and a restore brings them back with the
-- schema, before any table's rows; they depend on the extension (DROP
-- EXTENSION drops them). The catalog's rows come back with the data,
-- possibly after a table whose generated column, CHECK constraint or default
-- uses the layout; until they do, shardid reads the layout from its carrier
-- (src/pg/generate/layouts.cpp: only a superuser-owned SQL function of that name in
-- that superuser-owned schema counts, and its body is read, never run).
CREATE SCHEMA shardid_carrier;
REVOKE ALL ON SCHEMA shardid_carrier FROM PUBLIC;
COMMENT ON SCHEMA shardid_carrier IS
    'shardid: the carriers of layout definitions through pg_dump (superusers only; dropped with the extension)';
CREATE FUNCTION shardid_carrier_name(name text) RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_carrier_name'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION shardid_carrier_name(text) IS
    'the name of the function that carries a layout through pg_dump ("shardid_layout$<name>", hashed when too long)';
CREATE FUNCTION shardid_carrier_body(name text, epoch timestamptz, time_unit interval, time_bits integer,
                                           shard_bits integer, sequence_bits integer) RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_carrier_body'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION shardid_carrier_body(text, timestamptz, interval, integer, integer, integer) IS
    'the SQL body of the function that carries a layout''s definition through pg_dump';

-- On Citus a carrier is a distributed function: Citus creates it on every
-- node, nodes added later included, and refuses DEPENDS ON EXTENSION for it;
-- it gets an automatic dependency on the extension instead, so DROP
-- EXTENSION still drops it (src/pg/generate/carrier_deps.cpp, which also records it
-- on the workers at DROP EXTENSION).
CREATE FUNCTION shardid_carrier_depend(carrier regprocedure) RETURNS void
    AS 'MODULE_PATHNAME', 'shardid_carrier_depend'
    LANGUAGE C STRICT;
REVOKE EXECUTE ON FUNCTION shardid_carrier_depend(regprocedure) FROM PUBLIC;
COMMENT ON FUNCTION shardid_carrier_depend(regprocedure) IS
    'record that a layout carrier Citus distributed is dropped with the extension (superusers)';

CREATE FUNCTION shardid_make_carrier(layout_name text) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    l record;
    fn text;
    distributed boolean := false;
BEGIN
    SELECT u.* INTO l FROM @extschema@.shardid_user_layout u WHERE u.name = layout_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'layout "%" does not exist', layout_name USING ERRCODE = 'undefined_object';
    END IF;
    fn := format('shardid_carrier.%I()', @extschema@.shardid_carrier_name(l.name));
    EXECUTE format('CREATE OR REPLACE FUNCTION %s RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS %L', fn,
                   @extschema@.shardid_carrier_body(l.name, l.epoch, l.time_unit, l.time_bits, l.shard_bits,
                                                          l.sequence_bits));
    EXECUTE format('COMMENT ON FUNCTION %s IS %L', fn,
                   format('definition of the shardid layout "%s", carried through pg_dump ahead of the table rows', l.name));
    IF NOT EXISTS (SELECT FROM pg_depend d
                    WHERE d.classid = 'pg_proc'::regclass AND d.objid = fn::regprocedure
                      AND d.refclassid = 'pg_extension'::regclass AND d.deptype IN ('x', 'e', 'a')) THEN
        IF to_regclass('pg_catalog.pg_dist_object') IS NOT NULL THEN
            EXECUTE 'SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_object o '
                    'WHERE o.classid = ''pg_catalog.pg_proc''::pg_catalog.regclass AND o.objid = $1)'
                INTO distributed USING fn::regprocedure::oid;
        END IF;
        IF distributed THEN
            PERFORM @extschema@.shardid_carrier_depend(fn::regprocedure);
        ELSE
            EXECUTE format('ALTER FUNCTION %s DEPENDS ON EXTENSION shardid', fn);
        END IF;
    END IF;
END $$;
REVOKE EXECUTE ON FUNCTION shardid_make_carrier(text) FROM PUBLIC;
COMMENT ON FUNCTION shardid_make_carrier(text) IS
    'make (or remake) the "shardid_layout$<name>"() function that carries a layout through pg_dump (superusers)';

CREATE FUNCTION create_layout(name text, epoch timestamptz, time_unit interval,
                              time_bits integer, shard_bits integer, sequence_bits integer,
                              short_lived boolean)
    RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    citus_group integer;
    ends_at timestamptz;
BEGIN
    PERFORM @extschema@.shardid_check_layout(name, epoch, time_unit, time_bits, shard_bits, sequence_bits);
    -- A layout whose time field runs out within a year would make every
    -- next_id() fail from then on: refused unless asked for.
    ends_at := @extschema@.shardid_layout_ends_at(epoch, time_unit, time_bits);
    IF ends_at < now() + interval '1 year' THEN
        IF short_lived IS NOT TRUE THEN
            RAISE EXCEPTION 'layout "%" %', name,
                    CASE WHEN ends_at <= now() THEN 'has already run out of time' ELSE 'runs out of time within a year' END
                USING ERRCODE = 'invalid_parameter_value',
                      DETAIL = format('Its %s-bit time field ends at %s; next_id() fails with it from then on.',
                                      time_bits, ends_at),
                      HINT = 'Give it more time bits or a longer time unit (shardid_layouts shows every layout''s '
                             'ends_at), or pass short_lived => true to create it all the same.';
        END IF;
        RAISE WARNING 'layout "%" %', name,
                CASE WHEN ends_at <= now() THEN 'has already run out of time' ELSE 'runs out of time within a year' END
            USING DETAIL = format('Its %s-bit time field ends at %s; next_id() fails with it from then on.',
                                  time_bits, ends_at);
    END IF;
    -- On Citus, layouts are the coordinator's: Citus gives its carriers to
    -- every node (docs/citus.md); one made on a worker would be that
    -- worker's alone.
    IF to_regclass('pg_catalog.pg_dist_local_group') IS NOT NULL THEN
        EXECUTE 'SELECT groupid FROM pg_catalog.pg_dist_local_group' INTO citus_group;
        IF citus_group IS DISTINCT FROM 0 THEN
            RAISE EXCEPTION 'layouts are created on the Citus coordinator'
                USING ERRCODE = 'object_not_in_prerequisite_state',
                      DETAIL = format('This node is a Citus worker (group %s): a layout made here would exist on '
                                      'this node only, while Citus gives the coordinator''s layouts to every node.',
                                      citus_group),
                      HINT = 'Run create_layout() on the coordinator.';
        END IF;
    END IF;
    BEGIN
        INSERT INTO @extschema@.shardid_user_layout (name, epoch, time_unit, time_bits, shard_bits, sequence_bits)
        VALUES (name, epoch, time_unit, time_bits, shard_bits, sequence_bits);
    EXCEPTION WHEN unique_violation THEN
        RAISE EXCEPTION 'layout "%" already exists', name
            USING ERRCODE = 'duplicate_object',
                  DETAIL = 'A layout cannot be redefined: IDs already issued depend on its definition.';
    END;
    PERFORM @extschema@.shardid_make_carrier(name);
END $$;
REVOKE EXECUTE ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer, boolean) FROM PUBLIC;
COMMENT ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer, boolean) IS
    'create_layout() that makes, with short_lived => true and a WARNING, a layout that runs out of time within a '
    'year (superusers, or roles granted EXECUTE on this form)';
-- The six-argument form, which roles are granted (docs/errors.md): a layout
-- that runs out of time within a year only through the seven-argument
-- form, whose EXECUTE is granted on its own.
CREATE FUNCTION create_layout(name text, epoch timestamptz, time_unit interval,
                              time_bits integer, shard_bits integer, sequence_bits integer)
    RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$ SELECT @extschema@.create_layout(name, epoch, time_unit, time_bits, shard_bits, sequence_bits, false) $$;
REVOKE EXECUTE ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer) IS
    'define a permanent "time | shard | sequence" layout; one that runs out of time within a year is refused '
    '(superusers, or roles granted EXECUTE)';

CREATE FUNCTION shardid_presets(OUT name text, OUT epoch timestamptz, OUT time_unit interval,
                                OUT time_bits smallint, OUT shard_bits smallint, OUT sequence_bits smallint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'shardid_presets'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

-- ends_at of any layout create_layout accepts ('infinity' past timestamptz's range).
CREATE FUNCTION shardid_layout_ends_at(epoch timestamptz, time_unit interval, time_bits integer)
    RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'shardid_layout_ends_at'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION shardid_layout_ends_at(timestamptz, interval, integer) IS
    'the first instant a layout''s time field cannot hold (infinity beyond timestamptz''s range)';

CREATE VIEW shardid_layouts AS
SELECT l.name, l.builtin, l.epoch, l.time_unit, l.time_bits, l.shard_bits, l.sequence_bits,
       l.time_bits + l.shard_bits + l.sequence_bits AS total_bits,
       l.time_bits + l.shard_bits + l.sequence_bits <= 53 AS javascript_safe,
       (1::bigint << l.shard_bits) AS shards,
       (1::bigint << l.sequence_bits) AS ids_per_tick,
       @extschema@.shardid_layout_ends_at(l.epoch, l.time_unit, l.time_bits) AS ends_at
FROM (SELECT p.*, true AS builtin FROM @extschema@.shardid_presets() p
      UNION ALL
      SELECT u.name, u.epoch, u.time_unit, u.time_bits, u.shard_bits, u.sequence_bits, false
      FROM @extschema@.shardid_user_layout u) l;
GRANT SELECT ON shardid_layouts TO PUBLIC;
COMMENT ON VIEW shardid_layouts IS 'built-in and user-defined layouts, with their capacity and end of time';

-- Generation

CREATE FUNCTION next_id(layout text, shard integer DEFAULT NULL) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_next_id'
    LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION next_id(text, integer) IS
    'next ID of a layout on this node; a NULL shard means shardid.node_id';

CREATE FUNCTION next_snowflake_id(shard integer DEFAULT NULL) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_next_snowflake_id'
    LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION next_snowflake_id(integer) IS
    'next snowflake ID: 41-bit ms since 2020-01-01 | 10-bit shard | 12-bit sequence';

CREATE FUNCTION next_instagram_id(shard integer DEFAULT NULL) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_next_instagram_id'
    LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION next_instagram_id(integer) IS
    'next Instagram-style ID: ms since 2011-08-24 21:07:01.721 | 13-bit shard | 10-bit sequence';

-- Decoding and time bounds. Layouts never change once created, so the
-- functions taking a layout name are IMMUTABLE like the others.

CREATE FUNCTION id_decode(layout text, id bigint,
                          OUT created_at timestamptz, OUT shard integer, OUT sequence integer)
    AS 'MODULE_PATHNAME', 'shardid_id_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION id_timestamp(layout text, id bigint) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'shardid_id_timestamp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION id_min(layout text, ts timestamptz) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_id_min'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION id_min(text, timestamptz) IS
    'smallest ID the layout can give at or after ts: WHERE id >= id_min(layout, ts) uses the key index';
CREATE FUNCTION id_compose(layout text, ts timestamptz, shard integer, sequence integer) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_id_compose'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION snowflake_decode(id bigint,
                                 OUT created_at timestamptz, OUT shard integer, OUT sequence integer)
    AS 'MODULE_PATHNAME', 'shardid_snowflake_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_timestamp(id bigint) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'shardid_snowflake_timestamp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION snowflake_min_id(ts timestamptz) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_snowflake_min_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION instagram_decode(id bigint,
                                 OUT created_at timestamptz, OUT shard integer, OUT sequence integer)
    AS 'MODULE_PATHNAME', 'shardid_instagram_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION instagram_timestamp(id bigint) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'shardid_instagram_timestamp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION instagram_min_id(ts timestamptz) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_instagram_min_id'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Monitoring

CREATE FUNCTION shardid_status(OUT layout text, OUT last_tick_at timestamptz, OUT last_sequence bigint,
                               OUT clock_lead_ms bigint, OUT waits bigint, OUT moved_ahead bigint,
                               OUT issued_behind_clock bigint, OUT high_water_mark timestamptz,
                               OUT restart_floor timestamptz, OUT high_water_mark_unreadable boolean,
                               OUT mark_in_wal boolean)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'shardid_status'
    LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION shardid_status() IS
    'node-wide generator state per layout: last tick, clock lead, waits, absorbed clock steps, high-water mark, '
    'whether the mark is carried in WAL';
CREATE VIEW shardid_status AS SELECT * FROM @extschema@.shardid_status();
GRANT SELECT ON shardid_status TO PUBLIC;

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

-- DecimalId (SPEC 2.2): counter * 10^10 + generator_id * 10^5 + launch_id

CREATE SEQUENCE shardid_generator_seq MINVALUE 0 MAXVALUE 99999 START 1 NO CYCLE;
COMMENT ON SEQUENCE shardid_generator_seq IS
    'DecimalId generator ids of this database: one per start of the node and per 922,337,202 IDs';
CREATE SEQUENCE shardid_run_seq MINVALUE 0 MAXVALUE 1073741823 START 1 NO CYCLE;
COMMENT ON SEQUENCE shardid_run_seq IS 'call-number run ids: one per 16,384 call numbers of a backend';
REVOKE ALL ON SEQUENCE shardid_generator_seq, shardid_run_seq FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('shardid_generator_seq', '');
SELECT pg_catalog.pg_extension_config_dump('shardid_run_seq', '');

CREATE FUNCTION next_decimal_id() RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_next_decimal_id'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION next_decimal_id() IS
    'next DecimalId: counter * 10^10 + generator_id * 10^5 + shardid.launch_id, readable in decimal';

CREATE FUNCTION decimal_id_decode(id bigint, OUT counter bigint, OUT generator_id integer, OUT launch_id integer)
    AS 'MODULE_PATHNAME', 'shardid_decimal_id_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION decimal_id_new_generator() RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_decimal_id_new_generator'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
REVOKE EXECUTE ON FUNCTION decimal_id_new_generator() FROM PUBLIC;
COMMENT ON FUNCTION decimal_id_new_generator() IS
    'retire the current DecimalId generator id of this database and take the next one; returns it (superusers)';

-- DecimalId progressions. The generator ids a node takes never come back
-- (src/pg/functions/counters.cpp), so a rolled-back call cannot make them repeat.
CREATE FUNCTION decimal_id_generator_progression(node_index integer, node_count integer) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    last_used bigint;
    called boolean;
    next_id bigint;
    seq regclass;
BEGIN
    IF node_count IS NULL OR node_index IS NULL OR node_count < 1 OR node_index < 0 OR node_index >= node_count THEN
        RAISE EXCEPTION 'node_index must be between 0 and node_count - 1, and node_count at least 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT s.last_value, s.is_called INTO last_used, called FROM @extschema@.shardid_generator_seq s;
    -- The smallest value of this node's progression that it has not used.
    next_id := CASE WHEN called THEN last_used + 1 ELSE last_used END;
    next_id := next_id + ((node_index - next_id) % node_count + node_count) % node_count;
    IF next_id > 99999 THEN
        RAISE EXCEPTION 'no generator id left for node % of %', node_index, node_count
            USING ERRCODE = 'sequence_generator_limit_exceeded';
    END IF;
    SELECT c.oid::regclass INTO seq
      FROM pg_class c JOIN pg_extension e ON e.extnamespace = c.relnamespace
     WHERE e.extname = 'shardid' AND c.relname = 'shardid_generator_seq';
    EXECUTE format('ALTER SEQUENCE %s INCREMENT BY %s RESTART WITH %s', seq, node_count, next_id);
    RETURN @extschema@.decimal_id_new_generator();
END $$;
REVOKE EXECUTE ON FUNCTION decimal_id_generator_progression(integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION decimal_id_generator_progression(integer, integer) IS
    'give this node the generator ids node_index, node_index + node_count, ... and switch to the first unused one';


-- Call numbers (SPEC 2.6)

CREATE FUNCTION next_call_number() RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_next_call_number'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION next_call_number() IS
    'next short public call number: 8 base62 characters, run_id | sequence shuffled by shardid.call_number_key, '
    'in that key''s era of run ids (run_id >> 22): never issued twice across keys (255 eras at most)';
CREATE FUNCTION call_number_decode(call_number text, OUT version integer, OUT run_id integer, OUT sequence integer)
    AS 'MODULE_PATHNAME', 'shardid_call_number_decode'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION call_number_compose(version integer, run_id integer, sequence integer) RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_call_number_compose'
    LANGUAGE C STABLE STRICT PARALLEL SAFE;

-- Encodings (SPEC 2.8)

CREATE FUNCTION base62_encode(value bigint, width integer DEFAULT 0) RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_base62_encode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION base62_encode(bigint, integer) IS
    'base62 (0-9A-Za-z), left-padded with 0 to width; width 11 fits every bigint and keeps order under COLLATE "C"';
CREATE FUNCTION base62_decode(encoded text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_base62_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION base32_encode(value bigint, width integer DEFAULT 0) RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_base32_encode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION base32_encode(bigint, integer) IS
    'Crockford base32, left-padded with 0 to width; width 13 fits every bigint and keeps order';
CREATE FUNCTION base32_decode(encoded text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_base32_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Eight-byte IDs (SPEC 2.5), bit-compatible with Lable's Java "uniqueid"

CREATE FUNCTION next_eightbyte_id(mode text DEFAULT 'spread') RETURNS bytea
    AS 'MODULE_PATHNAME', 'shardid_next_eightbyte_id'
    LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION next_eightbyte_id(text) IS
    'next 8-byte id: 42-bit ms (bit-reversed in spread mode) | 6-bit sequence | 11-bit generator (shardid.node_id) | mode | 4-bit cluster';
CREATE FUNCTION eightbyte_id_build(created_at timestamptz, sequence integer, generator_id integer,
                                   cluster_id integer, mode text) RETURNS bytea
    AS 'MODULE_PATHNAME', 'shardid_eightbyte_id_build'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION eightbyte_id_decode(id bytea, OUT created_at timestamptz, OUT sequence integer,
                                    OUT generator_id integer, OUT cluster_id integer, OUT mode text)
    AS 'MODULE_PATHNAME', 'shardid_eightbyte_id_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION eightbyte_id_to_bigint(id bytea) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_eightbyte_id_to_bigint'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION eightbyte_id_from_bigint(id bigint) RETURNS bytea
    AS 'MODULE_PATHNAME', 'shardid_eightbyte_id_from_bigint'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- Keyed permutations (SPEC 2.7) and the key ring

-- The key ring: one row per key name, always. The `default` key is made here
-- (made_by_install), so that no function that reads keys ever writes. A
-- restore brings back its source's keys: a restored key replaces the one
-- CREATE EXTENSION made under the same name (with a WARNING; that key cannot
-- have obfuscated any restored ID), the same key again is skipped, and a
-- restored key that conflicts with one a user made is an error the restore
-- shows (never a silent switch of what an ID reveals). A key ring written
-- past the trigger (a data-only restore with triggers disabled) with two
-- rows of a name is refused when read (src/pg/functions/keys.cpp).
CREATE TABLE shardid_key (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z0-9_]{1,63}$'),
    secret     bytea NOT NULL CHECK (length(secret) = 16),
    created_at timestamptz NOT NULL DEFAULT now(),
    made_by_install boolean NOT NULL DEFAULT false,
    from_coordinator boolean NOT NULL DEFAULT false
);
COMMENT ON TABLE shardid_key IS
    'secrets of obfuscate_id/reveal_id and of the call-number shuffle; superusers only; dumped by pg_dump; '
    'one row per key name (a restored key replaces only the one CREATE EXTENSION made)';

COMMENT ON COLUMN shardid_key.made_by_install IS
    'made by CREATE EXTENSION (the default key): a restored key of the same name replaces it';
COMMENT ON COLUMN shardid_key.from_coordinator IS
    'on a Citus worker: sent by the coordinator, which replaces it when its own changes (shardid_sync_keys()), '
    'or made by the CREATE EXTENSION the coordinator sent';
REVOKE ALL ON shardid_key FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('shardid_key', '');
CREATE TRIGGER shardid_key_ring_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON shardid_key
    FOR EACH STATEMENT EXECUTE FUNCTION shardid_catalog_changed();
ALTER TABLE shardid_key ENABLE ALWAYS TRIGGER shardid_key_ring_changed;
CREATE FUNCTION shardid_key_arrives() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    present record;
BEGIN
    SELECT k.secret, k.made_by_install INTO present FROM @extschema@.shardid_key k WHERE k.name = NEW.name;
    IF NOT FOUND THEN
        RETURN NEW;
    END IF;
    IF present.secret = NEW.secret THEN
        RETURN NULL;  -- the same key again: nothing changes
    END IF;
    IF present.made_by_install THEN
        DELETE FROM @extschema@.shardid_key k WHERE k.name = NEW.name;
        RAISE WARNING 'obfuscation key "%" made by CREATE EXTENSION is replaced by the one restored', NEW.name
            USING DETAIL = 'IDs obfuscated with the restored key reveal as they did in its source database.';
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'obfuscation key "%" already exists with another secret', NEW.name
        USING ERRCODE = 'unique_violation',
              DETAIL = 'This database has its own key of that name; taking the restored one would change what '
                       'IDs obfuscated with either reveal.',
              HINT = 'Restore into a database without that key, or rename one of the two keys in its source '
                     '(create a new key, switch to it, and drop the old one).';
END $$;
COMMENT ON FUNCTION shardid_key_arrives() IS
    'trigger: one row per key name; a restored key replaces only the one CREATE EXTENSION made, a conflict is an error';
CREATE TRIGGER shardid_key_arrives
    BEFORE INSERT ON shardid_key
    FOR EACH ROW EXECUTE FUNCTION shardid_key_arrives();

-- The key ring on Citus (src/pg/citus/key_ring.cpp, docs/citus.md): the
-- coordinator's ring is every worker's.
CREATE FUNCTION shardid_key_ring_spread() RETURNS trigger
    AS 'MODULE_PATHNAME', 'shardid_key_ring_spread'
    LANGUAGE C;
COMMENT ON FUNCTION shardid_key_ring_spread() IS
    'trigger: on a Citus coordinator, a change of the key ring reaches every worker in the same transaction; '
    'a worker takes changes from the coordinator only';
CREATE TRIGGER shardid_key_ring_spread
    AFTER INSERT OR UPDATE OR DELETE ON shardid_key
    FOR EACH ROW EXECUTE FUNCTION shardid_key_ring_spread();
CREATE TRIGGER shardid_key_ring_spread_truncate
    AFTER TRUNCATE ON shardid_key
    FOR EACH STATEMENT EXECUTE FUNCTION shardid_key_ring_spread();
-- Workers lease the ring (src/pg/citus/key_lease.cpp): a change on the
-- coordinator waits their leases out before its first row changes.
CREATE TRIGGER shardid_key_ring_leases
    BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON shardid_key
    FOR EACH STATEMENT EXECUTE FUNCTION shardid_key_ring_spread();
CREATE FUNCTION shardid_key_apply(name text, secret bytea, created_at timestamptz) RETURNS void
    AS 'MODULE_PATHNAME', 'shardid_key_apply'
    LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION shardid_key_apply(text, bytea, timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION shardid_key_apply(text, bytea, timestamptz) IS
    'on a Citus worker, sent by the coordinator: key name arrives with its secret, or goes (secret NULL), '
    'or every key it sent or CREATE EXTENSION made goes (name NULL) (superusers)';
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
CREATE FUNCTION shardid_citus_key_lease(fence integer) RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_citus_key_lease'
    LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION shardid_citus_key_lease(integer) FROM PUBLIC;
COMMENT ON FUNCTION shardid_citus_key_lease(integer) IS
    'on a Citus coordinator, asked by a worker''s fence: the key ring under a lease of '
    'at most fence ms, which a change of the ring waits out before it changes a row (superusers)';

-- The Citus group fence (src/pg/citus/fence.cpp, docs/citus.md): a
-- worker issues IDs under its group id only while the coordinator confirms
-- that the server its metadata names for the group is the one asking.
CREATE TABLE shardid_citus_lease (
    groupid integer PRIMARY KEY CHECK (groupid > 0),
    token text NOT NULL,
    valid_until timestamptz NOT NULL,
    window_end_ms bigint NOT NULL,
    floor_ms bigint NOT NULL DEFAULT 0
);
REVOKE ALL ON shardid_citus_lease FROM PUBLIC;
COMMENT ON TABLE shardid_citus_lease IS
    'on a Citus coordinator: which server (token) each worker group''s IDs come from, until when, and the window '
    'end below which a later server of the group must not issue (superusers; not dumped: a lease is transient)';
COMMENT ON COLUMN shardid_citus_lease.token IS
    'the confirmed server: its system identifier and its postmaster''s start time (shardid_node_token())';
COMMENT ON COLUMN shardid_citus_lease.valid_until IS
    'on the coordinator''s clock: until then no other server of the group is confirmed';
COMMENT ON COLUMN shardid_citus_lease.window_end_ms IS
    'the confirmed server''s clock (Unix ms) plus its fence at its last confirmation: its IDs lie below it';
COMMENT ON COLUMN shardid_citus_lease.floor_ms IS
    'the highest window end of the group''s earlier servers: the confirmed server issues above it';

CREATE TABLE shardid_citus_declared (
    groupid integer NOT NULL CHECK (groupid >= 0),
    shards int4multirange NOT NULL,
    until_ms bigint NOT NULL,
    valid_until timestamptz NOT NULL,
    PRIMARY KEY (groupid, shards)
);
REVOKE ALL ON shardid_citus_declared FROM PUBLIC;
COMMENT ON TABLE shardid_citus_declared IS
    'on a Citus coordinator: the explicit shards (shardid.shards) each group declared, so that no server whose group '
    'id is one of them is confirmed while they are live (superusers; not dumped: transient)';
COMMENT ON COLUMN shardid_citus_declared.shards IS
    'the declared values (a worker''s as its fence sent them, the coordinator''s own as group 0)';
COMMENT ON COLUMN shardid_citus_declared.until_ms IS
    'the declaring node issued no explicit shard ID at or above this tick (its window end; the coordinator''s clock '
    'plus shardid.max_clock_lead): a server confirmed under one of the values later issues above it';
COMMENT ON COLUMN shardid_citus_declared.valid_until IS
    'on the coordinator''s clock: until then no server whose group is one of the values is confirmed';

CREATE FUNCTION shardid_node_token() RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_node_token'
    LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION shardid_node_token() FROM PUBLIC;
COMMENT ON FUNCTION shardid_node_token() IS
    'this server''s token for the Citus group fence: its system identifier and its postmaster''s start time; a '
    'promoted standby or a restarted server has another (superusers)';

CREATE FUNCTION shardid_citus_confirm(for_group integer, server_token text, fence integer, window_end bigint,
                                      declared int4multirange)
    RETURNS text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    node record;
    asked record;
    lease record;
    now_at timestamptz := clock_timestamp();
    lasts interval := fence * interval '1 millisecond';
    own int4multirange;
    own_until bigint;
    leased int4multirange;
    prior int4multirange;
    taken int4multirange;
    declarer integer;
    overlap integer;
    declared_floor bigint;
    issue_floor bigint;
BEGIN
    IF to_regclass('pg_catalog.pg_dist_local_group') IS NULL
       OR (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l) IS DISTINCT FROM 0 THEN
        RAISE EXCEPTION 'shardid_citus_confirm() runs on a Citus coordinator'
            USING ERRCODE = '55000',
                  HINT = 'Citus workers call it on the coordinator to confirm their group; it is not called by hand.';
    END IF;
    IF for_group IS NULL OR for_group < 1 OR server_token IS NULL OR server_token !~ '^[0-9]{1,20}\.-?[0-9]{1,20}$'
       OR fence IS NULL OR fence NOT BETWEEN 2000 AND 600000
       OR window_end IS NULL OR window_end NOT BETWEEN 1 AND 9007199254740991
       OR declared IS NULL OR (NOT isempty(declared) AND lower(declared) < 0) THEN
        RAISE EXCEPTION 'shardid_citus_confirm() was given a group, token, fence, window end or declaration shardid does not send'
            USING ERRCODE = '22023';
    END IF;
    -- The server the metadata names for the group, asked for its token at
    -- the host and port the metadata gives.
    SELECT n.nodename, n.nodeport INTO node FROM pg_catalog.pg_dist_node n
     WHERE n.groupid = for_group AND n.noderole = 'primary' ORDER BY n.nodeid LIMIT 1;
    IF NOT FOUND THEN
        RETURN 'absent';
    END IF;
    SELECT r.success, r.result INTO asked
      FROM pg_catalog.master_run_on_worker(ARRAY[node.nodename], ARRAY[node.nodeport],
                                           ARRAY['SELECT @extschema@.shardid_node_token()'], false) r;
    IF asked.success IS NOT TRUE THEN
        RETURN 'unreachable';
    END IF;
    IF asked.result IS DISTINCT FROM server_token THEN
        RETURN 'other';
    END IF;
    -- Explicit shards (shardid.shards), whichever came first: a value a
    -- live declaration holds is no server's group (a server confirmed under
    -- it later issues above the declarer's IDs), and a declaration is
    -- recorded without the groups already confirmed (a lease) unless it
    -- held them first. The coordinator's own declaration is read here (its
    -- settings, the library loaded); a worker's came with its request, and
    -- one that lists another confirmed group is refused ("overlap"). One
    -- request at a time from here on: a declaration and a group are never
    -- both confirmed by two requests that do not see each other.
    PERFORM @extschema@.shardid_node_token();
    LOCK TABLE @extschema@.shardid_citus_declared IN SHARE ROW EXCLUSIVE MODE;
    DELETE FROM @extschema@.shardid_citus_declared d WHERE d.valid_until < now_at - interval '1 day';
    SELECT coalesce(range_agg(int4range(l.groupid, l.groupid, '[]')), '{}') INTO leased
      FROM @extschema@.shardid_citus_lease l;
    leased := leased + '{[0,0]}';  -- the coordinator's group
    SELECT coalesce(range_agg(int4range(r.lo, r.hi, '[]')), '{}') INTO own
      FROM (SELECT split_part(p, '-', 1)::integer AS lo,
                   coalesce(nullif(split_part(p, '-', 2), ''), split_part(p, '-', 1))::integer AS hi
              FROM regexp_split_to_table(regexp_replace(coalesce(current_setting('shardid.shards', true), ''),
                                                        '\s', '', 'g'), ',') p
             WHERE p <> '') r;
    SELECT coalesce(range_agg(d.shards), '{}') INTO prior FROM @extschema@.shardid_citus_declared d
     WHERE d.groupid = 0 AND d.valid_until > now_at;
    own := own - (leased - prior);
    IF NOT isempty(own) THEN
        own_until := floor(extract(epoch FROM now_at) * 1000)::bigint
                     + (SELECT s.setting::bigint FROM pg_settings s WHERE s.name = 'shardid.clock_offset_ms')
                     + (SELECT s.setting::bigint FROM pg_settings s WHERE s.name = 'shardid.max_clock_lead');
        INSERT INTO @extschema@.shardid_citus_declared AS d (groupid, shards, until_ms, valid_until)
        VALUES (0, own, own_until, now_at + lasts)
        ON CONFLICT (groupid, shards) DO UPDATE
           SET until_ms = greatest(d.until_ms, excluded.until_ms),
               valid_until = greatest(d.valid_until, excluded.valid_until);
    END IF;
    SELECT d.groupid INTO declarer FROM @extschema@.shardid_citus_declared d
     WHERE d.groupid <> for_group AND for_group <@ d.shards AND d.valid_until > now_at
     ORDER BY d.groupid LIMIT 1;
    IF FOUND THEN
        RETURN 'declared ' || declarer;
    END IF;
    SELECT coalesce(max(d.until_ms), 0) INTO declared_floor FROM @extschema@.shardid_citus_declared d
     WHERE d.groupid <> for_group AND for_group <@ d.shards;
    SELECT coalesce(range_agg(d.shards), '{}') INTO prior FROM @extschema@.shardid_citus_declared d
     WHERE d.groupid = for_group AND d.valid_until > now_at;
    taken := declared * (leased - int4multirange(int4range(for_group, for_group, '[]')) - prior);
    IF NOT isempty(taken) THEN
        overlap := lower(taken);
    END IF;
    -- Leases of groups no longer in the metadata, a day after they ended.
    DELETE FROM @extschema@.shardid_citus_lease l
     WHERE l.valid_until < now_at - interval '1 day'
       AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_node n WHERE n.groupid = l.groupid);
    INSERT INTO @extschema@.shardid_citus_lease (groupid, token, valid_until, window_end_ms, floor_ms)
    VALUES (for_group, server_token, now_at + lasts, window_end, declared_floor)
    ON CONFLICT (groupid) DO NOTHING;
    IF FOUND THEN
        issue_floor := declared_floor;
    ELSE
        SELECT l.* INTO lease FROM @extschema@.shardid_citus_lease l WHERE l.groupid = for_group FOR UPDATE;
        IF lease.token IS DISTINCT FROM server_token THEN
            IF lease.valid_until > now_at THEN
                RETURN 'wait ' || ceil(extract(epoch FROM lease.valid_until - now_at) * 1000)::bigint;
            END IF;
            issue_floor := greatest(lease.floor_ms, lease.window_end_ms, declared_floor);
            UPDATE @extschema@.shardid_citus_lease l
               SET token = server_token, valid_until = now_at + lasts, window_end_ms = window_end, floor_ms = issue_floor
             WHERE l.groupid = for_group;
        ELSE
            issue_floor := greatest(lease.floor_ms, declared_floor);
            UPDATE @extschema@.shardid_citus_lease l
               SET valid_until = greatest(lease.valid_until, now_at + lasts),
                   window_end_ms = greatest(lease.window_end_ms, window_end), floor_ms = issue_floor
             WHERE l.groupid = for_group;
        END IF;
    END IF;
    IF overlap IS NOT NULL THEN
        RETURN 'ok ' || issue_floor || ' overlap ' || overlap;
    END IF;
    IF NOT isempty(declared) THEN
        INSERT INTO @extschema@.shardid_citus_declared AS d (groupid, shards, until_ms, valid_until)
        VALUES (for_group, declared, window_end, now_at + lasts)
        ON CONFLICT (groupid, shards) DO UPDATE
           SET until_ms = greatest(d.until_ms, excluded.until_ms),
               valid_until = greatest(d.valid_until, excluded.valid_until);
    END IF;
    RETURN 'ok ' || issue_floor;
END;
$$;
REVOKE EXECUTE ON FUNCTION shardid_citus_confirm(integer, text, integer, bigint, int4multirange) FROM PUBLIC;
COMMENT ON FUNCTION shardid_citus_confirm(integer, text, integer, bigint, int4multirange) IS
    'on a Citus coordinator, asked by a worker every second: whether the server with this token is the primary its '
    'metadata names for the group, and for how long, and whether its declared shards are another node''s group (ok '
    '<floor> [overlap <group>], wait <ms>, other, absent, unreachable, declared <group>) (superusers)';
CREATE FUNCTION shardid_sync_keys() RETURNS integer
    AS 'MODULE_PATHNAME', 'shardid_sync_keys'
    LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION shardid_sync_keys() FROM PUBLIC;
COMMENT ON FUNCTION shardid_sync_keys() IS
    'on a Citus coordinator: make every worker''s key ring the coordinator''s (after citus_add_node, or for a worker '
    'that missed a change); the number of workers reached, a WARNING for each one Citus cannot reach (superusers)';

CREATE FUNCTION shardid_random_key() RETURNS bytea
    AS 'MODULE_PATHNAME', 'shardid_random_key'
    LANGUAGE C VOLATILE PARALLEL SAFE;
REVOKE EXECUTE ON FUNCTION shardid_random_key() FROM PUBLIC;
COMMENT ON FUNCTION shardid_random_key() IS 'a random 16-byte secret for the key ring (superusers)';

-- On a Citus worker the extension is made by the coordinator, over Citus'
-- own connection: the default key made there is marked from_coordinator,
-- so that the worker refuses it (as every key the coordinator gave it) once
-- its metadata is taken away (src/pg/functions/keys.cpp, confirm_key()).
INSERT INTO shardid_key (name, secret, made_by_install, from_coordinator)
SELECT 'default', shardid_random_key(), true,
       pg_catalog.current_setting('application_name') OPERATOR(pg_catalog.~~) 'citus\_internal gpid=%'
WHERE NOT EXISTS (SELECT FROM shardid_key k WHERE k.name OPERATOR(pg_catalog.=) 'default');

CREATE FUNCTION create_obfuscation_key(name text, secret bytea DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF secret IS NOT NULL AND length(secret) <> 16 THEN
        RAISE EXCEPTION 'an obfuscation key is 16 bytes, not %', length(secret)
            USING ERRCODE = 'invalid_parameter_value',
                  HINT = 'Leave secret out to get a random one.';
    END IF;
    IF name IS NULL OR name !~ '^[a-z0-9_]{1,63}$' THEN
        RAISE EXCEPTION 'invalid key name "%"', name
            USING ERRCODE = 'invalid_parameter_value',
                  DETAIL = 'Key names are 1 to 63 characters: lowercase letters, digits and ''_''.';
    END IF;
    LOCK TABLE @extschema@.shardid_key IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT FROM @extschema@.shardid_key k WHERE k.name = create_obfuscation_key.name) THEN
        RAISE EXCEPTION 'obfuscation key "%" already exists', name
            USING ERRCODE = 'duplicate_object',
                  DETAIL = 'Replacing a key would make every ID obfuscated with it unreadable.',
                  HINT = 'Create a key with a new name and switch to it; keep the old one for reveal_id.';
    END IF;
    INSERT INTO @extschema@.shardid_key (name, secret)
    VALUES (name, coalesce(secret, @extschema@.shardid_random_key()));
END $$;
REVOKE EXECUTE ON FUNCTION create_obfuscation_key(text, bytea) FROM PUBLIC;
COMMENT ON FUNCTION create_obfuscation_key(text, bytea) IS
    'add a key to the key ring, random unless a 16-byte secret is given (superusers)';

CREATE FUNCTION drop_obfuscation_key(name text) RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    DELETE FROM @extschema@.shardid_key k WHERE k.name = drop_obfuscation_key.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'obfuscation key "%" does not exist', name USING ERRCODE = 'undefined_object';
    END IF;
END $$;
REVOKE EXECUTE ON FUNCTION drop_obfuscation_key(text) FROM PUBLIC;
COMMENT ON FUNCTION drop_obfuscation_key(text) IS
    'remove a key from the key ring: IDs obfuscated with it can no longer be revealed (superusers)';

CREATE FUNCTION obfuscate_id(id bigint, key_name text DEFAULT 'default', domain_bits integer DEFAULT 63)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_obfuscate_id'
    LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION obfuscate_id(bigint, text, integer) IS
    'keyed permutation of 1..2^domain_bits-1: hides order and volume; not encryption';
CREATE FUNCTION reveal_id(id bigint, key_name text DEFAULT 'default', domain_bits integer DEFAULT 63)
    RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_reveal_id'
    LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION reveal_id(bigint, text, integer) IS
    'the inverse of obfuscate_id with the same key and domain (in SQL only: the key never leaves the server)';
CREATE FUNCTION next_opaque_id(layout text DEFAULT 'snowflake', key_name text DEFAULT 'default') RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_next_opaque_id'
    LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION next_opaque_id(text, text) IS
    'a fresh ID of the layout, obfuscated: reveal_id gives back the time-ordered ID';

-- Time filters planned as index range scans (1.1).

CREATE FUNCTION shardid_created_within_support(internal) RETURNS internal
    AS 'MODULE_PATHNAME', 'shardid_created_within_support'
    LANGUAGE C STRICT;

-- The first and last ID a layout can issue within a period (whole ticks).
CREATE FUNCTION id_range_min(layout text, period tstzrange) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_id_range_min' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION id_range_max(layout text, period tstzrange) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_id_range_max' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION trace_id_range_min(period tstzrange) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_trace_id_range_min' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION trace_id_range_max(period tstzrange) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_trace_id_range_max' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION id_created_within(layout text, id bigint, period tstzrange) RETURNS boolean
    AS 'MODULE_PATHNAME', 'shardid_id_created_within'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT shardid_created_within_support;
COMMENT ON FUNCTION id_created_within(text, bigint, tstzrange) IS
    'was the ID created within the period? Planned as an index range condition on the ID';
CREATE FUNCTION snowflake_created_within(id bigint, period tstzrange) RETURNS boolean
    AS 'MODULE_PATHNAME', 'shardid_snowflake_created_within'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT shardid_created_within_support;
CREATE FUNCTION instagram_created_within(id bigint, period tstzrange) RETURNS boolean
    AS 'MODULE_PATHNAME', 'shardid_instagram_created_within'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT shardid_created_within_support;
CREATE FUNCTION trace_id_created_within(id bigint, period tstzrange) RETURNS boolean
    AS 'MODULE_PATHNAME', 'shardid_trace_id_created_within'
    LANGUAGE C STABLE STRICT PARALLEL SAFE SUPPORT shardid_created_within_support;
COMMENT ON FUNCTION trace_id_created_within(bigint, tstzrange) IS
    'was the TraceId created within the period (its time resolved near the period''s end, or now())?';

-- UUIDv7, RFC 9562 (1.2): 48-bit Unix ms | version 7 | 12-bit counter
-- (rand_a) | variant 10 | rand_b: shard field (shardid.uuidv7_shard_bits
-- wide, 0 by default) at its top, random below. Strictly increasing across
-- every backend of the node, never below the node's persisted mark.
CREATE FUNCTION next_uuidv7(shard integer DEFAULT NULL) RETURNS uuid
    AS 'MODULE_PATHNAME', 'shardid_next_uuidv7'
    LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION next_uuidv7(integer) IS
    'next UUIDv7 of this node (RFC 9562): strictly increasing across all its backends; the shard (or node id) in rand_b when shardid.uuidv7_shard_bits > 0';
CREATE FUNCTION uuidv7_decode(id uuid, shard_bits integer DEFAULT 0,
                              OUT created_at timestamptz, OUT counter integer, OUT shard bigint)
    AS 'MODULE_PATHNAME', 'shardid_uuidv7_decode'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION uuidv7_decode(uuid, integer) IS
    'fields of a UUIDv7: creation time (its millisecond), rand_a counter, and the shard in the top shard_bits of rand_b';
CREATE FUNCTION uuidv7_timestamp(id uuid) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'shardid_uuidv7_timestamp'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION uuidv7_timestamp(uuid) IS 'creation time of a UUIDv7 (its millisecond)';
CREATE FUNCTION uuidv7_min(ts timestamptz) RETURNS uuid
    AS 'MODULE_PATHNAME', 'shardid_uuidv7_min'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION uuidv7_min(timestamptz) IS
    'smallest UUIDv7 of the millisecond of ts: WHERE id >= uuidv7_min(ts) uses the key index; also a partition bound';
CREATE FUNCTION uuidv7_range_min(period tstzrange) RETURNS uuid
    AS 'MODULE_PATHNAME', 'shardid_uuidv7_range_min' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION uuidv7_range_min(tstzrange) IS 'the smallest uuid whose UUIDv7 time is within the period (whole milliseconds)';
CREATE FUNCTION uuidv7_range_max(period tstzrange) RETURNS uuid
    AS 'MODULE_PATHNAME', 'shardid_uuidv7_range_max' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION uuidv7_range_max(tstzrange) IS 'the largest uuid whose UUIDv7 time is within the period (whole milliseconds)';
CREATE FUNCTION uuidv7_created_within(id uuid, period tstzrange) RETURNS boolean
    AS 'MODULE_PATHNAME', 'shardid_uuidv7_created_within'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE SUPPORT shardid_created_within_support;
COMMENT ON FUNCTION uuidv7_created_within(uuid, tstzrange) IS
    'was the UUIDv7 created within the period? Planned as an index range condition on the UUID (and partition pruning)';

-- Converting an existing key column: everything pinned; the extension's
-- schema is read from the catalog (quoted as needed), not pasted as text.
CREATE FUNCTION shardid_convert_column(tbl regclass, col name, layout text DEFAULT 'snowflake')
    RETURNS text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    att record;
    seq regclass;
    max_existing bigint;
    first_new bigint;
    fk record;
    ext_schema text;
BEGIN
    SELECT e.extnamespace::regnamespace::text INTO ext_schema
      FROM pg_extension e WHERE e.extname = 'shardid';
    SELECT a.attnum, a.atttypid::regtype AS type, a.attidentity
      INTO att
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = col AND NOT a.attisdropped AND a.attnum > 0;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of % does not exist', col, tbl USING ERRCODE = 'undefined_column';
    END IF;
    IF att.type NOT IN ('smallint'::regtype, 'integer'::regtype, 'bigint'::regtype) THEN
        RAISE EXCEPTION 'column "%" of % is %, not an integer', col, tbl, att.type
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'shardid_convert_column() converts smallint, integer and bigint keys.';
    END IF;
    PERFORM 1 FROM @extschema@.shardid_layouts l WHERE l.name = layout;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'layout "%" does not exist', layout USING ERRCODE = 'undefined_object';
    END IF;

    -- New IDs must sort above every existing value.
    EXECUTE format('SELECT max(%I)::bigint FROM %s', col, tbl) INTO max_existing;
    first_new := @extschema@.id_min(layout, now());
    IF max_existing IS NOT NULL AND max_existing >= first_new THEN
        RAISE EXCEPTION 'existing values of %.% reach %, above the IDs layout "%" issues now',
                        tbl, col, max_existing, layout
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'New IDs would not sort above the existing ones, and could collide with them.',
                  HINT = 'Use a layout whose IDs are larger (an earlier epoch, or more bits below the time).';
    END IF;

    -- Widen to bigint, referencing foreign-key columns too.
    IF att.type <> 'bigint'::regtype THEN
        FOR fk IN
            SELECT c.conrelid::regclass AS rel, a.attname AS refcol
              FROM pg_constraint c
              JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[array_position(c.confkey, att.attnum)]
             WHERE c.contype = 'f' AND c.confrelid = tbl AND att.attnum = ANY (c.confkey)
        LOOP
            EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint', fk.rel, fk.refcol);
        END LOOP;
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I TYPE bigint', tbl, col);
    END IF;

    -- Drop the identity, or the serial default and its sequence.
    IF att.attidentity <> '' THEN
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP IDENTITY', tbl, col);
    ELSE
        seq := pg_get_serial_sequence(tbl::text, col)::regclass;
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I DROP DEFAULT', tbl, col);
        IF seq IS NOT NULL THEN
            EXECUTE format('DROP SEQUENCE %s', seq);
        END IF;
    END IF;
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.next_id(%L)', tbl, col, ext_schema, layout);
    RETURN format('%s.%s now defaults to next_id(%L); existing values up to %s kept', tbl, col, layout,
                  coalesce(max_existing::text, 'none'));
END $$;
COMMENT ON FUNCTION shardid_convert_column(regclass, name, text) IS
    'turn a serial, identity or integer key into bigint with a shardid default, in one transaction';

-- Every function carries a comment (\df+ is the reference users read).
COMMENT ON FUNCTION shardid_check_layout(text, timestamptz, interval, integer, integer, integer) IS
    'create_layout()''s checks of a layout definition; raises an error for anything the engine cannot use';
COMMENT ON FUNCTION shardid_presets() IS 'the built-in layouts, for the shardid_layouts view';
COMMENT ON FUNCTION id_decode(text, bigint) IS 'fields of an ID of the layout: creation time (start of its tick), shard, sequence';
COMMENT ON FUNCTION id_timestamp(text, bigint) IS 'creation time of an ID of the layout (start of its tick)';
COMMENT ON FUNCTION id_compose(text, timestamptz, integer, integer) IS
    'the ID of the layout for a time (floored to its tick), shard and sequence';
COMMENT ON FUNCTION snowflake_decode(bigint) IS 'fields of a snowflake ID: creation time, shard, sequence';
COMMENT ON FUNCTION snowflake_timestamp(bigint) IS 'creation time of a snowflake ID';
COMMENT ON FUNCTION snowflake_min_id(timestamptz) IS
    'smallest snowflake ID at or after ts: WHERE id >= snowflake_min_id(ts) uses the key index';
COMMENT ON FUNCTION instagram_decode(bigint) IS 'fields of an Instagram-style ID: creation time, shard, sequence';
COMMENT ON FUNCTION instagram_timestamp(bigint) IS 'creation time of an Instagram-style ID';
COMMENT ON FUNCTION instagram_min_id(timestamptz) IS
    'smallest Instagram-style ID at or after ts: WHERE id >= instagram_min_id(ts) uses the key index';
COMMENT ON FUNCTION decimal_id_decode(bigint) IS 'fields of a DecimalId: counter, generator id, launch id';
COMMENT ON FUNCTION call_number_decode(text) IS
    'version, run id and sequence of a call number (with the key shardid.call_number_key names, which must be the '
    'key of the number''s era, run_id >> 22; in SQL only: the key never leaves the server)';
COMMENT ON FUNCTION call_number_compose(integer, integer, integer) IS
    'the call number of a version, run id and sequence (with the key shardid.call_number_key names)';
COMMENT ON FUNCTION base62_decode(text) IS 'the bigint of a base62 text (0-9A-Za-z)';
COMMENT ON FUNCTION base32_decode(text) IS 'the bigint of a Crockford base32 text (case-insensitive; I and L read as 1, O as 0)';
COMMENT ON FUNCTION eightbyte_id_build(timestamptz, integer, integer, integer, text) IS
    'the 8-byte id of the given fields, in spread or time_sequential mode';
COMMENT ON FUNCTION eightbyte_id_decode(bytea) IS
    'fields of an 8-byte id: creation time, sequence, generator id, cluster id, mode';
COMMENT ON FUNCTION eightbyte_id_to_bigint(bytea) IS 'a time-sequential 8-byte id as a positive bigint (same order)';
COMMENT ON FUNCTION eightbyte_id_from_bigint(bigint) IS 'the 8-byte id of a bigint made by eightbyte_id_to_bigint';
COMMENT ON FUNCTION shardid_created_within_support(internal) IS
    'planner support of the *_created_within predicates: adds the period''s ID range (index range scans, partition pruning)';
COMMENT ON FUNCTION id_range_min(text, tstzrange) IS 'the first ID the layout can issue within the period (whole ticks)';
COMMENT ON FUNCTION id_range_max(text, tstzrange) IS 'the last ID the layout can issue within the period (whole ticks)';
COMMENT ON FUNCTION trace_id_range_min(tstzrange) IS
    'the first TraceId of the period (1 when the period crosses a 2^25-second wrap)';
COMMENT ON FUNCTION trace_id_range_max(tstzrange) IS
    'the last TraceId of the period (the largest bigint when the period crosses a 2^25-second wrap)';
COMMENT ON FUNCTION snowflake_created_within(bigint, tstzrange) IS
    'was the snowflake ID created within the period? Planned as an index range condition on the ID';
COMMENT ON FUNCTION instagram_created_within(bigint, tstzrange) IS
    'was the Instagram-style ID created within the period? Planned as an index range condition on the ID';

-- The cluster's call-number key, in etcd (1.2): recorded only by a
-- superuser, so no role can make other databases' call numbers fail.
CREATE FUNCTION shardid_set_call_number_key(key_name text) RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_set_call_number_key'
    LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION shardid_set_call_number_key(text) FROM PUBLIC;
COMMENT ON FUNCTION shardid_set_call_number_key(text) IS
    'superusers, node ids from etcd: records this database''s key key_name as the cluster''s call-number key, so '
    'that every node and database whose shardid.call_number_key differs is refused; NULL clears it (each key then '
    'issues call numbers of its own); returns the key''s fingerprint';

-- Shard value claims (1.2): in etcd mode a node issues IDs with a shard
-- field value only while it holds that value in etcd (docs/coordination.md,
-- "Shard values").
CREATE FUNCTION shardid_shard_claims(OUT layout text, OUT space text, OUT shard bigint, OUT state text,
                                     OUT node_id boolean, OUT claimed_above timestamptz,
                                     OUT held_since timestamptz, OUT last_used timestamptz, OUT holder text)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'shardid_shard_claims'
    LANGUAGE C VOLATILE PARALLEL SAFE;
REVOKE EXECUTE ON FUNCTION shardid_shard_claims() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION shardid_shard_claims() TO pg_monitor;
COMMENT ON FUNCTION shardid_shard_claims() IS
    'node ids from etcd: every shard field value this node holds, claims or is refused: the layout that first used '
    'it, its claim space, the shard, the state (claiming, held, held elsewhere, refused, taking over, releasing, ahead of the clock, not declared), '
    'whether it is the node''s own id, the mark it was claimed above, since when it is held, when an ID last used '
    'it, and another holder or what is wrong; superusers and pg_monitor';
CREATE FUNCTION shardid_shard_refusals(OUT cause text, OUT refusals bigint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'shardid_shard_refusals'
    LANGUAGE C VOLATILE PARALLEL SAFE;
REVOKE EXECUTE ON FUNCTION shardid_shard_refusals() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION shardid_shard_refusals() TO pg_monitor;
COMMENT ON FUNCTION shardid_shard_refusals() IS
    'generations refused a shard field value since the server started, by cause: held by another node, keys '
    'edited by hand, not claimed in time, outside shardid.shards, claim table full; superusers and pg_monitor';
CREATE FUNCTION shardid_release_shard(layout text, shard integer) RETURNS boolean
    AS 'MODULE_PATHNAME', 'shardid_release_shard'
    LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION shardid_release_shard(text, integer) FROM PUBLIC;
COMMENT ON FUNCTION shardid_release_shard(text, integer) IS
    'superusers, node ids from etcd: gives the shard of the layout back in etcd now, recording the last tick issued '
    'with it, so that another node can claim it and issue above it (a shard move); false when this node does not '
    'hold it';

-- Moving a logical shard to this node: every later ID of the layout sorts
-- above the shard's highest ID (superusers; bounded by shardid.max_clock_lead).
CREATE FUNCTION shardid_advance_past(layout text, id bigint) RETURNS interval
    AS 'MODULE_PATHNAME', 'shardid_advance_past'
    LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION shardid_advance_past(text, bigint) FROM PUBLIC;
COMMENT ON FUNCTION shardid_advance_past(text, bigint) IS
    'superusers: raises this node''s state for the layout so that every later ID sorts above the given one '
    '(a logical shard moving to this node), durably; bounded by shardid.max_clock_lead; returns the clock lead';

-- Converting a uuid key (filled by gen_random_uuid(), say) to UUIDv7
-- (1.2): the default becomes next_uuidv7(); existing keys are kept and
-- reported on, since random version 4 keys cannot sort below new ones.
CREATE FUNCTION shardid_convert_uuid_column(tbl regclass, col name)
    RETURNS text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    coltype regtype;
    ext_schema text;
    first_new uuid;
    newest_v7 uuid;
    total bigint;
    v7 bigint;
    above bigint;
BEGIN
    SELECT e.extnamespace::regnamespace::text INTO ext_schema
      FROM pg_extension e WHERE e.extname = 'shardid';
    SELECT a.atttypid::regtype INTO coltype
      FROM pg_attribute a
     WHERE a.attrelid = tbl AND a.attname = col AND NOT a.attisdropped AND a.attnum > 0;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'column "%" of % does not exist', col, tbl USING ERRCODE = 'undefined_column';
    END IF;
    IF coltype <> 'uuid'::regtype THEN
        RAISE EXCEPTION 'column "%" of % is %, not uuid', col, tbl, coltype
            USING ERRCODE = 'datatype_mismatch',
                  HINT = 'For integer keys, use shardid_convert_column().';
    END IF;
    first_new := @extschema@.uuidv7_min(clock_timestamp());
    -- Version 7 keys made before now sort below new ones; one at or above
    -- the current millisecond (a clock ahead) would not.
    EXECUTE format('SELECT count(*), count(*) FILTER (WHERE substr(%1$I::text, 15, 1) OPERATOR(pg_catalog.=) ''7''
                                                        AND substr(%1$I::text, 20, 1) OPERATOR(pg_catalog.=) ANY (ARRAY[''8'', ''9'', ''a'', ''b''])),
                           count(*) FILTER (WHERE %1$I OPERATOR(pg_catalog.>=) $1)
                      FROM %2$s', col, tbl)
        INTO total, v7, above USING first_new;
    EXECUTE format('SELECT %1$I FROM %2$s WHERE substr(%1$I::text, 15, 1) OPERATOR(pg_catalog.=) ''7''
                                            AND %1$I OPERATOR(pg_catalog.>=) $1
                    ORDER BY %1$I DESC LIMIT 1', col, tbl)
        INTO newest_v7 USING first_new;
    IF newest_v7 IS NOT NULL THEN
        RAISE EXCEPTION 'a version 7 key of %.%, %, is at or above the UUIDs issued now', tbl, col, newest_v7
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  DETAIL = 'It was made by a clock ahead of this server''s; new keys would sort below it.',
                  HINT = 'Convert once this server''s clock has passed that key''s time.';
    END IF;
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %s.next_uuidv7()', tbl, col, ext_schema);
    RETURN format('%s.%s now defaults to next_uuidv7(); %s existing keys kept (%s of version 7); '
                  '%s of them sort above the new keys: random version 4 keys spread over the whole uuid order, '
                  'so the key gives creation order only among version 7 keys; none can equal a new key',
                  tbl, col, total, v7, above);
END $$;
COMMENT ON FUNCTION shardid_convert_uuid_column(regclass, name) IS
    'make next_uuidv7() the default of a uuid key; existing keys are kept, and how many sort above new ones is reported';

-- The node's history (1.4; docs/install.md, "Upgrading PostgreSQL",
-- src/pg/state/lineage.hpp). Every data directory made anew (pg_upgrade, a
-- dump restored into a new cluster) starts without shardid.hwm; each
-- database records the histories its IDs came from in shardid_lineage,
-- which pg_dump dumps and pg_upgrade carries, and generation in a database
-- that names a history this node neither is nor adopted is refused until a
-- superuser adopts that history's node state.
CREATE FUNCTION shardid_node_history(OUT history text, OUT began timestamptz, OUT awaiting_adoption boolean,
                                     OUT adopted text[], OUT unknown_here text[], OUT floors_from text)
    RETURNS record
    AS 'MODULE_PATHNAME', 'shardid_node_history'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION shardid_node_history() IS
    'this node''s history (16 hex digits) and when it began, whether it awaits the state of the server pg_upgrade '
    'upgraded it from, the histories whose states it adopted, those this database records that it does not '
    'continue (generation here is refused while there are any), and where its floors came from';
CREATE TABLE shardid_lineage (
    history     text NOT NULL CHECK (history ~ '^[0-9a-f]{16}$'),
    recorded_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE shardid_lineage IS
    'the node histories this database''s IDs came from: the installing node''s, and any a restore brought; '
    'dumped by pg_dump, carried by pg_upgrade';
REVOKE ALL ON shardid_lineage FROM PUBLIC;
GRANT SELECT ON shardid_lineage TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('shardid_lineage', '');
CREATE TRIGGER shardid_lineage_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON shardid_lineage
    FOR EACH STATEMENT EXECUTE FUNCTION shardid_catalog_changed();
-- (A lineage row that logical replication brings is checked at once.)
ALTER TABLE shardid_lineage ENABLE ALWAYS TRIGGER shardid_lineage_changed;
INSERT INTO shardid_lineage (history) SELECT h.history FROM @extschema@.shardid_node_history() h;
CREATE FUNCTION shardid_export_state() RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_export_state'
    LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION shardid_export_state() FROM PUBLIC;
COMMENT ON FUNCTION shardid_export_state() IS
    'superusers: this node''s state as shardid.hwm holds it, which covers every ID issued so far (for '
    'shardid_adopt_state() on a server a database of this one is copied to)';
CREATE FUNCTION shardid_adopt_state(state text) RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_adopt_state'
    LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION shardid_adopt_state(text) FROM PUBLIC;
COMMENT ON FUNCTION shardid_adopt_state(text) IS
    'superusers: merges the node state of the server this one was upgraded or restored from (its shardid.hwm, or '
    'its shardid_export_state()): every mark and floor only raised, its history adopted, durably; returns where '
    'the floors come from now';
