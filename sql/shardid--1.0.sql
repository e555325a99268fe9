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
