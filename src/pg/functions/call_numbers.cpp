// Call numbers: short base62 texts of a run id and a sequence, shuffled
// by the key-ring key shardid.call_number_key names (src/core/callnum.hpp).
// Run ids are counter values (src/pg/functions/counters.hpp), taken per
// backend for 16,384 call numbers, under one key each.
#include <cstring>

#include "pg/base/pg.hpp"

extern "C" {
#include "common/cryptohash.h"
#include "common/sha2.h"
#include "miscadmin.h"
#include "utils/builtins.h"
}

#include "core/callnum.hpp"
#include "pg/base/guard.hpp"
#include "pg/base/row.hpp"
#include "pg/base/settings.hpp"
#include "pg/etcd/etcd.hpp"
#include "pg/functions/counters.hpp"
#include "pg/functions/keys.hpp"
#include "pg/state/lineage.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_next_call_number);
PG_FUNCTION_INFO_V1(shardid_call_number_decode);
PG_FUNCTION_INFO_V1(shardid_set_call_number_key);
PG_FUNCTION_INFO_V1(shardid_call_number_compose);
}

namespace {

// A key's fingerprint: 63 bits of the SHA-256 of its secret, never 0,
// which etcd holds for the cluster's call-number key.
int64 key_fingerprint(const uint8_t secret[16])
{
    uint8_t digest[PG_SHA256_DIGEST_LENGTH];
    pg_cryptohash_ctx* ctx = pg_cryptohash_create(PG_SHA256);
    if (ctx == nullptr || pg_cryptohash_init(ctx) < 0 || pg_cryptohash_update(ctx, secret, 16) < 0 ||
        pg_cryptohash_final(ctx, digest, sizeof digest) < 0)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("could not hash the call-number key")));
    pg_cryptohash_free(ctx);
    uint64_t fp = 0;
    for (int i = 0; i < 8; i++)
        fp = (fp << 8) | digest[i];
    return int64(fp >> 1) | 1;
}

// The bit shuffle of the key-ring key named by shardid.call_number_key,
// rebuilt only when that secret changes, and its fingerprint.
const BitShuffle& call_shuffle(FunctionCallInfo fcinfo, int64* fingerprint)
{
    static BitShuffle shuffle;
    static uint8_t shuffle_secret[16];
    static int64 shuffle_fingerprint = 0;
    static bool built = false;
    const char* name = call_number_key ? call_number_key : "default";
    uint8_t secret[16];
    key_secret(fcinfo, name, int(strlen(name)), secret);
    if (!built || memcmp(secret, shuffle_secret, 16) != 0) {
        shuffle = BitShuffle::from_key(reinterpret_cast<const char*>(secret), 16);
        memcpy(shuffle_secret, secret, 16);
        shuffle_fingerprint = key_fingerprint(secret);
        built = true;
    }
    *fingerprint = shuffle_fingerprint;
    return shuffle;
}

Datum text_datum(const char* s) { return PointerGetDatum(cstring_to_text(s)); }

}  // namespace

extern "C" Datum shardid_next_call_number(PG_FUNCTION_ARGS)
{
    // Per backend: a run id, and the 16,384 call numbers of that run, all
    // under the key the run was taken for (a new key takes a new run, which
    // etcd checks against the cluster's key).
    static int64 run_id = -1;
    static int64 next_sequence = 0;
    static int64 run_key = 0;
    static uint64_t run_epoch = 0;
    int64 key = 0;
    confirm_history(fcinfo);  // under a run taken before a restore too
    const BitShuffle& shuffle = call_shuffle(fcinfo, &key);
    // The run id is this node's only while the node holds its claim, and in
    // the counters' epoch it was taken in.
    const uint64_t epoch = counters_epoch();
    if (run_id < 0 || next_sequence > int64(call_sequence_max) || run_key != key || run_epoch != epoch) {
        run_id = -1;
        run_id = take_fresh(extension_sequence(fcinfo, "shardid_run_seq"), NodeCounter::run, key);
        run_key = key;
        run_epoch = epoch;
        next_sequence = 0;
    }
    const int64 sequence = next_sequence++;
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
    int64 key = 0;
    const BitShuffle& shuffle = call_shuffle(fcinfo, &key);
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
    int64 key = 0;
    const BitShuffle& shuffle = call_shuffle(fcinfo, &key);
    CallParts parts{};
    Status status;
    if (!guarded(status, [&] { return call_number_decode(shuffle, s, len, &parts, &status); }))
        raise(status);
    Row<3> row;
    row.add(Int32GetDatum(int32(parts.version)));
    row.add(Int32GetDatum(int32(parts.run_id)));
    row.add(Int32GetDatum(int32(parts.sequence)));
    return return_row(fcinfo, row);
}

// shardid_set_call_number_key(key_name): a superuser records the key of
// this database named key_name as the cluster's call-number key in etcd
// (NULL clears it); every node and database whose key differs is refused
// from then on (see the etcd source's take_counter()). Returns the
// fingerprint recorded, or NULL.
extern "C" Datum shardid_set_call_number_key(PG_FUNCTION_ARGS)
{
    if (!superuser())
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
                        errmsg("permission denied to set the cluster's call-number key"),
                        errdetail("Only superusers may choose the key every node's call numbers must use."),
                        errhint("Run it as a superuser: no GRANT gives it to another role.")));
    if (!etcd_enabled())
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("the cluster's call-number key is kept in etcd"),
                        errdetail("shardid.node_id_source is not etcd on this node."),
                        errhint("With node ids from settings, give every node's database the same key "
                                "(create_obfuscation_key(name, secret)) and set shardid.call_number_key to it.")));
    int64 fingerprint = -1;
    if (!PG_ARGISNULL(0)) {
        text* name = PG_GETARG_TEXT_PP(0);
        uint8_t secret[16];
        key_secret(fcinfo, VARDATA_ANY(name), int(VARSIZE_ANY_EXHDR(name)), secret);
        fingerprint = key_fingerprint(secret);
    }
    const int64 now = cluster_call_key(fingerprint);
    if (now != (fingerprint > 0 ? fingerprint : 0))
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("another call-number key was recorded meanwhile"),
                 errdetail("etcd holds fingerprint %lld.", (long long)now), errhint("Call the function again.")));
    if (fingerprint < 0)
        PG_RETURN_NULL();
    PG_RETURN_INT64(fingerprint);
}
