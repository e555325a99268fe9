// Counter-based schemes: DecimalId and call numbers. Both take values from
// extension sequences (WAL-logged), flushed before any ID carries them, so
// a crash never hands one out twice.
#include <cstring>

#include "pg/pg.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include "core/callnum.hpp"
#include "core/decimal.hpp"
#include "pg/guard.hpp"
#include "pg/keys.hpp"
#include "pg/layouts.hpp"
#include "pg/settings.hpp"
#include "pg/shmem.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_next_decimal_id);
PG_FUNCTION_INFO_V1(shardid_decimal_id_decode);
PG_FUNCTION_INFO_V1(shardid_decimal_id_new_generator);
PG_FUNCTION_INFO_V1(shardid_next_call_number);
PG_FUNCTION_INFO_V1(shardid_call_number_decode);
PG_FUNCTION_INFO_V1(shardid_call_number_compose);
}

namespace {

// nextval() of an extension sequence, without privilege checks (ordinary
// roles generate IDs without rights on it), made durable before returning.
int64 take_from_sequence(FunctionCallInfo fcinfo, const char* sequence)
{
    const Oid nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
    const Oid relid = get_relname_relid(sequence, nsp);
    if (!OidIsValid(relid))
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("sequence \"%s\" of shardid is missing", sequence),
                        errhint("Reinstall the extension.")));
    const int64 value = nextval_internal(relid, false);
    XLogFlush(XactLastRecEnd);
    return value;
}

DecimalState* decimal = nullptr;

// The bit shuffle of the key-ring key named by shardid.call_number_key,
// rebuilt only when that secret changes.
const BitShuffle& call_shuffle(FunctionCallInfo fcinfo)
{
    static BitShuffle shuffle;
    static uint8_t shuffle_secret[16];
    static bool built = false;
    const char* name = call_number_key ? call_number_key : "default";
    uint8_t secret[16];
    key_secret(fcinfo, name, int(strlen(name)), secret);
    if (!built || memcmp(secret, shuffle_secret, 16) != 0) {
        shuffle = BitShuffle::from_key(reinterpret_cast<const char*>(secret), 16);
        memcpy(shuffle_secret, secret, 16);
        built = true;
    }
    return shuffle;
}

Datum text_datum(const char* s) { return PointerGetDatum(cstring_to_text(s)); }

}  // namespace

extern "C" Datum shardid_next_decimal_id(PG_FUNCTION_ARGS)
{
    if (launch_id < 0)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("shardid.launch_id is not set"),
                        errdetail("Decimal ids end with the launch id of this deployment."),
                        errhint("As a superuser, set shardid.launch_id (1..99999) in postgresql.conf or with ALTER "
                                "SYSTEM, then SELECT pg_reload_conf();")));
    if (decimal == nullptr)
        decimal = decimal_state(MyDatabaseId);
    for (;;) {
        int64_t counter = 0, generator = 0;
        bool issued = false;
        Status status;
        if (!guarded(status, [&] {
                issued = decimal_next(*decimal, &counter, &generator);
                return true;
            }))
            raise(status);
        if (issued)
            PG_RETURN_INT64(decimal_compose(counter, generator, launch_id));
        // No generator id yet, or its counter is used up: take the next one.
        LWLockAcquire(decimal_lock(), LW_EXCLUSIVE);
        if (decimal_needs_generator(*decimal))
            decimal_install_generator(*decimal, take_from_sequence(fcinfo, "shardid_generator_seq"));
        LWLockRelease(decimal_lock());
    }
}

extern "C" Datum shardid_decimal_id_new_generator(PG_FUNCTION_ARGS)
{
    if (decimal == nullptr)
        decimal = decimal_state(MyDatabaseId);
    LWLockAcquire(decimal_lock(), LW_EXCLUSIVE);
    const int64 generator = take_from_sequence(fcinfo, "shardid_generator_seq");
    decimal_install_generator(*decimal, generator);
    LWLockRelease(decimal_lock());
    PG_RETURN_INT64(generator);
}

extern "C" Datum shardid_decimal_id_decode(PG_FUNCTION_ARGS)
{
    const int64 id = PG_GETARG_INT64(0);
    DecimalParts parts{};
    Status status;
    if (!guarded(status, [&] { return decimal_decode(id, &parts, &status); }))
        raise(status);
    Datum values[3] = {Int64GetDatum(parts.counter), Int32GetDatum(parts.generator_id),
                       Int32GetDatum(parts.launch_id)};
    bool nulls[3] = {false, false, false};
    return return_record(fcinfo, values, nulls);
}

extern "C" Datum shardid_next_call_number(PG_FUNCTION_ARGS)
{
    // Per backend: a run id, and the 16,384 call numbers of that run.
    static int64 run_id = -1;
    static int64 next_sequence = 0;
    if (run_id < 0 || next_sequence > int64(call_sequence_max)) {
        run_id = take_from_sequence(fcinfo, "shardid_run_seq");
        next_sequence = 0;
    }
    const int64 sequence = next_sequence++;
    const BitShuffle& shuffle = call_shuffle(fcinfo);
    char out[call_chars + 1];
    Status status;
    if (!guarded(status, [&] { return call_number_compose(shuffle, 0, run_id, sequence, out, &status); }))
        raise(status);
    PG_RETURN_DATUM(text_datum(out));
}

extern "C" Datum shardid_call_number_compose(PG_FUNCTION_ARGS)
{
    const int32 version = PG_GETARG_INT32(0);
    const int32 run = PG_GETARG_INT32(1);
    const int32 sequence = PG_GETARG_INT32(2);
    const BitShuffle& shuffle = call_shuffle(fcinfo);
    char out[call_chars + 1];
    Status status;
    if (!guarded(status, [&] { return call_number_compose(shuffle, version, run, sequence, out, &status); }))
        raise(status);
    PG_RETURN_DATUM(text_datum(out));
}

extern "C" Datum shardid_call_number_decode(PG_FUNCTION_ARGS)
{
    text* arg = PG_GETARG_TEXT_PP(0);
    const char* s = VARDATA_ANY(arg);
    const size_t len = VARSIZE_ANY_EXHDR(arg);
    const BitShuffle& shuffle = call_shuffle(fcinfo);
    CallParts parts{};
    Status status;
    if (!guarded(status, [&] { return call_number_decode(shuffle, s, len, &parts, &status); }))
        raise(status);
    Datum values[3] = {Int32GetDatum(int32(parts.version)), Int32GetDatum(int32(parts.run_id)),
                       Int32GetDatum(int32(parts.sequence))};
    bool nulls[3] = {false, false, false};
    return return_record(fcinfo, values, nulls);
}
