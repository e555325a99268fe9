// The SQL functions that use the key ring (src/pg/functions/keys.hpp):
// obfuscate_id, reveal_id, next_opaque_id, and random_key, which makes a
// key's secret.
#include "pg/base/pg.hpp"

#include "core/permute.hpp"
#include "pg/base/guard.hpp"
#include "pg/functions/keys.hpp"
#include "pg/generate/generate.hpp"
#include "pg/generate/layouts.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_obfuscate_id);
PG_FUNCTION_INFO_V1(shardid_reveal_id);
PG_FUNCTION_INFO_V1(shardid_next_opaque_id);
PG_FUNCTION_INFO_V1(shardid_random_key);
}

namespace {

PermutationKey key_arg(FunctionCallInfo fcinfo, int argno)
{
    text* t = PG_GETARG_TEXT_PP(argno);
    uint8_t secret[16];
    key_secret(fcinfo, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), secret);
    return PermutationKey::from_bytes(secret);
}

Datum permute(FunctionCallInfo fcinfo, bool inverse)
{
    const int64 value = PG_GETARG_INT64(0);
    const int32 bits = PG_GETARG_INT32(2);
    Status status;
    if (!guarded(status, [&] { return permute_check(value, bits, &status); }))
        raise(status);
    const PermutationKey key = key_arg(fcinfo, 1);
    uint64_t out = 0;
    if (!guarded(status, [&] {
            out = inverse ? permute_inverse(key, uint64_t(value), bits) : permute_forward(key, uint64_t(value), bits);
            return true;
        }))
        raise(status);
    PG_RETURN_INT64(int64(out));
}

}  // namespace

extern "C" Datum shardid_obfuscate_id(PG_FUNCTION_ARGS) { return permute(fcinfo, false); }
extern "C" Datum shardid_reveal_id(PG_FUNCTION_ARGS) { return permute(fcinfo, true); }

extern "C" Datum shardid_next_opaque_id(PG_FUNCTION_ARGS)
{
    LayoutEntry& e = layout_arg(fcinfo, 0);
    const int64 id = DatumGetInt64(generate(fcinfo, e.layout, e.slot, ShardFrom::node_id()));
    const PermutationKey key = key_arg(fcinfo, 1);
    PG_RETURN_INT64(int64(permute_forward(key, uint64_t(id), 63)));
}

extern "C" Datum shardid_random_key(PG_FUNCTION_ARGS)
{
    bytea* out = static_cast<bytea*>(palloc(VARHDRSZ + 16));
    SET_VARSIZE(out, VARHDRSZ + 16);
    if (!pg_strong_random(VARDATA(out), 16))
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("could not generate a random key")));
    PG_RETURN_BYTEA_P(out);
}
