// SQL functions of TraceId: next_trace_id, trace_id_decode, trace_id_timestamp.
#include "pg/pg.hpp"

extern "C" {
#include "access/htup_details.h"
}

#include "core/engine.hpp"
#include "core/schemes.hpp"
#include "pg/guard.hpp"
#include "pg/settings.hpp"
#include "pg/shmem.hpp"
#include "pg/timeconv.hpp"

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
    const int64 near_unix_s = unix_ms_of(PG_GETARG_TIMESTAMPTZ(1), "near") / 1000;
    TraceParts parts{};
    Status status;
    if (!guarded(status, [&] { return trace_decode(id, near_unix_s, &parts, &status); }))
        raise(status);
    return parts;
}

}  // namespace

extern "C" Datum shardid_next_trace_id(PG_FUNCTION_ARGS)
{
    if (trace_slot == nullptr)
        trace_slot = slot_for(trace_layout);
    Status status;
    uint64_t id = 0;
    const bool ok = guarded(status, [&] {
        uint64_t node;
        SystemClock clock = wall_clock();
        return node_shard(trace_layout, &node, &status) &&
               next_id(trace_layout, *trace_slot, clock, max_clock_lead_ms, node, &id, &status);
    });
    if (!ok)
        raise(status);
    PG_RETURN_INT64(int64(id));
}

extern "C" Datum shardid_trace_id_decode(PG_FUNCTION_ARGS)
{
    const TraceParts parts = decode_args(fcinfo);
    TupleDesc tupdesc;
    if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED), errmsg("function returning record called in context "
                                                                       "that cannot accept type record")));
    tupdesc = BlessTupleDesc(tupdesc);
    Datum values[3] = {TimestampTzGetDatum(timestamptz_of_unix_ms(parts.unix_s * 1000)),
                       Int32GetDatum(int32(parts.node_no)), Int32GetDatum(int32(parts.counter))};
    bool nulls[3] = {false, false, false};
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

extern "C" Datum shardid_trace_id_timestamp(PG_FUNCTION_ARGS)
{
    PG_RETURN_TIMESTAMPTZ(timestamptz_of_unix_ms(decode_args(fcinfo).unix_s * 1000));
}
