// SQL functions of UUIDv7 (RFC 9562, SPEC 4b): generation on the engine's
// "UUIDv7" layout, decoding, time bounds and the time filter.
#include "pg/base/pg.hpp"

extern "C" {
#include "utils/uuid.h"
}

#include "core/uuidv7.hpp"
#include "pg/base/guard.hpp"
#include "pg/base/row.hpp"
#include "pg/generate/generate.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/timeconv.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_next_uuidv7);
PG_FUNCTION_INFO_V1(shardid_uuidv7_decode);
PG_FUNCTION_INFO_V1(shardid_uuidv7_timestamp);
PG_FUNCTION_INFO_V1(shardid_uuidv7_min);
}

namespace {

SlotState* uuidv7_slot = nullptr;

// Random bits for rand_b from pg_strong_random, drawn a block at a time: one
// call per 64 UUIDs rather than one per UUID.
uint64 strong_random_word()
{
    static uint64 pool[64];
    static int left = 0;
    if (left == 0) {
        if (!pg_strong_random(pool, sizeof pool))
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("could not generate random values for a UUIDv7")));
        left = int(lengthof(pool));
    }
    const uint64 w = pool[--left];
    pool[left] = 0;
    return w;
}

Uuid uuid_arg(FunctionCallInfo fcinfo, int argno)
{
    Uuid u;
    memcpy(u.bytes, PG_GETARG_UUID_P(argno)->data, 16);
    return u;
}

Datum uuid_datum(const Uuid& u)
{
    auto* out = static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t)));
    memcpy(out->data, u.bytes, 16);
    return UUIDPGetDatum(out);
}

Uuidv7Fields decode_or_raise(const Uuid& u, int32 shard_bits)
{
    Uuidv7Fields f{};
    Status status;
    if (!uuidv7_check_width(shard_bits, &status))
        raise(status);
    if (!guarded(status, [&] { return uuidv7_decode(u, unsigned(shard_bits), &f, &status); }))
        raise(status);
    return f;
}

}  // namespace

// next_uuidv7() and next_uuidv7(shard): the shard goes into rand_b's top
// shardid.uuidv7_shard_bits; without an argument that is the node id (none
// when the width is 0, the default).
extern "C" Datum shardid_next_uuidv7(PG_FUNCTION_ARGS)
{
    const unsigned width = unsigned(uuidv7_shard_bits);
    const bool has_arg = PG_NARGS() > 0 && !PG_ARGISNULL(0);
    uint64_t shard = 0;
    const ShardFrom from = has_arg ? ShardFrom::argument(0) : width > 0 ? ShardFrom::node_id() : ShardFrom::none();
    const uint64_t word = generate_raw(fcinfo, uuidv7_layout, uuidv7_slot, from,
                                       OuterShard{&uuidv7_shard_fit(width), &shard, uuidv7_check_shard});
    const uint64 random = strong_random_word();
    return uuid_datum(uuidv7_compose(word, width, shard, random));
}

extern "C" Datum shardid_uuidv7_decode(PG_FUNCTION_ARGS)
{
    const Uuidv7Fields f = decode_or_raise(uuid_arg(fcinfo, 0), PG_GETARG_INT32(1));
    Row<3> row;
    row.add(TimestampTzGetDatum(timestamptz_of_unix_ms(f.unix_ms)));
    row.add(Int32GetDatum(int32(f.counter)));
    row.add(Int64GetDatum(int64(f.shard)));
    return return_row(fcinfo, row);
}

extern "C" Datum shardid_uuidv7_timestamp(PG_FUNCTION_ARGS)
{
    PG_RETURN_TIMESTAMPTZ(timestamptz_of_unix_ms(decode_or_raise(uuid_arg(fcinfo, 0), 0).unix_ms));
}

extern "C" Datum shardid_uuidv7_min(PG_FUNCTION_ARGS)
{
    const int64 unix_ms = unix_ms_of(PG_GETARG_TIMESTAMPTZ(0), "time");
    Uuid u{};
    Status status;
    if (!guarded(status, [&] { return uuidv7_min(unix_ms, &u, &status); }))
        raise(status);
    return uuid_datum(u);
}
