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
COMMENT ON FUNCTION shardid_refuse_layout_change() IS 'trigger: layouts are permanent';
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

CREATE FUNCTION decimal_id_generator_progression(node_index integer, node_count integer) RETURNS bigint
    LANGUAGE plpgsql
    SET search_path = @extschema@, pg_temp
    AS $$
DECLARE
    last_used bigint;
    called boolean;
    next_id bigint;
BEGIN
    IF node_count IS NULL OR node_index IS NULL OR node_count < 1 OR node_index < 0 OR node_index >= node_count THEN
        RAISE EXCEPTION 'node_index must be between 0 and node_count - 1, and node_count at least 1'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT last_value, is_called INTO last_used, called FROM shardid_generator_seq;
    -- The smallest value of this node's progression that it has not used.
    next_id := CASE WHEN called THEN last_used + 1 ELSE last_used END;
    next_id := next_id + ((node_index - next_id) % node_count + node_count) % node_count;
    IF next_id > 99999 THEN
        RAISE EXCEPTION 'no generator id left for node % of %', node_index, node_count
            USING ERRCODE = 'sequence_generator_limit_exceeded';
    END IF;
    EXECUTE format('ALTER SEQUENCE shardid_generator_seq INCREMENT BY %s RESTART WITH %s', node_count, next_id);
    RETURN decimal_id_new_generator();
END $$;
REVOKE EXECUTE ON FUNCTION decimal_id_generator_progression(integer, integer) FROM PUBLIC;
COMMENT ON FUNCTION decimal_id_generator_progression(integer, integer) IS
    'give this node the generator ids node_index, node_index + node_count, ... and switch to the first unused one';

-- Call numbers (SPEC 2.6)

CREATE FUNCTION next_call_number() RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_next_call_number'
    LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION next_call_number() IS
    'next short public call number: 8 base62 characters, version | run_id | sequence shuffled by shardid.call_number_key';
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

CREATE TABLE shardid_key (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z0-9_]{1,63}$'),
    secret     bytea NOT NULL CHECK (length(secret) = 16),
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE shardid_key IS
    'secrets of obfuscate_id/reveal_id and of the call-number shuffle; superusers only; dumped by pg_dump';
REVOKE ALL ON shardid_key FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('shardid_key', '');
CREATE FUNCTION shardid_key_ring_changed() RETURNS trigger
    AS 'MODULE_PATHNAME', 'shardid_key_ring_changed'
    LANGUAGE C;
CREATE TRIGGER shardid_key_ring_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON shardid_key
    FOR EACH STATEMENT EXECUTE FUNCTION shardid_key_ring_changed();

CREATE FUNCTION shardid_random_key() RETURNS bytea
    AS 'MODULE_PATHNAME', 'shardid_random_key'
    LANGUAGE C VOLATILE PARALLEL SAFE;
REVOKE EXECUTE ON FUNCTION shardid_random_key() FROM PUBLIC;

CREATE FUNCTION create_obfuscation_key(name text, secret bytea DEFAULT NULL) RETURNS void
    LANGUAGE plpgsql
    SET search_path = @extschema@, pg_temp
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
    INSERT INTO shardid_key (name, secret) VALUES (name, coalesce(secret, shardid_random_key()));
EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'obfuscation key "%" already exists', name
        USING ERRCODE = 'duplicate_object',
              DETAIL = 'Replacing a key would make every ID obfuscated with it unreadable.',
              HINT = 'Create a key with a new name and switch to it; keep the old one for reveal_id.';
END $$;
REVOKE EXECUTE ON FUNCTION create_obfuscation_key(text, bytea) FROM PUBLIC;
COMMENT ON FUNCTION create_obfuscation_key(text, bytea) IS 'add a key to the key ring (superusers)';

CREATE FUNCTION drop_obfuscation_key(name text) RETURNS void
    LANGUAGE plpgsql
    SET search_path = @extschema@, pg_temp
    AS $$
BEGIN
    DELETE FROM shardid_key k WHERE k.name = drop_obfuscation_key.name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'obfuscation key "%" does not exist', name USING ERRCODE = 'undefined_object';
    END IF;
END $$;
REVOKE EXECUTE ON FUNCTION drop_obfuscation_key(text) FROM PUBLIC;
COMMENT ON FUNCTION drop_obfuscation_key(text) IS 'remove a key from the key ring (superusers)';

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
COMMENT ON FUNCTION reveal_id(bigint, text, integer) IS 'the inverse of obfuscate_id with the same key and domain';
CREATE FUNCTION next_opaque_id(layout text DEFAULT 'snowflake', key_name text DEFAULT 'default') RETURNS bigint
    AS 'MODULE_PATHNAME', 'shardid_next_opaque_id'
    LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION next_opaque_id(text, text) IS
    'a fresh ID of the layout, obfuscated: reveal_id gives back the time-ordered ID';
