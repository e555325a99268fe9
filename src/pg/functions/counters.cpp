// Counter-based schemes: DecimalId here, call numbers in call_numbers.cpp.
// Both take values from extension sequences (WAL-logged), flushed before
// any ID carries them, so a crash never hands one out twice; on a Citus
// coordinator, the counters it hands its workers.
#include <algorithm>
#include <cstring>

#include "pg/base/pg.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_sequence.h"
#include "common/cryptohash.h"
#include "common/int.h"
#include "common/sha2.h"
#include "storage/lmgr.h"
#include "utils/syscache.h"
#include "access/xlog.h"
#include "commands/sequence.h"
#include "miscadmin.h"
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include "core/callnum.hpp"
#include "core/decimal.hpp"
#include "pg/etcd/etcd.hpp"
#include "pg/base/guard.hpp"
#include "pg/base/row.hpp"
#include "pg/functions/counters.hpp"
#include "pg/functions/keys.hpp"
#include "pg/citus/citus.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/lineage.hpp"
#include "pg/state/shmem.hpp"
#include "pg/state/wal.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_next_decimal_id);
PG_FUNCTION_INFO_V1(shardid_decimal_id_decode);
PG_FUNCTION_INFO_V1(shardid_decimal_id_new_generator);
PG_FUNCTION_INFO_V1(shardid_take_cluster_counter);
PG_FUNCTION_INFO_V1(shardid_take_cluster_runs);
}

namespace shardid::pg {

Sequence extension_sequence(FunctionCallInfo fcinfo, const char* name)
{
    confirm_history(fcinfo);
    const Oid nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
    Sequence seq{name, get_relname_relid(name, nsp), InvalidOid, 0, 0};
    if (!OidIsValid(seq.relid) || get_rel_relkind(seq.relid) != RELKIND_SEQUENCE)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("sequence \"%s\" of shardid is missing", name),
                        errhint("Reinstall the extension.")));
    HeapTuple tup = SearchSysCache1(SEQRELID, ObjectIdGetDatum(seq.relid));
    if (!HeapTupleIsValid(tup))
        elog(ERROR, "cache lookup failed for sequence %u", seq.relid);
    const auto* form = reinterpret_cast<Form_pg_sequence>(GETSTRUCT(tup));
    seq.increment = form->seqincrement;
    seq.max = form->seqmax;
    ReleaseSysCache(tup);
    tup = SearchSysCache1(RELOID, ObjectIdGetDatum(seq.relid));
    if (!HeapTupleIsValid(tup))
        elog(ERROR, "cache lookup failed for relation %u", seq.relid);
    seq.owner = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relowner;
    ReleaseSysCache(tup);
    return seq;
}

// setval(seq, value, false) as the sequence's owner (the caller may have no
// rights on it; setval runs no code of anyone's).
static void restart_sequence_at(const Sequence& seq, int64 value)
{
    Oid save_user;
    int save_sec;
    GetUserIdAndSecContext(&save_user, &save_sec);
    SetUserIdAndSecContext(seq.owner, save_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    DirectFunctionCall3(setval3_oid, ObjectIdGetDatum(seq.relid), Int64GetDatum(value), BoolGetDatum(false));
    SetUserIdAndSecContext(save_user, save_sec);
}

// The next value of an extension sequence that this node never took before
// (nextval() without privilege checks: ordinary roles generate IDs without
// rights on it), recorded in the node's persisted state and made durable
// before it is returned. A sequence behind the node's record (recreated by
// DROP/CREATE EXTENSION, restored from a dump, or an ALTER SEQUENCE rolled
// back) is moved past it in its own steps, so a progression keeps its
// residue.
// `above` (the Citus coordinator handing a value to a worker): the value is
// also above that worker's own floor.
int64 take_fresh(const Sequence& seq, NodeCounter which, int64 key_fingerprint, int64 above)
{
    refuse_on_standby();
    // A source that hands out counters cluster-wide (etcd): no node took
    // these values before, and the source takes them above this node's floor.
    const NodeIdSource& source = node_id_source();
    for (int64 value; (value = source.take_counter(which, key_fingerprint)) != NodeIdSource::from_node_sequence;) {
        if (value > seq.max)
            ereport(
                ERROR,
                (errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
                 errmsg("the %s counter of shardid's %s has no value left", source.name(), node_counter_name(which)),
                 errdetail("It gave %lld; the field holds at most %lld.", (long long)value, (long long)seq.max)));
        // A run id of a key era is the key's alone by the eras' record
        // (etcd's, the Citus coordinator's), whatever this node's floor:
        // keys taken in turn are not taken in ascending order.
        if (claim_counter(which, value) || (which == NodeCounter::run && key_fingerprint != 0))
            return value;
    }
    // This node hands out run ids: in the key eras it keeps (each key's
    // run ids its own, none twice across keys). The sequence still follows
    // the highest run id taken, and a new era lies above it: a dump
    // restored into another server carries it, not the node state.
    if (which == NodeCounter::run && key_fingerprint != 0) {
        const int64 last = nextval_internal(seq.relid, false);
        const int64 run = take_call_run(key_fingerprint, std::max(above, last));
        if (run > last && run < seq.max)
            restart_sequence_at(seq, run + 1);
        return run;
    }
    for (;;) {
        const int64 value = nextval_internal(seq.relid, false);
        const int64 floor = std::max(counter_floor(which), above);
        if (value > floor) {
            XLogFlush(XactLastRecEnd);  // the sequence's own WAL record, durable before use
            if (claim_counter(which, value))
                return value;
            continue;  // another database of the node claimed a higher one meanwhile
        }
        int64 target = 0;
        const int64 steps = seq.increment > 0 ? (floor - value) / seq.increment + 1 : 0;
        if (steps == 0 || pg_mul_s64_overflow(steps, seq.increment, &target) ||
            pg_add_s64_overflow(value, target, &target) || target > seq.max)
            ereport(ERROR,
                    (errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED),
                     errmsg("sequence \"%s\" of shardid has no value left above %lld", seq.name, (long long)floor),
                     errdetail("This node already took every value up to %lld, and none may come again.",
                               (long long)floor)));
        restart_sequence_at(seq, target);
    }
}

// The counters' epoch the values handed out by the source may be used in
// now; with node ids from etcd, waits (interruptibly, up to
// shardid.etcd_wait) while the node holds no claim: a generator id or run id
// is the node's only while its claim is (src/pg/source/node_source.hpp).
uint64_t counters_epoch()
{
    const NodeIdSource& source = node_id_source();
    TimestampTz since = 0;
    for (;;) {
        Status status;
        uint64_t epoch = 0;
        if (source.counters_hold(&epoch, &status)) {
            if (since != 0)
                source.waited();
            return epoch;
        }
        if (status.error != Error::not_claimed)
            raise(status);
        if (since == 0)
            since = GetCurrentTimestamp();
        source.wait(since, status);
        CHECK_FOR_INTERRUPTS();
    }
}

}  // namespace shardid::pg

namespace {

DecimalState* decimal = nullptr;

// Takes a new generator id for this database's DecimalId state when it
// needs one (or always, with force; or when the one it has was taken in
// another counters' epoch) and returns the one installed (-1 if none was
// needed). Takers of a database are serialized by a heavyweight lock on its
// generator sequence: the deadlock detector sees it, a cancel interrupts
// it, and no LWLock is held while waiting for it.
int64 install_generator(FunctionCallInfo fcinfo, bool force, uint64_t epoch)
{
    refuse_on_standby();
    if (decimal == nullptr)
        decimal = decimal_state(MyDatabaseId);
    const Sequence seq = extension_sequence(fcinfo, "shardid_generator_seq");
    LockRelationOid(seq.relid, ShareUpdateExclusiveLock);
    int64 generator = -1;
    std::atomic<uint64_t>& taken_in = decimal_epoch(decimal);
    if (force || decimal_needs_generator(*decimal) || taken_in.load() != epoch) {
        generator = take_fresh(seq, NodeCounter::generator);
        decimal_install_generator(*decimal, generator);
        taken_in.store(epoch);
    }
    UnlockRelationOid(seq.relid, ShareUpdateExclusiveLock);
    return generator;
}

}  // namespace

extern "C" Datum shardid_next_decimal_id(PG_FUNCTION_ARGS)
{
    if (launch_id < 0)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("shardid.launch_id is not set"),
                        errdetail("Decimal ids end with the launch id of this deployment."),
                        errhint("As a superuser, set shardid.launch_id in postgresql.conf and reload, or run, one "
                                "by one: LOAD 'shardid'; ALTER SYSTEM SET shardid.launch_id = <1..%lld>; SELECT "
                                "pg_reload_conf();",
                                (long long)decimal_launch_max)));
    confirm_history(fcinfo);  // under a generator id taken before a restore too
    if (decimal == nullptr)
        decimal = decimal_state(MyDatabaseId);
    // Its generator id is this node's only while the node holds its claim,
    // and in the counters' epoch it was taken in.
    const uint64_t epoch = counters_epoch();
    if (decimal_epoch(decimal).load() != epoch)
        install_generator(fcinfo, false, epoch);
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
        install_generator(fcinfo, false, epoch);
    }
}

extern "C" Datum shardid_decimal_id_new_generator(PG_FUNCTION_ARGS)
{
    PG_RETURN_INT64(install_generator(fcinfo, true, counters_epoch()));
}

// shardid_take_cluster_counter(counter, above, key): on a Citus coordinator, a
// DecimalId generator id ('generator') or a call-number run id ('run') for
// a worker, above `above` (the worker's own floor; a run id in the era of
// the call-number key with fingerprint `key`). The coordinator is the
// one authority of both on a Citus cluster (src/pg/citus/source.cpp):
// every value it hands out, to a worker or to itself, passes its own
// counter floor, so none is handed out twice. Superusers only: a worker
// calls it as its extension's owner, never as the role that generates.
namespace {

// What the coordinator's counter functions refuse: a caller not a
// superuser, a node not a Citus coordinator.
void refuse_unless_coordinator(const char* function)
{
    if (!superuser())
        ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE), errmsg("permission denied for function %s", function),
                        errdetail("Workers of a Citus cluster take their counters from the coordinator as the "
                                  "extension's owner; no other role needs to.")));
    int64 group = -1;
    if (const char* problem = citus_group_problem(&group); problem != nullptr || group != 0)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("%s() runs on a Citus coordinator", function),
                        problem != nullptr
                            ? errdetail("%s.", problem)
                            : errdetail("This node is a worker of a Citus cluster (group %lld).", (long long)group),
                        errhint("Workers call it on the coordinator when they need a counter; it is not called by "
                                "hand.")));
}

}  // namespace

extern "C" Datum shardid_take_cluster_counter(PG_FUNCTION_ARGS)
{
    refuse_unless_coordinator("shardid_take_cluster_counter");
    const char* counter = text_to_cstring(PG_GETARG_TEXT_PP(0));
    const int64 above = PG_GETARG_INT64(1);
    const bool generator = strcmp(counter, "generator") == 0;
    if (!generator && strcmp(counter, "run") != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("unknown counter \"%s\"", counter),
                        errhint("The counters are \"generator\" (DecimalId) and \"run\" (call numbers).")));
    const NodeCounter which = generator ? NodeCounter::generator : NodeCounter::run;
    const Sequence seq = extension_sequence(fcinfo, generator ? "shardid_generator_seq" : "shardid_run_seq");
    if (above < -1 || above >= seq.max)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("no %s is above %lld", node_counter_name(which), (long long)above),
                        errdetail("A floor is -1 (none) to %lld.", (long long)seq.max - 1)));
    LockRelationOid(seq.relid, ShareUpdateExclusiveLock);
    // A run id for the worker's call-number key, in that key's era.
    const int64 key = PG_NARGS() > 2 && which == NodeCounter::run ? PG_GETARG_INT64(2) : 0;
    const int64 value = take_fresh(seq, which, key, above);
    UnlockRelationOid(seq.relid, ShareUpdateExclusiveLock);
    PG_RETURN_INT64(value);
}

// shardid_take_cluster_runs(above, key, n): on a Citus coordinator, n
// call-number run ids in the era of the key with fingerprint `key` for a
// worker's spares (src/pg/citus/spare_runs.cpp), above `above`, in one
// durable record (n calls of shardid_take_cluster_counter() flush n).
// Superusers only, as shardid_take_cluster_counter().
extern "C" Datum shardid_take_cluster_runs(PG_FUNCTION_ARGS)
{
    refuse_unless_coordinator("shardid_take_cluster_runs");
    const int64 above = PG_GETARG_INT64(0);
    const int64 key = PG_GETARG_INT64(1);
    const int32 n = PG_GETARG_INT32(2);
    if (n < 1 || n > 64)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("a request takes 1 to 64 run ids, not %d", n)));
    if (key == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("a call-number key's fingerprint is not 0"),
                        errdetail("Run ids are taken in batches only in the era of a call-number key.")));
    const Sequence seq = extension_sequence(fcinfo, "shardid_run_seq");
    if (above < -1 || above >= seq.max)
        ereport(ERROR, (errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
                        errmsg("no %s is above %lld", node_counter_name(NodeCounter::run), (long long)above),
                        errdetail("A floor is -1 (none) to %lld.", (long long)seq.max - 1)));
    LockRelationOid(seq.relid, ShareUpdateExclusiveLock);
    int64 runs[64];
    if (&node_id_source() == &citus_source()) {
        // This node hands the run ids out (a coordinator's Citus source
        // takes them from its own sequence and eras): all n in one record.
        refuse_on_standby();
        const int64 last = nextval_internal(seq.relid, false);
        take_call_runs(key, std::max(above, last), n, runs);
        const int64 high = *std::max_element(runs, runs + n);
        if (high > last && high < seq.max)
            restart_sequence_at(seq, high + 1);
    } else {
        for (int i = 0; i < n; i++)
            runs[i] = take_fresh(seq, NodeCounter::run, key, above);
    }
    UnlockRelationOid(seq.relid, ShareUpdateExclusiveLock);
    Datum values[64];
    for (int i = 0; i < n; i++)
        values[i] = Int64GetDatum(runs[i]);
    PG_RETURN_ARRAYTYPE_P(construct_array(values, n, INT8OID, sizeof(int64), FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

extern "C" Datum shardid_decimal_id_decode(PG_FUNCTION_ARGS)
{
    const int64 id = PG_GETARG_INT64(0);
    DecimalParts parts{};
    Status status;
    if (!guarded(status, [&] { return decimal_decode(id, &parts, &status); }))
        raise(status);
    Row<3> row;
    row.add(Int64GetDatum(parts.counter));
    row.add(Int32GetDatum(parts.generator_id));
    row.add(Int32GetDatum(parts.launch_id));
    return return_row(fcinfo, row);
}
