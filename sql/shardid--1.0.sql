-- shardid 1.0: install script
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
    LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'layout "%" cannot be changed or dropped', OLD.name
        USING ERRCODE = 'object_not_in_prerequisite_state',
              DETAIL = 'IDs already issued with a layout are decoded and ordered by its definition.',
              HINT = 'Create a layout with a new name instead.';
END $$;
CREATE TRIGGER shardid_user_layout_permanent
    BEFORE UPDATE OR DELETE ON shardid_user_layout
    FOR EACH ROW EXECUTE FUNCTION shardid_refuse_layout_change();

CREATE FUNCTION shardid_check_layout(name text, epoch timestamptz, time_unit interval,
                                     time_bits integer, shard_bits integer, sequence_bits integer)
    RETURNS void
    AS 'MODULE_PATHNAME', 'shardid_check_layout'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE FUNCTION create_layout(name text, epoch timestamptz, time_unit interval,
                              time_bits integer, shard_bits integer, sequence_bits integer)
    RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = @extschema@, pg_temp
    AS $$
BEGIN
    PERFORM shardid_check_layout(name, epoch, time_unit, time_bits, shard_bits, sequence_bits);
    INSERT INTO shardid_user_layout (name, epoch, time_unit, time_bits, shard_bits, sequence_bits)
    VALUES (name, epoch, time_unit, time_bits, shard_bits, sequence_bits);
EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'layout "%" already exists', name
        USING ERRCODE = 'duplicate_object',
              DETAIL = 'A layout cannot be redefined: IDs already issued depend on its definition.';
END $$;
REVOKE EXECUTE ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION create_layout(text, timestamptz, interval, integer, integer, integer) IS
    'define a permanent "time | shard | sequence" layout (superusers, or roles granted EXECUTE)';

CREATE FUNCTION shardid_presets(OUT name text, OUT epoch timestamptz, OUT time_unit interval,
                                OUT time_bits smallint, OUT shard_bits smallint, OUT sequence_bits smallint)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'shardid_presets'
    LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE VIEW shardid_layouts AS
SELECT l.name, l.builtin, l.epoch, l.time_unit, l.time_bits, l.shard_bits, l.sequence_bits,
       l.time_bits + l.shard_bits + l.sequence_bits AS total_bits,
       l.time_bits + l.shard_bits + l.sequence_bits <= 53 AS javascript_safe,
       (1::bigint << l.shard_bits) AS shards,
       (1::bigint << l.sequence_bits) AS ids_per_tick,
       l.epoch + l.time_unit * (2::float8 ^ l.time_bits) AS ends_at
FROM (SELECT p.*, true AS builtin FROM shardid_presets() p
      UNION ALL
      SELECT u.name, u.epoch, u.time_unit, u.time_bits, u.shard_bits, u.sequence_bits, false
      FROM shardid_user_layout u) l;
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
                               OUT restart_floor timestamptz, OUT high_water_mark_unreadable boolean)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'shardid_status'
    LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION shardid_status() IS
    'node-wide generator state per layout: last tick, clock lead, waits, absorbed clock steps, high-water mark';
CREATE VIEW shardid_status AS SELECT * FROM shardid_status();
GRANT SELECT ON shardid_status TO PUBLIC;
