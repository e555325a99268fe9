// The key ring (table shardid_key, unreadable by ordinary roles; its
// `default` key is made by CREATE EXTENSION, so reading never writes), as a
// backend caches and confirms it, and the trigger that announces its
// changes. The functions that use it: src/pg/functions/obfuscation.cpp and
// the call-number shuffle's key; a Citus worker that takes its keys from
// the coordinator: src/pg/functions/pulled_keys.cpp.
#include <cstring>

#include "pg/base/invalidation.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/xact.h"
#include "storage/procarray.h"
#include "catalog/pg_type_d.h"
#include "commands/trigger.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/fmgrprotos.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"
}

#include "core/schemes.hpp"
#include "pg/base/catalog.hpp"
#include "pg/base/guard.hpp"
#include "pg/base/statement.hpp"
#include "pg/functions/keys.hpp"
#include "pg/functions/pulled_keys.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/key_lease.hpp"
#include "pg/base/fence_clock.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_key_ring_changed);
PG_FUNCTION_INFO_V1(shardid_catalog_changed);
}

namespace shardid::pg {

namespace {

constexpr int max_keys = 32;
struct CachedKey {
    char name[max_name_len + 1];
    uint8_t secret[16];
    // citus_metadata_changes() + 1 when the node's metadata was last looked
    // at for this key (0: not yet); a change of the ring empties the cache
    // (forget_keys()).
    uint64 confirmed = 0;
    // Whether this node was a Citus worker then, and the statement
    // (statement_number()) in which it last confirmed the key against its
    // lease of the coordinator's ring.
    bool on_worker = false;
    uint64 confirmed_in = 0;
    // The statement (statement_number()) in which a Citus worker last found
    // no change of this key prepared and not yet committed.
    uint64 unchanged_in = 0;
};
CachedKey keys[max_keys];
int n_keys = 0;
uint64 forgotten = 0;       // how many times the cache was emptied
Oid key_ring = InvalidOid;  // the relation the cached keys were read from
bool callback_registered = false;
int64_t statement_began_ms = 0;  // fence clock: when the current statement first needed a key (pulls_keys())
uint64 mode_statement = 0;       // the statement pulling was decided for
bool pulling = false;

// Relcache callback. The key ring's statement trigger sends an
// invalidation on every change; this backend applies it at once and again
// if the change rolls back, others when it commits: the cache holds only
// committed keys.
void forget_keys(Oid relid)
{
    if (relid == InvalidOid || relid == key_ring) {
        n_keys = 0;
        forgotten++;
    }
}

// True when a transaction other than this one has deleted or replaced the
// ring's row and is not over: on a Citus worker, a change the coordinator
// sent that is prepared here (two-phase commit) but not yet committed.
// Until it is, the row this backend sees may no longer be the cluster's
// key: the coordinator committed first, and a COMMIT PREPARED that did not
// arrive (a connection broken in between) waits for Citus' recovery of
// prepared transactions, a minute by default.
bool change_pending(HeapTuple row)
{
    const HeapTupleHeader h = row->t_data;
    if ((h->t_infomask & HEAP_XMAX_INVALID) != 0 || HEAP_XMAX_IS_LOCKED_ONLY(h->t_infomask))
        return false;
    const TransactionId xmax = HeapTupleHeaderGetUpdateXid(h);
    return TransactionIdIsValid(xmax) && !TransactionIdIsCurrentTransactionId(xmax) && TransactionIdIsInProgress(xmax);
}

// Refuses the key whose ring row is `row` while a change of it is pending
// (change_pending()). Only a Citus worker's ring changes that way.
void refuse_if_pending(HeapTuple row, const char* name, int len)
{
    if (!change_pending(row))
        return;
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("obfuscation key \"%.*s\" is being changed on this Citus worker", len, name),
                    errdetail("A change of the coordinator's key ring is prepared on this worker and not yet "
                              "committed; until it is, this worker's copy of the key may no longer be the "
                              "cluster's."),
                    errhint("Retry once Citus has committed the change. A change left prepared by a broken "
                            "connection is committed by Citus' recovery: on the coordinator, SELECT "
                            "recover_prepared_transactions().")));
}

// Reads a key from the key ring, which the caller may not read itself
// (src/pg/base/catalog.hpp: no SQL, nothing of the caller's runs). A name has one
// row (the ring's trigger keeps it so, also through a restore); two rows,
// written past the trigger, are refused rather than one picked silently.
bool load_key(Oid nsp, const char* name, int len, uint8_t secret[16])
{
    const TableRows t = rows_with_key(nsp, "shardid_key", "name", name, len);
    if (t.relid != key_ring) {
        n_keys = 0;
        key_ring = t.relid;
    }
    if (t.rows == NIL)
        return false;
    if (list_length(t.rows) > 1)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("obfuscation key \"%.*s\" has %d rows in the key ring", len, name, list_length(t.rows)),
                        errdetail("Its rows were written past the key ring's trigger (a data-only restore with "
                                  "triggers disabled?); which one obfuscated which ID is not known."),
                        errhint("As a superuser, delete the rows of shardid_key that are not the key.")));
    const HeapTuple row = static_cast<HeapTuple>(linitial(t.rows));
    // On a Citus worker, only the coordinator's keys (src/pg/citus/key_ring.cpp).
    int64 group;
    if (DatumGetBool(row_value(t, row, "made_by_install")) && (group = citus_local_group()) > 0)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("obfuscation key \"%.*s\" of this Citus worker is not the coordinator's", len, name),
                        errdetail("This node (group %lld) made the key with its own CREATE EXTENSION; IDs "
                                  "obfuscated with it would not reveal on other nodes.",
                                  (long long)group),
                        errhint("On the coordinator, a superuser runs SELECT shardid_sync_keys(), which sends "
                                "its keys to every worker.")));
    if (citus_local_group() > 0)
        refuse_if_pending(row, name, len);
    bytea* b = DatumGetByteaPP(row_value(t, row, "secret"));
    if (VARSIZE_ANY_EXHDR(b) != 16)
        ereport(ERROR,
                (errcode(ERRCODE_DATA_CORRUPTED), errmsg("obfuscation key \"%.*s\" is not 16 bytes", len, name)));
    memcpy(secret, VARDATA_ANY(b), 16);
    return true;
}

// The key's secret as the coordinator reports it: SHA-256, in hex.
char* fingerprint(const uint8_t secret[16])
{
    bytea* b = static_cast<bytea*>(palloc(VARHDRSZ + 16));
    SET_VARSIZE(b, VARHDRSZ + 16);
    memcpy(VARDATA(b), secret, 16);
    bytea* digest = DatumGetByteaPP(DirectFunctionCall1(sha256_bytea, PointerGetDatum(b)));
    const size_t len = VARSIZE_ANY_EXHDR(digest);
    char* hex = static_cast<char*>(palloc(2 * len + 1));
    hex[hex_encode(VARDATA_ANY(digest), len, hex)] = '\0';
    return hex;
}

// A key is used only as the cluster's. Without Citus, and on the
// coordinator (whose ring is the cluster's), every key is. A Citus worker
// takes keys from the coordinator (src/pg/citus/key_ring.cpp); one
// that missed a change (it was disabled, had no metadata, or was restored
// from a backup) would obfuscate and reveal with a key the rest of the
// cluster no longer has, silently. So a worker confirms each key against
// its lease of the coordinator's ring (src/pg/citus/key_lease.cpp) in
// every statement that uses it: the same secret, or a refusal. A worker
// without metadata cannot ask, and refuses.
void confirm_key(FunctionCallInfo fcinfo, CachedKey& key)
{
    const uint64 now = citus_metadata_changes() + 1;
    if (key.confirmed != now) {
        // The node's group, looked at again after every change of Citus'
        // metadata only (a node becomes a worker or stops being one so).
        const int64 group = citus_local_group();
        if (group == 0 && !citus_has_nodes())
            ereport(
                ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("obfuscation key \"%s\" cannot be used on a Citus node without metadata", key.name),
                 errdetail("This database has Citus but no Citus metadata: it is a worker whose metadata was taken "
                           "away or never given, or a server not yet made a coordinator. A worker uses the "
                           "coordinator's keys, and its own would not reveal what the rest of the cluster "
                           "obfuscated; which of the two this node is cannot be told from here."),
                 errhint("On a worker: on the coordinator, a superuser runs SELECT start_metadata_sync_to_node(...) "
                         "for it and then SELECT shardid_sync_keys(). On a coordinator or a single-node Citus: "
                         "SELECT citus_set_coordinator_host(...) names it in its own metadata.")));
        key.on_worker = group > 0;
        key.confirmed = now;
        key.confirmed_in = 0;
    }
    if (!key.on_worker || key.confirmed_in == statement_number())
        return;
    uint8_t leased[16];
    const LeaseFind found = citus_leased_key(key.name, int(strlen(key.name)), statement_began_ms, leased);
    const char* answer = nullptr;
    if (found == LeaseFind::beyond) {
        // A ring larger than a lease holds: this key asked for.
        const char* command = psprintf(
            "SELECT COALESCE((SELECT pg_catalog.encode(pg_catalog.sha256(k.secret), 'hex') FROM %s k "
            "WHERE k.name OPERATOR(pg_catalog.=) %s), 'none')",
            quote_qualified_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)), "shardid_key"),
            quote_literal_cstr(key.name));
        if (!citus_coordinator_answer(command, &answer))
            ereport(ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("obfuscation key \"%s\" could not be confirmed with the Citus coordinator", key.name),
                     errdetail("A worker uses a key once the coordinator has confirmed it holds the same one."),
                     errdetail_log("The coordinator answered: %s", answer),
                     errhint("Check that the coordinator is up and in the metadata (citus_set_coordinator_host()), "
                             "and see this worker's server log.")));
    }
    const bool absent = found == LeaseFind::absent || (answer != nullptr && strcmp(answer, "none") == 0);
    const bool same = found == LeaseFind::found ? memcmp(leased, key.secret, 16) == 0
                                                : answer != nullptr && strcmp(answer, fingerprint(key.secret)) == 0;
    explicit_bzero(leased, sizeof leased);
    if (!same)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        absent ? errmsg("obfuscation key \"%s\" of this Citus worker is not in the coordinator's "
                                        "key ring",
                                        key.name)
                               : errmsg("obfuscation key \"%s\" of this Citus worker differs from the "
                                        "coordinator's",
                                        key.name),
                        errdetail("The worker missed a change of the coordinator's key ring (it was disabled, "
                                  "had no metadata or was restored), or the change is not committed yet; IDs "
                                  "obfuscated or revealed with its copy would not match the cluster's."),
                        errhint("On the coordinator, a superuser runs SELECT shardid_sync_keys(), which "
                                "replaces the keys a worker got from it.")));
    key.confirmed_in = statement_number();
}

// Whether this backend takes its keys from the coordinator in this
// statement (src/pg/functions/pulled_keys.cpp), decided once per statement.
bool pulls_keys()
{
    const uint64 statement = statement_number();
    if (statement != mode_statement) {
        statement_began_ms = fence_clock_ms();
        pulling = key_ring_pulled();
        mode_statement = statement;
    }
    return pulling;
}

}  // namespace

void key_secret(FunctionCallInfo fcinfo, const char* name, int len, uint8_t secret[16])
{
    if (pulls_keys()) {
        pull_key(fcinfo, name, len, statement_began_ms, secret);
        return;
    }
    const uint64 statement = statement_number();
    for (int i = 0; i < n_keys; i++)
        if (int(strlen(keys[i].name)) == len && memcmp(keys[i].name, name, len) == 0) {
            // A Citus worker looks once per statement for a change of the
            // key prepared here and not yet committed (change_pending()),
            // which no invalidation announces; any other node asks Citus'
            // metadata once per statement, not once per call.
            if (keys[i].unchanged_in != statement) {
                if (citus_local_group() > 0) {
                    const uint64 before = forgotten;
                    const TableRows t =
                        rows_with_key(get_func_namespace(fcinfo->flinfo->fn_oid), "shardid_key", "name", name, len);
                    if (forgotten != before || t.rows == NIL || list_length(t.rows) > 1)
                        break;  // the ring changed meanwhile: read the key again
                    refuse_if_pending(static_cast<HeapTuple>(linitial(t.rows)), name, len);
                }
                keys[i].unchanged_in = statement;
            }
            confirm_key(fcinfo, keys[i]);
            memcpy(secret, keys[i].secret, 16);
            return;
        }
    if (!callback_registered) {
        on_relation_change(forget_keys);
        callback_registered = true;
    }
    if (len > max_name_len || !load_key(get_func_namespace(fcinfo->flinfo->fn_oid), name, len, secret))
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_OBJECT),
                 errmsg("obfuscation key \"%.*s\" does not exist", len > max_name_len ? max_name_len : len, name),
                 errhint("A superuser creates keys with create_obfuscation_key().")));
    if (n_keys == max_keys)
        n_keys = 0;
    CachedKey& key = keys[n_keys];
    memcpy(key.name, name, len);
    key.name[len] = '\0';
    memcpy(key.secret, secret, 16);
    key.confirmed = 0;
    key.confirmed_in = 0;
    key.unchanged_in = statement;
    confirm_key(fcinfo, key);
    n_keys++;
}

}  // namespace shardid::pg

// Statement trigger on shardid's catalogs (the key ring, the layout
// catalog): row changes send no cache invalidation by themselves, so send
// one for the table. Every backend (this one included) forgets what it
// cached from it; a rollback of the change replays it in this backend.
extern "C" Datum shardid_catalog_changed(PG_FUNCTION_ARGS)
{
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("%s() must be called as a trigger", get_func_name(fcinfo->flinfo->fn_oid))));
    CacheInvalidateRelcache(reinterpret_cast<TriggerData*>(fcinfo->context)->tg_relation);
    return PointerGetDatum(NULL);
}

// The 1.0 name of the same trigger function (its install script names it).
extern "C" Datum shardid_key_ring_changed(PG_FUNCTION_ARGS) { return shardid_catalog_changed(fcinfo); }
