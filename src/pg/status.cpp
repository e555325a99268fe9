// shardid_status(): one row per layout slot in use on this node.
#include "core/clock.hpp"
#include "pg/pg.hpp"
#include "pg/settings.hpp"
#include "pg/shared.hpp"
#include "pg/timeconv.hpp"
#include "pg/wal.hpp"

extern "C" {
#include "funcapi.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"
}

extern "C" {
PG_FUNCTION_INFO_V1(shardid_status);
}

// One row per layout slot in use on this node.
extern "C" Datum shardid_status(PG_FUNCTION_ARGS)
{
    using namespace shardid;
    using namespace shardid::pg;
    InitMaterializedSRF(fcinfo, 0);
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    attach_if_needed();
    const int n = shared->n_used.load(std::memory_order_acquire);  // whole slots only (Shared::n_used)

    const int64 now_ms = wall_clock().now_ms();
    const int64 mark_ms = shared->lease_until_ms.load();
    const Datum mark = TimestampTzGetDatum(timestamptz_of_unix_ms(mark_ms));
    const int64 floor_ms = shared->restart_floor_ms.load();
    const Datum floor = TimestampTzGetDatum(timestamptz_of_unix_ms(floor_ms));
    for (int i = 0; i < n; i++) {
        const Slot& slot = shared->slots[i];
        const Layout layout = slot.shape.layout(slot.name);
        const uint64_t last = slot.state.last.load(std::memory_order_acquire);
        const int64 last_tick_ms = layout.ms_of_tick(int64(layout.packed_tick(last)));
        const bool issued = last != 0;
        Datum values[11] = {CStringGetTextDatum(slot.name),
                            issued ? TimestampTzGetDatum(timestamptz_of_unix_ms(last_tick_ms)) : (Datum)0,
                            Int64GetDatum(int64(layout.packed_sequence(last))),
                            Int64GetDatum(issued && last_tick_ms > now_ms ? last_tick_ms - now_ms : 0),
                            Int64GetDatum(int64(slot.state.waits.load())),
                            Int64GetDatum(int64(slot.state.ahead.load())),
                            Int64GetDatum(int64(slot.state.behind.load())),
                            mark,
                            floor,
                            BoolGetDatum(shared->state_unreadable),
                            BoolGetDatum(wal_logging())};
        bool nulls[11] = {false, !issued, !issued, false, false, false, false,
                          mark_ms == 0, floor_ms == 0, false, false};
        // An older install (1.1) asks for the first ten columns only:
        // tuplestore_putvalues() reads as many as its descriptor has.
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum)0;
}
