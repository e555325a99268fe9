// SQL functions of the "time | shard | sequence" layouts: generation,
// decoding, time bounds, and the checks behind create_layout().
#include <utility>

#include "pg/base/pg.hpp"

#include <cstring>

extern "C" {
#include "common/int.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"
}

#include "core/schemes.hpp"
#include "pg/base/guard.hpp"
#include "pg/base/row.hpp"
#include "pg/generate/generate.hpp"
#include "pg/generate/layouts.hpp"
#include "pg/base/timeconv.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_next_id);
PG_FUNCTION_INFO_V1(shardid_next_snowflake_id);
PG_FUNCTION_INFO_V1(shardid_next_instagram_id);
PG_FUNCTION_INFO_V1(shardid_id_decode);
PG_FUNCTION_INFO_V1(shardid_id_timestamp);
PG_FUNCTION_INFO_V1(shardid_id_min);
PG_FUNCTION_INFO_V1(shardid_id_compose);
PG_FUNCTION_INFO_V1(shardid_snowflake_decode);
PG_FUNCTION_INFO_V1(shardid_snowflake_timestamp);
PG_FUNCTION_INFO_V1(shardid_snowflake_min_id);
PG_FUNCTION_INFO_V1(shardid_instagram_decode);
PG_FUNCTION_INFO_V1(shardid_instagram_timestamp);
PG_FUNCTION_INFO_V1(shardid_instagram_min_id);
PG_FUNCTION_INFO_V1(shardid_check_layout);
PG_FUNCTION_INFO_V1(shardid_presets);
PG_FUNCTION_INFO_V1(shardid_layout_ends_at);
PG_FUNCTION_INFO_V1(shardid_carrier_body);
PG_FUNCTION_INFO_V1(shardid_carrier_name);
}

namespace {

Decoded decode_or_raise(const Layout& layout, int64 id)
{
    Decoded d{};
    Status status;
    if (!guarded(status, [&] { return layout_decode(layout, id, &d, &status); }))
        raise(status);
    return d;
}

Datum decode_record(FunctionCallInfo fcinfo, const Layout& layout, int64 id)
{
    const Decoded d = decode_or_raise(layout, id);
    // The columns are integer: a field of a wide layout above that range
    // is refused, never cut to its low 32 bits.
    for (const auto& [what, value] : {std::pair<const char*, int64>{"shard", d.shard}, {"sequence", d.sequence}})
        if (value > PG_INT32_MAX)
            ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                            errmsg("%s %lld of %s id %lld is out of range for type integer", what, (long long)value,
                                   layout.name, (long long)id),
                            errdetail("The layout's %s field is wider than the integer column of the decode function.",
                                      what)));
    Row<3> row;
    row.add(TimestampTzGetDatum(timestamptz_of_unix_ms(d.unix_ms)));
    row.add(Int32GetDatum(int32(d.shard)));
    row.add(Int32GetDatum(int32(d.sequence)));
    return return_row(fcinfo, row);
}

Datum decode_timestamp(const Layout& layout, int64 id)
{
    return TimestampTzGetDatum(timestamptz_of_unix_ms(decode_or_raise(layout, id).unix_ms));
}

Datum min_id(const Layout& layout, TimestampTz ts)
{
    const int64 unix_ms = unix_ms_of(ts, "time");
    int64_t id = 0;
    Status status;
    if (!guarded(status, [&] { return layout_min_id(layout, unix_ms, &id, &status); }))
        raise(status);
    return Int64GetDatum(id);
}

Interval* interval_of_ms(int64 ms)
{
    auto* iv = static_cast<Interval*>(palloc0(sizeof(Interval)));
    iv->time = ms * 1000;
    return iv;
}

}  // namespace

extern "C" Datum shardid_next_id(PG_FUNCTION_ARGS)
{
    LayoutEntry& e = layout_arg(fcinfo, 0);
    return generate(fcinfo, e.layout, e.slot, ShardFrom::argument(1));
}

// The presets' entries, looked up once per backend (they live as long).
extern "C" Datum shardid_next_snowflake_id(PG_FUNCTION_ARGS)
{
    static LayoutEntry* e = nullptr;
    if (e == nullptr)
        e = &preset_entry(snowflake_layout);
    return generate(fcinfo, e->layout, e->slot, ShardFrom::argument(0));
}

extern "C" Datum shardid_next_instagram_id(PG_FUNCTION_ARGS)
{
    static LayoutEntry* e = nullptr;
    if (e == nullptr)
        e = &preset_entry(instagram_layout);
    return generate(fcinfo, e->layout, e->slot, ShardFrom::argument(0));
}

extern "C" Datum shardid_id_decode(PG_FUNCTION_ARGS)
{
    return decode_record(fcinfo, layout_arg(fcinfo, 0).layout, PG_GETARG_INT64(1));
}

extern "C" Datum shardid_id_timestamp(PG_FUNCTION_ARGS)
{
    return decode_timestamp(layout_arg(fcinfo, 0).layout, PG_GETARG_INT64(1));
}

extern "C" Datum shardid_id_min(PG_FUNCTION_ARGS)
{
    return min_id(layout_arg(fcinfo, 0).layout, PG_GETARG_TIMESTAMPTZ(1));
}

extern "C" Datum shardid_id_compose(PG_FUNCTION_ARGS)
{
    const Layout& layout = layout_arg(fcinfo, 0).layout;
    const int64 unix_ms = unix_ms_of(PG_GETARG_TIMESTAMPTZ(1), "time");
    const int32 shard = PG_GETARG_INT32(2);
    const int32 sequence = PG_GETARG_INT32(3);
    int64_t id = 0;
    Status status;
    if (!guarded(status, [&] { return layout_compose(layout, unix_ms, shard, sequence, &id, &status); }))
        raise(status);
    PG_RETURN_INT64(id);
}

extern "C" Datum shardid_snowflake_decode(PG_FUNCTION_ARGS)
{
    return decode_record(fcinfo, snowflake_layout, PG_GETARG_INT64(0));
}

extern "C" Datum shardid_snowflake_timestamp(PG_FUNCTION_ARGS)
{
    return decode_timestamp(snowflake_layout, PG_GETARG_INT64(0));
}

extern "C" Datum shardid_snowflake_min_id(PG_FUNCTION_ARGS)
{
    return min_id(snowflake_layout, PG_GETARG_TIMESTAMPTZ(0));
}

extern "C" Datum shardid_instagram_decode(PG_FUNCTION_ARGS)
{
    return decode_record(fcinfo, instagram_layout, PG_GETARG_INT64(0));
}

extern "C" Datum shardid_instagram_timestamp(PG_FUNCTION_ARGS)
{
    return decode_timestamp(instagram_layout, PG_GETARG_INT64(0));
}

extern "C" Datum shardid_instagram_min_id(PG_FUNCTION_ARGS)
{
    return min_id(instagram_layout, PG_GETARG_TIMESTAMPTZ(0));
}

// create_layout()'s checks: the name, the epoch and unit, the widths. The
// SQL function then inserts the row; the table's primary key refuses a
// name that is taken.
extern "C" Datum shardid_check_layout(PG_FUNCTION_ARGS)
{
    for (int i = 0; i < 6; i++)
        if (PG_ARGISNULL(i))
            ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("layout arguments must not be null")));
    text* name_text = PG_GETARG_TEXT_PP(0);
    const char* name = VARDATA_ANY(name_text);
    const int len = VARSIZE_ANY_EXHDR(name_text);
    check_layout_name(name, len);
    if (find_preset(name, size_t(len)) != nullptr)
        ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT), errmsg("layout \"%.*s\" already exists", len, name),
                        errdetail("It is one of shardid's built-in layouts.")));
    if (reserved_layout_name(name, size_t(len)))
        ereport(ERROR, (errcode(ERRCODE_RESERVED_NAME), errmsg("layout name \"%.*s\" is reserved", len, name),
                        errdetail("It is kept for a built-in layout of a later shardid version."),
                        errhint("Choose another name.")));

    char name_z[max_name_len + 1];
    memcpy(name_z, name, len);
    name_z[len] = '\0';
    (void)user_layout(name_z, PG_GETARG_TIMESTAMPTZ(1), PG_GETARG_INTERVAL_P(2), PG_GETARG_INT32(3), PG_GETARG_INT32(4),
                      PG_GETARG_INT32(5));
    PG_RETURN_VOID();
}

// The built-in layouts, for the shardid_layouts view.
extern "C" Datum shardid_presets(PG_FUNCTION_ARGS)
{
    InitMaterializedSRF(fcinfo, 0);
    for (const Layout* p : presets) {
        Row<6> row;
        row.add(CStringGetTextDatum(p->name));
        row.add(TimestampTzGetDatum(timestamptz_of_unix_ms(p->epoch_ms)));
        row.add(IntervalPGetDatum(interval_of_ms(p->unit_ms)));
        row.add(Int16GetDatum(p->time_bits));
        row.add(Int16GetDatum(p->shard_bits));
        row.add(Int16GetDatum(p->sequence_bits));
        put_row(fcinfo, row);
    }
    return (Datum)0;
}

// The first instant a layout's time field cannot hold: epoch + unit *
// 2^time_bits, in integer arithmetic ('infinity' past timestamptz's range),
// for every layout create_layout accepts.
extern "C" Datum shardid_layout_ends_at(PG_FUNCTION_ARGS)
{
    const Layout layout =
        user_layout("ends_at", PG_GETARG_TIMESTAMPTZ(0), PG_GETARG_INTERVAL_P(1), PG_GETARG_INT32(2), 0, 1);
    int64 span_ms, end_ms, end_us;
    if (layout.time_bits >= 63 || pg_mul_s64_overflow(layout.unit_ms, int64(1) << layout.time_bits, &span_ms) ||
        pg_add_s64_overflow(layout.epoch_ms, span_ms, &end_ms) || pg_mul_s64_overflow(end_ms, 1000, &end_us) ||
        pg_sub_s64_overflow(end_us, unix_epoch_in_pg_us, &end_us) || !IS_VALID_TIMESTAMP(end_us))
        PG_RETURN_TIMESTAMPTZ(DT_NOEND);
    PG_RETURN_TIMESTAMPTZ(end_us);
}

namespace {
const char* layout_name_arg(FunctionCallInfo fcinfo, int argno)
{
    text* t = PG_GETARG_TEXT_PP(argno);
    const int len = VARSIZE_ANY_EXHDR(t);
    if (len < 1 || len > max_name_len)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("invalid layout name")));
    return text_to_cstring(t);
}
}  // namespace

extern "C" Datum shardid_carrier_body(PG_FUNCTION_ARGS)
{
    const Layout layout = user_layout(layout_name_arg(fcinfo, 0), PG_GETARG_TIMESTAMPTZ(1), PG_GETARG_INTERVAL_P(2),
                                      PG_GETARG_INT32(3), PG_GETARG_INT32(4), PG_GETARG_INT32(5));
    PG_RETURN_TEXT_P(cstring_to_text(carrier_body(layout)));
}

extern "C" Datum shardid_carrier_name(PG_FUNCTION_ARGS)
{
    PG_RETURN_TEXT_P(cstring_to_text(carrier_name(layout_name_arg(fcinfo, 0))));
}
