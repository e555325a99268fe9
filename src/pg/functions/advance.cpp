// shardid_advance_past(layout, id): the step of a logical shard's move to
// this node that keeps its IDs increasing (README, "Sharding"). The
// arithmetic is the core's advance_past(); this is its SQL face.
#include "pg/generate/layouts.hpp"

#include "core/engine.hpp"
#include "pg/base/guard.hpp"
#include "pg/base/pg.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/shmem.hpp"
#include "pg/state/wal.hpp"

extern "C" {
#include "miscadmin.h"
#include "utils/timestamp.h"
}

extern "C" {
PG_FUNCTION_INFO_V1(shardid_advance_past);
}

// Raises this node's state for a layout so that every later ID of it sorts
// above `id`, durably (state file and WAL) before it returns; returns how far
// the layout's logical clock now leads this node's wall clock.
extern "C" Datum shardid_advance_past(PG_FUNCTION_ARGS)
{
    using namespace shardid;
    using namespace shardid::pg;
    if (!superuser())
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE), errmsg("permission denied to advance shardid's node state"),
                 errdetail("Only superusers may move a layout's logical clock: it is shared by every "
                           "database and role on the node."),
                 errhint("Run it as a superuser: no GRANT gives it to another role.")));
    refuse_on_standby();
    LayoutEntry& entry = layout_arg(fcinfo, 0);
    const int64 id = PG_GETARG_INT64(1);
    if (entry.slot == nullptr)
        entry.slot = slot_for(entry.layout);

    Status status;
    int64_t tick_ms = 0;
    uint64_t word = 0;
    const int64_t now_ms = wall_clock().now_ms();
    const bool ok = guarded(status, [&] {
        return advance_past(entry.layout, *entry.slot, id, now_ms, max_clock_lead_ms, &status, &tick_ms, &word);
    });
    if (!ok)
        raise(status);
    // Durable before anyone relies on it: a restart or a promoted standby
    // resumes above it too.
    cover_issued(entry.slot, entry.layout, word, tick_ms);

    const uint64_t last = entry.slot->last.load(std::memory_order_acquire);
    const int64_t lead_ms = entry.layout.ms_of_tick(int64_t(entry.layout.packed_tick(last))) - now_ms;
    auto* lead = static_cast<Interval*>(palloc0(sizeof(Interval)));
    lead->time = lead_ms > 0 ? lead_ms * 1000 : 0;
    PG_RETURN_INTERVAL_P(lead);
}
