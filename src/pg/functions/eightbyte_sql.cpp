// SQL functions of eight-byte IDs (Lable's "uniqueid" layout), as bytea.
#include <cstring>

#include "pg/base/pg.hpp"

extern "C" {
#include "utils/builtins.h"
}

#include "core/eightbyte.hpp"
#include "pg/base/guard.hpp"
#include "pg/base/row.hpp"
#include "pg/generate/generate.hpp"
#include "pg/generate/layouts.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/timeconv.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_next_eightbyte_id);
PG_FUNCTION_INFO_V1(shardid_eightbyte_id_build);
PG_FUNCTION_INFO_V1(shardid_eightbyte_id_decode);
PG_FUNCTION_INFO_V1(shardid_eightbyte_id_to_bigint);
PG_FUNCTION_INFO_V1(shardid_eightbyte_id_from_bigint);
}

namespace {

SlotState* eightbyte_slot = nullptr;

EightMode mode_arg(FunctionCallInfo fcinfo, int argno)
{
    text* t = PG_GETARG_TEXT_PP(argno);
    const char* s = VARDATA_ANY(t);
    const size_t len = VARSIZE_ANY_EXHDR(t);
    if (len == 6 && memcmp(s, "spread", 6) == 0)
        return EightMode::spread;
    if (len == 15 && memcmp(s, "time_sequential", 15) == 0)
        return EightMode::time_sequential;
    ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                    errmsg("invalid eight-byte id mode \"%.*s\"", len > 64 ? 64 : int(len), s),
                    errhint("The modes are 'spread' and 'time_sequential'.")));
    pg_unreachable();
}

Datum bytea_of(uint64_t word)
{
    bytea* out = static_cast<bytea*>(palloc(VARHDRSZ + 8));
    SET_VARSIZE(out, VARHDRSZ + 8);
    eight_to_bytes(word, reinterpret_cast<uint8_t*>(VARDATA(out)));
    PG_RETURN_BYTEA_P(out);
}

uint64_t word_arg(FunctionCallInfo fcinfo, int argno)
{
    bytea* b = PG_GETARG_BYTEA_PP(argno);
    if (VARSIZE_ANY_EXHDR(b) != 8)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("an eight-byte id must be exactly 8 bytes, not %d", int(VARSIZE_ANY_EXHDR(b)))));
    return eight_from_bytes(reinterpret_cast<const uint8_t*>(VARDATA_ANY(b)));
}

}  // namespace

extern "C" Datum shardid_next_eightbyte_id(PG_FUNCTION_ARGS)
{
    const EightMode mode = mode_arg(fcinfo, 0);
    // The engine issues (ms, generator = shardid.node_id, sequence); repack it.
    const Fields f =
        eightbyte_layout.decompose(generate_raw(fcinfo, eightbyte_layout, eightbyte_slot, ShardFrom::node_id()));
    const EightParts parts{int64_t(f.tick), uint32_t(f.sequence), uint32_t(f.shard), uint32_t(cluster_id), mode};
    return bytea_of(eight_word(parts));
}

extern "C" Datum shardid_eightbyte_id_build(PG_FUNCTION_ARGS)
{
    const int64 unix_ms = unix_ms_of(PG_GETARG_TIMESTAMPTZ(0), "created_at");
    const int32 sequence = PG_GETARG_INT32(1), generator = PG_GETARG_INT32(2), cluster = PG_GETARG_INT32(3);
    const EightMode mode = mode_arg(fcinfo, 4);
    EightParts parts{unix_ms, uint32_t(sequence), uint32_t(generator), uint32_t(cluster), mode};
    Status status;
    if (!guarded(status, [&] { return eight_check(parts, sequence, generator, cluster, &status); }))
        raise(status);
    return bytea_of(eight_word(parts));
}

extern "C" Datum shardid_eightbyte_id_decode(PG_FUNCTION_ARGS)
{
    const EightParts p = eight_parts(word_arg(fcinfo, 0));
    Row<5> row;
    row.add(TimestampTzGetDatum(timestamptz_of_unix_ms(p.unix_ms)));
    row.add(Int32GetDatum(int32(p.sequence)));
    row.add(Int32GetDatum(int32(p.generator_id)));
    row.add(Int32GetDatum(int32(p.cluster_id)));
    row.add(CStringGetTextDatum(p.mode == EightMode::spread ? "spread" : "time_sequential"));
    return return_row(fcinfo, row);
}

// Time-sequential IDs as positive bigints (their byte order is numeric order).
extern "C" Datum shardid_eightbyte_id_to_bigint(PG_FUNCTION_ARGS)
{
    const uint64_t w = word_arg(fcinfo, 0);
    if (eight_parts(w).mode != EightMode::time_sequential)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("only time_sequential eight-byte ids convert to bigint"),
                        errdetail("Spread ids hold a bit-reversed time and do not sort as numbers.")));
    if (w >> 63)
        ereport(ERROR,
                (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE), errmsg("eight-byte id does not fit a positive bigint"),
                 errdetail("Time-sequential ids made after 2039-09-07 set the top bit.")));
    PG_RETURN_INT64(int64(w));
}

extern "C" Datum shardid_eightbyte_id_from_bigint(PG_FUNCTION_ARGS)
{
    const int64 v = PG_GETARG_INT64(0);
    if (v <= 0)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("eight-byte id %lld is out of range: such ids are positive", (long long)v)));
    if (eight_parts(uint64_t(v)).mode != EightMode::time_sequential)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("%lld is not a time_sequential eight-byte id", (long long)v),
                        errdetail("Its mode bit (bit 12) is 0.")));
    return bytea_of(uint64_t(v));
}
