// The node's counter floors (DecimalId generator ids, call-number run ids
// and their key eras): a value is taken above the floor, and goes into IDs
// only once the node state that records it is durable, like an ID's
// covering mark (the protocol: src/pg/state/persist.cpp; shared struct and
// locking rules: src/pg/state/shared.hpp).
#include <algorithm>

#include "pg/state/shmem.hpp"

#include "pg/base/pg.hpp"
#include "pg/state/shared.hpp"

extern "C" {
#include "storage/lwlock.h"
}

namespace shardid::pg {

void set_counter_floors(const NodeState& st, bool raise)
{
    for (int i = 0; i < node_state_field_count; i++)
        if (node_state_fields[i].kind == NodeStateFieldKind::counter_floor) {
            const int64 v = st.*node_state_fields[i].member;
            shared->counter_floors[i] = raise ? std::max(shared->counter_floors[i], v) : v;
        }
}

int64 counter_floor(NodeCounter which)
{
    attach_if_needed();
    LWLockAcquire(&shared->state_lock, LW_SHARED);
    const int64 floor = shared->counter_floors[int(which)];
    LWLockRelease(&shared->state_lock);
    return floor;
}

bool claim_counter(NodeCounter which, int64 value)
{
    attach_if_needed();
    raise_if_corrupt();
    LWLockAcquire(&shared->state_lock, LW_EXCLUSIVE);
    int64& floor = shared->counter_floors[int(which)];
    const bool fresh = value > floor;
    XLogRecPtr end = InvalidXLogRecPtr;
    if (fresh) {
        NodeState st = persisted_state();
        st.*node_state_fields[int(which)].member = value;
        end = persist(st);
        floor = value;
    }
    LWLockRelease(&shared->state_lock);
    // The value goes into IDs only once the record of its floor is safe,
    // like any ID's covering record (a standby promoted later knows it).
    if (fresh)
        confirm_lsn(end);
    return fresh;
}

void take_call_runs(int64 key, int64 above, int n, int64* runs)
{
    attach_if_needed();
    raise_if_corrupt();
    LWLockAcquire(&shared->state_lock, LW_EXCLUSIVE);
    int64& floor = shared->counter_floors[int(NodeCounter::run)];
    CallEras eras = shared->call_eras;
    int64 high = floor;
    for (int i = 0; i < n; i++) {
        int64_t run = -1;
        if (!call_era_take(eras, key, -1, std::max(high, above), &run)) {
            LWLockRelease(&shared->state_lock);
            raise_call_eras_used_up();
        }
        runs[i] = run;
        high = std::max(high, int64(run));
    }
    shared->call_eras = eras;
    floor = high;
    // One record for all n: a refill of a Citus worker's spares flushed
    // one for each run id, and on a loaded machine the refill came seconds
    // after the coordinator answered again (test/citus/fences.sh 4d).
    const XLogRecPtr end = persist(persisted_state());
    LWLockRelease(&shared->state_lock);
    // Used only once its record is safe, like any counter's floor.
    confirm_lsn(end);
}

int64 take_call_run(int64 key, int64 above)
{
    int64 run = -1;
    take_call_runs(key, above, 1, &run);
    return run;
}

void raise_call_eras_used_up()
{
    ereport(ERROR, (errcode(ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED), errmsg("no call-number key era is left"),
                    errdetail("Each call-number key takes eras of run ids of its own, so that no call number is "
                              "issued twice across keys; all %d are taken.",
                              call_era_max),
                    errhint("Issue call numbers with a key that has an era already, or use another scheme for new "
                            "ones.")));
}

}  // namespace shardid::pg
