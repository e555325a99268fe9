// The key ring on Citus (docs/citus.md, "The key ring on Citus"): the
// coordinator's ring is the cluster's. The key ring itself and its readers:
// src/pg/functions/keys.cpp; Citus' group id: src/pg/citus/source.cpp.
//
// - Every change to shardid_key on the coordinator (create_obfuscation_key,
//   drop_obfuscation_key, a superuser's own INSERT, UPDATE, DELETE or
//   TRUNCATE, a restore's COPY) reaches every worker with metadata in the
//   same transaction: the row trigger below sends it through Citus'
//   coordinated transaction, which commits on every node with two-phase
//   commit, or on none. A worker that cannot be reached fails the change,
//   as it fails Citus' own DDL.
// - CREATE EXTENSION shardid on the coordinator sends the whole ring once
//   Citus has made the extension on the workers (key_ring_created(), called
//   by the utility hook in src/pg/generate/carrier_deps.cpp); shardid_sync_keys()
//   sends it again, for a worker added later or a ring upgraded from 1.1.
// - A worker takes keys from the coordinator only: its own writes to the
//   ring are refused, and a key its own CREATE EXTENSION made (every node
//   makes a random `default`) is refused when read (keys.cpp) until the
//   coordinator's key of that name has replaced it.
//
// - A worker that missed a change (disabled, without metadata, restored)
//   does not use its copy: each key is confirmed with the coordinator
//   before a worker uses it (keys.cpp, confirm_key()), and
//   shardid_sync_keys() replaces what the worker got from the coordinator.
//
// - On PostgreSQL 16 and later nothing travels: Citus' function that sends
//   it is hidden there (citus_send()), and each worker reads a key from
//   the coordinator's ring when a statement first uses it (keys.cpp,
//   pull_key()).
//
// What travels is a call of shardid_key_apply() with the key's secret as a
// parameter (never in the statement's text), over Citus' connection to
// each worker, as the role that changed the ring (a superuser unless one
// granted the key functions).
#include "pg/base/pg.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
}

#include "pg/base/catalog.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/key_lease.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(shardid_key_ring_spread);
PG_FUNCTION_INFO_V1(shardid_key_apply);
PG_FUNCTION_INFO_V1(shardid_sync_keys);
}

namespace shardid::pg {

namespace {

// True while shardid_key_apply() writes this worker's ring: the only
// writes a worker's ring takes.
bool applying = false;

// One change of the ring for every worker: shardid_key_apply(name, secret,
// created_at), each NULL when not given: the key arrives (secret given),
// goes (secret NULL), or every key goes (name NULL). The values travel as
// parameters of a fixed statement, never in its text: a worker's
// pg_stat_activity, the coordinator's citus_stat_activity, pg_stat_statements
// and a server log that records the statement of an error
// (log_min_error_statement) show "$2", not the secret.
struct KeyChange {
    const char* name = nullptr;
    bytea* secret = nullptr;
    TimestampTz created_at = 0;
};

// Citus' own way to run a command with parameters on every other node with
// metadata within the coordinated transaction, two-phase committed
// (SendCommandToRemoteMetadataNodesParams(), worker_transaction.c, exported
// by citus.so). Citus is loaded wherever its metadata exists: it runs only
// from shared_preload_libraries.
using Send = void (*)(const char*, const char*, int, const Oid*, const char* const*);

// nullptr where citus.so does not export it: PostgreSQL 16 and later build
// extensions with hidden symbols (-fvisibility=hidden), and Citus 13 marks
// only its SQL functions visible. Then nothing is sent: each worker reads
// the coordinator's keys itself, per statement (keys.cpp).
Send citus_send()
{
    static Send send = nullptr;
    static bool looked = false;
    if (!looked) {
        send = reinterpret_cast<Send>(
            load_external_function("$libdir/citus", "SendCommandToRemoteMetadataNodesParams", false, nullptr));
        looked = true;
    }
    return send;
}

void send_to_workers(Oid nsp, const KeyChange& change)
{
    // Where it cannot be sent, each worker reads the coordinator's ring
    // itself (keys.cpp, key_ring_pulled()): nothing to send.
    const Send send = citus_send();
    if (send == nullptr)
        return;
    // The time as microseconds from the Unix epoch: read the same whatever
    // the worker connection's DateStyle.
    const char* command =
        psprintf("SELECT %s.shardid_key_apply($1, $2, pg_catalog.timestamptz 'epoch' OPERATOR(pg_catalog.+) "
                 "($3 OPERATOR(pg_catalog.*) pg_catalog.interval '1 microsecond'))",
                 quote_identifier(get_namespace_name(nsp)));
    const Oid types[3] = {TEXTOID, BYTEAOID, INT8OID};
    const char* values[3] = {change.name, nullptr, nullptr};
    if (change.secret != nullptr) {
        // bytea's text form, in PostgreSQL's own hex encoding.
        const size_t len = VARSIZE_ANY_EXHDR(change.secret);
        char* hex = static_cast<char*>(palloc(2 * len + 3));
        hex[0] = '\\', hex[1] = 'x';
        hex[2 + hex_encode(VARDATA_ANY(change.secret), len, hex + 2)] = '\0';
        values[1] = hex;
        values[2] = psprintf(
            "%lld", (long long)(change.created_at + int64(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY));
    }
    send(command, GetUserNameFromId(GetUserId(), false), 3, types, values);
}

// The change of one row of the ring (desc: the ring's).
KeyChange row_change(HeapTuple row, TupleDesc desc, bool arrives)
{
    bool isnull;
    KeyChange change;
    change.name = TextDatumGetCString(heap_getattr(row, 1, desc, &isnull));
    if (arrives) {
        change.secret = DatumGetByteaPP(heap_getattr(row, 2, desc, &isnull));
        change.created_at = DatumGetTimestampTz(heap_getattr(row, 3, desc, &isnull));
    }
    return change;
}

// The ring's columns, in the order row_change() reads them.
void check_ring_columns(TupleDesc desc)
{
    if (desc->natts < 4 || strcmp(NameStr(TupleDescAttr(desc, 0)->attname), "name") != 0 ||
        strcmp(NameStr(TupleDescAttr(desc, 1)->attname), "secret") != 0 ||
        strcmp(NameStr(TupleDescAttr(desc, 2)->attname), "created_at") != 0)
        elog(ERROR, "shardid_key does not have the columns name, secret, created_at");
}

// Sends every key of this coordinator's ring to every worker; the number
// sent.
int send_ring(Oid nsp)
{
    const TableRows t = rows_with_key(nsp, "shardid_key", "name", nullptr, 0);
    check_ring_columns(t.desc);
    ListCell* lc;
    foreach (lc, t.rows)
        send_to_workers(nsp, row_change(static_cast<HeapTuple>(lfirst(lc)), t.desc, true));
    return list_length(t.rows);
}

// Runs one statement of shardid_key_apply() with its arguments.
void apply_sql(const char* sql, int nargs, Oid* types, Datum* values, const char* nulls, int expect)
{
    const int rc = SPI_execute_with_args(sql, nargs, types, values, nulls, false, 0);
    if (rc != expect)
        elog(ERROR, "shardid_key_apply: SPI returned %d", rc);
}

}  // namespace

void key_ring_created()
{
    if (citus_local_group() == 0)
        send_ring(shardid_extension().schema);
}

bool key_ring_pulled() { return citus_local_group() > 0 && citus_send() == nullptr; }

}  // namespace shardid::pg

using namespace shardid::pg;

// Trigger on shardid_key, BEFORE each statement (INSERT, UPDATE, DELETE,
// TRUNCATE: on a Citus coordinator, the workers' leases of the ring are
// waited out), AFTER each row (INSERT, UPDATE, DELETE) and after TRUNCATE:
// on a Citus coordinator, the change goes to every worker; on a Citus
// worker, a change not from the coordinator is refused. CREATE
// EXTENSION's own key (made while the extension is created) goes nowhere:
// every node makes its own, and the coordinator's replaces the workers'
// (key_ring_created()).
extern "C" Datum shardid_key_ring_spread(PG_FUNCTION_ARGS)
{
    if (!CALLED_AS_TRIGGER(fcinfo))
        ereport(ERROR, (errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
                        errmsg("%s() must be called as a trigger", get_func_name(fcinfo->flinfo->fn_oid))));
    TriggerData* td = reinterpret_cast<TriggerData*>(fcinfo->context);
    const bool row = TRIGGER_FIRED_FOR_ROW(td->tg_event);
    HeapTuple result = row ? (TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newtuple : td->tg_trigtuple) : nullptr;
    const int64 group = applying ? -1 : citus_local_group();
    // Workers hold the coordinator's ring under a lease (key_lease.cpp): a
    // change waits the leases out before its first statement changes a row
    // (the BEFORE statement trigger; the row triggers, should that one be
    // missing, before the transaction goes on), so that no worker's
    // statement that begins after it committed uses a key from before. A
    // ring made by CREATE EXTENSION too: one dropped just before may still
    // be leased.
    if (group == 0)
        key_ring_changing(citus_has_nodes());
    if (TRIGGER_FIRED_BEFORE(td->tg_event) || creating_extension || applying)
        return PointerGetDatum(result);
    if (group < 0)
        return PointerGetDatum(result);
    if (group > 0)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("the key ring of a Citus worker is written by the coordinator"),
                        errdetail("This node is a worker of a Citus cluster (group %lld); its keys are the "
                                  "coordinator's, sent to it with every change.",
                                  (long long)group),
                        errhint("Run create_obfuscation_key() or drop_obfuscation_key() on the coordinator.")));
    const Oid nsp = RelationGetNamespace(td->tg_relation);
    const TupleDesc desc = RelationGetDescr(td->tg_relation);
    check_ring_columns(desc);
    if (!row)
        send_to_workers(nsp, KeyChange{});
    else if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
        send_to_workers(nsp, row_change(td->tg_trigtuple, desc, true));
    else if (TRIGGER_FIRED_BY_DELETE(td->tg_event))
        send_to_workers(nsp, row_change(td->tg_trigtuple, desc, false));
    else {
        send_to_workers(nsp, row_change(td->tg_trigtuple, desc, false));
        send_to_workers(nsp, row_change(td->tg_newtuple, desc, true));
    }
    return PointerGetDatum(result);
}

// shardid_key_apply(name, secret, created_at), on a Citus worker, sent by
// the coordinator: the coordinator's key `name` arrives (replacing one this
// node's CREATE EXTENSION made; the same key again changes nothing; another
// key of that name that this worker was given otherwise is an error), or
// key `name` goes (secret NULL), or every key goes (name NULL).
extern "C" Datum shardid_key_apply(PG_FUNCTION_ARGS)
{
    const Oid nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
    const char* ring = quote_qualified_identifier(get_namespace_name(nsp), "shardid_key");
    const bool all = PG_ARGISNULL(0);
    const bool arrives = !all && !PG_ARGISNULL(1);
    Datum name = all ? (Datum)0 : PG_GETARG_DATUM(0);
    Datum secret = arrives ? PG_GETARG_DATUM(1) : (Datum)0;
    if (arrives && VARSIZE_ANY_EXHDR(DatumGetByteaPP(secret)) != 16)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("an obfuscation key is 16 bytes")));
    Datum created = arrives && !PG_ARGISNULL(2) ? PG_GETARG_DATUM(2) : TimestampTzGetDatum(GetCurrentTimestamp());
    Oid types[3] = {TEXTOID, BYTEAOID, TIMESTAMPTZOID};
    Datum values[3] = {name, secret, created};

    SPI_connect();
    applying = true;
    PG_TRY();
    {
        if (all)
            apply_sql(psprintf("DELETE FROM %s k WHERE k.made_by_install OR k.from_coordinator", ring), 0, nullptr,
                      nullptr, nullptr, SPI_OK_DELETE);
        else if (!arrives)
            apply_sql(psprintf("DELETE FROM %s k WHERE k.name OPERATOR(pg_catalog.=) $1", ring), 1, types, values,
                      nullptr, SPI_OK_DELETE);
        else {
            // A key this worker's CREATE EXTENSION made, or an older one
            // from the coordinator (a change this worker missed), gives way.
            apply_sql(psprintf("DELETE FROM %s k WHERE k.name OPERATOR(pg_catalog.=) $1 AND (k.made_by_install "
                               "OR k.from_coordinator) AND k.secret OPERATOR(pg_catalog.<>) $2",
                               ring),
                      2, types, values, nullptr, SPI_OK_DELETE);
            apply_sql(psprintf("SELECT k.secret OPERATOR(pg_catalog.=) $2 FROM %s k "
                               "WHERE k.name OPERATOR(pg_catalog.=) $1",
                               ring),
                      2, types, values, nullptr, SPI_OK_SELECT);
            if (SPI_processed == 0)
                apply_sql(psprintf("INSERT INTO %s (name, secret, created_at, from_coordinator) "
                                   "VALUES ($1, $2, $3, true)",
                                   ring),
                          3, types, values, nullptr, SPI_OK_INSERT);
            else {
                bool isnull;
                const bool same = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
                if (!same)
                    ereport(ERROR,
                            (errcode(ERRCODE_UNIQUE_VIOLATION),
                             errmsg("obfuscation key \"%s\" of this Citus worker differs from the coordinator's",
                                    TextDatumGetCString(name)),
                             errdetail("The worker has a key of that name that it did not get from the coordinator; "
                                       "taking the coordinator's would change what IDs obfuscated with it reveal."),
                             errhint("If nothing obfuscated with the worker's own key is needed, a superuser "
                                     "removes it on the worker with SELECT shardid_key_apply('%s', NULL, NULL) "
                                     "and runs shardid_sync_keys() on the coordinator.",
                                     TextDatumGetCString(name))));
            }
        }
    }
    PG_FINALLY();
    {
        applying = false;
    }
    PG_END_TRY();
    SPI_finish();
    PG_RETURN_VOID();
}

// shardid_sync_keys(): on a Citus coordinator, makes every worker's ring
// the coordinator's: the keys a worker got from the coordinator or made
// with its own CREATE EXTENSION go, and every key of the coordinator's
// ring arrives, in one coordinated transaction. Citus reaches the active
// workers with metadata only; each other worker is named in a WARNING (its
// backends refuse keys: src/pg/functions/keys.cpp). The number of workers
// reached.
extern "C" Datum shardid_sync_keys(PG_FUNCTION_ARGS)
{
    const int64 group = citus_local_group();
    if (group != 0)
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                 errmsg("shardid_sync_keys() runs on a Citus coordinator"),
                 group < 0 ? errdetail("Citus is not installed in this database.")
                           : errdetail("This node is a worker of a Citus cluster (group %lld).", (long long)group),
                 errhint("Run it on the coordinator of the cluster, in the database of the extension.")));
    const Oid nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
    int reached = 0;
    if (SPI_connect() != SPI_OK_CONNECT)
        elog(ERROR, "SPI_connect failed");
    if (SPI_execute("SELECT n.nodename, n.nodeport, n.groupid, n.isactive, n.hasmetadata "
                    "FROM pg_catalog.pg_dist_node n WHERE n.groupid OPERATOR(pg_catalog.>) 0 "
                    "AND n.noderole OPERATOR(pg_catalog.=) 'primary' ORDER BY n.groupid",
                    true, 0) != SPI_OK_SELECT)
        elog(ERROR, "shardid_sync_keys: could not read pg_dist_node");
    for (uint64 i = 0; i < SPI_processed; i++) {
        HeapTuple row = SPI_tuptable->vals[i];
        TupleDesc desc = SPI_tuptable->tupdesc;
        bool isnull;
        const bool active = DatumGetBool(SPI_getbinval(row, desc, 4, &isnull));
        const bool metadata = DatumGetBool(SPI_getbinval(row, desc, 5, &isnull));
        if (active && metadata) {
            reached++;
            continue;
        }
        ereport(WARNING,
                (errmsg("Citus worker %s:%s (group %s) does not get the key ring", SPI_getvalue(row, desc, 1),
                        SPI_getvalue(row, desc, 2), SPI_getvalue(row, desc, 3)),
                 !active ? errdetail("The worker is not active; Citus sends nothing to it.")
                         : errdetail("The worker has no metadata; Citus sends the key ring only to workers with it."),
                 errhint("Its backends refuse to obfuscate or reveal until it has the ring: run %s for it, then "
                         "SELECT shardid_sync_keys() again.",
                         !active ? "citus_activate_node()" : "start_metadata_sync_to_node()")));
    }
    SPI_finish();
    if (citus_send() == nullptr)
        ereport(NOTICE, (errmsg("Citus workers read the coordinator's key ring themselves on PostgreSQL %d",
                                PG_VERSION_NUM / 10000),
                         errdetail("Nothing is sent; each worker reads a key from the coordinator when a statement "
                                   "first uses it.")));
    send_to_workers(nsp, KeyChange{});
    send_ring(nsp);
    PG_RETURN_INT32(reached);
}
