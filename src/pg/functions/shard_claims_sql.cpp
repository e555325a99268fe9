// The SQL functions of shard value claims (src/pg/etcd/shard_claims.hpp):
// shardid_shard_claims(), shardid_shard_refusals(), shardid_release_shard().
#include "core/schemes.hpp"
#include "core/etcd/shard_values.hpp"
#include "pg/etcd/shard_claims.hpp"

extern "C" {
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
}

#include "pg/state/shmem.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/base/guard.hpp"
#include "pg/generate/layouts.hpp"
#include "pg/base/row.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/timeconv.hpp"
#include "pg/base/wait_event.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(shardid_shard_claims);
PG_FUNCTION_INFO_V1(shardid_shard_refusals);
PG_FUNCTION_INFO_V1(shardid_release_shard);
}

using namespace shardid;
using namespace shardid::pg;

namespace {

constexpr int claim_columns = 9;
uint32 release_event = 0;  // the wait event of a backend waiting for a release

Datum ts(int64 ms) { return TimestampTzGetDatum(timestamptz_of_unix_ms(ms)); }

}  // namespace

// Every shard value this node holds, claims or was refused, one row each.
extern "C" Datum shardid_shard_claims(PG_FUNCTION_ARGS)
{
    attach_if_needed();
    InitMaterializedSRF(fcinfo, 0);
    ShardClaims* t = shard_claims();
    if (t == nullptr)
        PG_RETURN_NULL();
    for (int i = 0; i < t->size; i++) {
        ShardClaim& e = t->entries[i];
        const uint64_t key = e.key.load(std::memory_order_acquire);
        const auto state = ClaimState(e.state.load(std::memory_order_acquire));
        if (key == 0 || state == ClaimState::free)
            continue;
        char note[claim_note_size];
        SpinLockAcquire(&t->mutex);
        strlcpy(note, claim_note(e), sizeof note);
        SpinLockRelease(&t->mutex);
        const Slot& slot = shared->slots[claim_slot(key)];
        const int64 floor = e.floor_ms.load(), since = e.since_ms.load(), used = e.used_ms.load();
        Row<claim_columns> row;
        row.add(CStringGetTextDatum(slot.name));                                                     // layout
        row.add(CStringGetTextDatum(etcd::space_name(slot.shape).c_str()));                          // space
        row.add(Int64GetDatum(claim_value(key)));                                                    // shard
        row.add(CStringGetTextDatum(claim_state_name(state)));                                       // state
        row.add(BoolGetDatum(e.own_id.load()));                                                      // node_id
        state == ClaimState::held&& floor > 0 ? row.add(ts(floor)) : row.add_null();                 // claimed_above
        state == ClaimState::held&& since > 0 ? row.add(ts(since)) : row.add_null();                 // held_since
        used > 0 ? row.add(ts(used)) : row.add_null();                                               // last_used
        note[0] && state != ClaimState::held ? row.add(CStringGetTextDatum(note)) : row.add_null();  // holder
        put_row(fcinfo, row);
    }
    PG_RETURN_NULL();
}

// Generations refused a shard value since the server started, by cause.
extern "C" Datum shardid_shard_refusals(PG_FUNCTION_ARGS)
{
    attach_if_needed();
    InitMaterializedSRF(fcinfo, 0);
    for (int c = 0; c < int(ClaimRefusal::count); c++) {
        Row<2> row;
        row.add(CStringGetTextDatum(claim_refusal_names[c]));
        row.add(Int64GetDatum(int64(shared->claim_refusals[c].load())));
        put_row(fcinfo, row);
    }
    PG_RETURN_NULL();
}

// Gives a shard value back in etcd now, so that another node can take it
// (a shard move); false when this node does not hold it.
extern "C" Datum shardid_release_shard(PG_FUNCTION_ARGS)
{
    attach_if_needed();
    LayoutEntry& entry = layout_arg(fcinfo, 0);
    const int32 shard = PG_GETARG_INT32(1);
    Status status;
    if (!check_shard(entry.layout, shard, "shard", &status))
        raise(status);
    ShardClaims* t = shard_claims();
    if (t == nullptr)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("shard values are claimed only when shardid.node_id_source is etcd"),
                        errdetail("With node ids from settings, the operator assigns shards (shardid.shards)."),
                        errhint("Move a shard by changing shardid.shards on both nodes; docs/sharding.md shows how.")));
    if (entry.slot == nullptr)
        entry.slot = slot_for(entry.layout);
    const uint64_t key = claim_key(int(reinterpret_cast<Slot*>(entry.slot) - shared->slots), uint64_t(shard));
    const int at = find_claim(key);
    if (at < 0)
        PG_RETURN_BOOL(false);
    ShardClaim& e = t->entries[at];
    int expected = int(ClaimState::held);
    if (!e.state.compare_exchange_strong(expected, int(ClaimState::releasing)) &&
        (expected = int(ClaimState::taking_over),
         !e.state.compare_exchange_strong(expected, int(ClaimState::releasing))) &&
        expected != int(ClaimState::releasing))
        PG_RETURN_BOOL(false);
    EtcdShared& c = etcd_shared();
    const TimestampTz since = GetCurrentTimestamp();
    const uint32 event = wait_event("ShardidRelease", &release_event);
    while (e.state.load() == int(ClaimState::releasing) && e.key.load() == key) {
        if (TimestampDifferenceExceeds(since, GetCurrentTimestamp(), etcd_wait_ms)) {
            ConditionVariableCancelSleep();
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("shard %d of layout %s could not be released in etcd", shard, entry.name),
                            errdetail("No ID is issued with it on this node meanwhile; the coordinator keeps "
                                      "trying. Waited %d ms (shardid.etcd_wait).",
                                      etcd_wait_ms),
                            errhint("See SELECT * FROM shardid_coordination(); for the last error.")));
        }
        if (Latch* latch = c.worker_latch.load(std::memory_order_acquire))
            SetLatch(latch);
        ConditionVariableTimedSleep(&c.changed, 50, event);
    }
    ConditionVariableCancelSleep();
    PG_RETURN_BOOL(true);
}
