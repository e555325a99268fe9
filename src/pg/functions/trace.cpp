// SQL functions of TraceId: next_trace_id, trace_id_decode, trace_id_timestamp.
#include "pg/base/pg.hpp"

#include "core/engine.hpp"
#include "core/schemes.hpp"
#include "pg/base/guard.hpp"
#include "pg/generate/generate.hpp"
#include "pg/base/row.hpp"
#include "pg/base/timeconv.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_next_trace_id);
PG_FUNCTION_INFO_V1(shardid_trace_id_decode);
PG_FUNCTION_INFO_V1(shardid_trace_id_timestamp);
}

namespace {

SlotState* trace_slot = nullptr;

// Decodes argument 0 against the `near` of argument 1, or ereports.
TraceParts decode_args(FunctionCallInfo fcinfo)
{
    const int64 id = PG_GETARG_INT64(0);
    const int64 near_unix_s = floor_div(unix_ms_of(PG_GETARG_TIMESTAMPTZ(1), "near"), 1000);
    TraceParts parts{};
    Status status;
    if (!guarded(status, [&] { return trace_decode(id, near_unix_s, &parts, &status); }))
        raise(status);
    return parts;
}

}  // namespace

extern "C" Datum shardid_next_trace_id(PG_FUNCTION_ARGS)
{
    return generate(fcinfo, trace_layout, trace_slot, ShardFrom::node_id());
}

extern "C" Datum shardid_trace_id_decode(PG_FUNCTION_ARGS)
{
    const TraceParts parts = decode_args(fcinfo);
    Row<3> row;
    row.add(TimestampTzGetDatum(timestamptz_of_unix_ms(parts.unix_s * 1000)));
    row.add(Int32GetDatum(int32(parts.node_no)));
    row.add(Int32GetDatum(int32(parts.counter)));
    return return_row(fcinfo, row);
}

extern "C" Datum shardid_trace_id_timestamp(PG_FUNCTION_ARGS)
{
    PG_RETURN_TIMESTAMPTZ(timestamptz_of_unix_ms(decode_args(fcinfo).unix_s * 1000));
}
