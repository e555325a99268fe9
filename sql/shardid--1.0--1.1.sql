-- shardid 1.0 -> 1.1: time filters planned as index scans, and converting
-- existing key columns. (A fresh CREATE EXTENSION runs 1.0, then this.)
\echo Use "ALTER EXTENSION shardid UPDATE TO '1.1'" to load this file. \quit

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

-- Converting an existing key column to shardid IDs.
CREATE FUNCTION shardid_convert_column(tbl regclass, col name, layout text DEFAULT 'snowflake')
    RETURNS text
    LANGUAGE plpgsql
    SET search_path = pg_catalog, @extschema@, pg_temp
    AS $$
DECLARE
    att record;
    seq regclass;
    max_existing bigint;
    first_new bigint;
    fk record;
    ext_schema text := '@extschema@';
BEGIN
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
    PERFORM 1 FROM shardid_layouts WHERE name = layout;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'layout "%" does not exist', layout USING ERRCODE = 'undefined_object';
    END IF;

    -- New IDs must sort above every existing value.
    EXECUTE format('SELECT max(%I)::bigint FROM %s', col, tbl) INTO max_existing;
    first_new := id_min(layout, now());
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
    EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET DEFAULT %I.next_id(%L)', tbl, col, ext_schema, layout);
    RETURN format('%s.%s now defaults to next_id(%L); existing values up to %s kept', tbl, col, layout,
                  coalesce(max_existing::text, 'none'));
END $$;
COMMENT ON FUNCTION shardid_convert_column(regclass, name, text) IS
    'turn a serial, identity or integer key into bigint with a shardid default, in one transaction';
