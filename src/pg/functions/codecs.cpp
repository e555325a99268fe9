// base62_encode/decode and base32_encode/decode (Crockford) for bigint.
#include "pg/base/pg.hpp"

extern "C" {
#include "utils/builtins.h"
}

#include "core/codec.hpp"
#include "pg/base/guard.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_base62_encode);
PG_FUNCTION_INFO_V1(shardid_base62_decode);
PG_FUNCTION_INFO_V1(shardid_base32_encode);
PG_FUNCTION_INFO_V1(shardid_base32_decode);
}

namespace {

Datum encode(FunctionCallInfo fcinfo, const Alphabet& alphabet)
{
    const int64 value = PG_GETARG_INT64(0);
    const int32 width = PG_GETARG_INT32(1);
    if (value < 0)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("%s cannot encode negative value %lld", alphabet.name, (long long)value)));
    if (width < 0 || width > max_encoded_width)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("width must be between 0 and %d, not %d", max_encoded_width, width)));
    char out[max_encoded_width + 1];
    Status status;
    if (!guarded(status, [&] {
            encode_digits(alphabet, uint64_t(value), width, out);
            return true;
        }))
        raise(status);
    PG_RETURN_TEXT_P(cstring_to_text(out));
}

Datum decode(FunctionCallInfo fcinfo, const Alphabet& alphabet)
{
    text* arg = PG_GETARG_TEXT_PP(0);
    const char* s = VARDATA_ANY(arg);
    const size_t len = VARSIZE_ANY_EXHDR(arg);
    uint64_t value = 0;
    Status status;
    if (!guarded(status, [&] { return decode_digits(alphabet, s, len, uint64_t(INT64_MAX), &value, &status); }))
        raise(status);
    PG_RETURN_INT64(int64(value));
}

}  // namespace

extern "C" Datum shardid_base62_encode(PG_FUNCTION_ARGS) { return encode(fcinfo, base62); }
extern "C" Datum shardid_base62_decode(PG_FUNCTION_ARGS) { return decode(fcinfo, base62); }
extern "C" Datum shardid_base32_encode(PG_FUNCTION_ARGS) { return encode(fcinfo, base32_crockford); }
extern "C" Datum shardid_base32_decode(PG_FUNCTION_ARGS) { return decode(fcinfo, base32_crockford); }
