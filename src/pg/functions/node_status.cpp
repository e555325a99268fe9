// shardid_status(): one row per layout slot in use on this node.
#include "core/clock.hpp"
#include "pg/base/pg.hpp"
#include "pg/base/row.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/shared.hpp"
#include "pg/base/timeconv.hpp"
#include "pg/state/wal.hpp"

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
        Row<11> row;
        row.add(CStringGetTextDatum(slot.name));
        issued ? row.add(TimestampTzGetDatum(timestamptz_of_unix_ms(last_tick_ms))) : row.add_null();
        issued ? row.add(Int64GetDatum(int64(layout.packed_sequence(last)))) : row.add_null();
        row.add(Int64GetDatum(issued && last_tick_ms > now_ms ? last_tick_ms - now_ms : 0));
        row.add(Int64GetDatum(int64(slot.state.waits.load())));
        row.add(Int64GetDatum(int64(slot.state.ahead.load())));
        row.add(Int64GetDatum(int64(slot.state.behind.load())));
        mark_ms != 0 ? row.add(mark) : row.add_null();
        floor_ms != 0 ? row.add(floor) : row.add_null();
        row.add(BoolGetDatum(shared->state_unreadable));
        row.add(BoolGetDatum(wal_logging()));
        // An older install (1.1) asks for the first ten columns only.
        put_row(fcinfo, row, 10);
    }
    return (Datum)0;
}
