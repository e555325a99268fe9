// The generation loop (src/pg/generate/generate.hpp): the node-id source, the core
// engine and the persistence, each once per ID.
#include "pg/generate/generate.hpp"

#include <algorithm>

extern "C" {
#include "miscadmin.h"
#include "storage/latch.h"
}

#include "core/schemes.hpp"
#include "pg/base/fence_clock.hpp"
#include "pg/base/guard.hpp"
#include "pg/source/node_source.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/lineage.hpp"
#include "pg/state/shared.hpp"
#include "pg/state/shmem.hpp"
#include "pg/base/wait_event.hpp"
#include "pg/state/wal.hpp"

namespace shardid::pg {

namespace {

uint32 next_tick_event = 0;  // the wait event of a backend waiting for the next tick

// A wait for the next tick that the clock did not begin: longer than
// shardid.etcd_wait.
Status next_tick_too_far(const Layout& layout, const LatchClock& clock)
{
    const int64_t in_ms = clock.wanted_ms - clock.now_ms();
    return Status::fail(Error::wait_exceeded, "the next ID of layout %s comes in its next tick, in %.1f s", layout.name,
                        double(in_ms) / 1000)
        .with_detail(
            "The layout's tick in progress is used up: by this node's IDs, or by another holder's of the "
            "shard, which a claim continues above (a layout whose ticks are longer than a second continues "
            "in the tick after its previous holder's, or after the tick in which etcd's history settled). "
            "With node ids from etcd no generator waits longer than shardid.etcd_wait (%d ms; a second at least).",
            etcd_wait_ms)
        .with_hint("Try again once the next tick has begun (%s), raise shardid.etcd_wait, or use a layout with "
                   "shorter ticks.",
                   utc_text(clock.wanted_ms).text);
}

}  // namespace

Datum generate(FunctionCallInfo fcinfo, const Layout& layout, SlotState*& slot_cache, ShardFrom shard_from)
{
    PG_RETURN_INT64(int64(generate_raw(fcinfo, layout, slot_cache, shard_from)));
}

uint64_t generate_raw(FunctionCallInfo fcinfo, const Layout& layout, SlotState*& slot_cache, ShardFrom shard_from,
                      OuterShard outer)
{
    refuse_on_standby();
    if (slot_cache == nullptr)
        slot_cache = slot_for(layout);
    // The node continues every history this database's IDs came from.
    confirm_history(fcinfo);
    SlotState& slot = *slot_cache;
    const NodeIdSource& source = node_id_source();
    // The layout whose shard field the shard must fit, and the check of a
    // shard given as an argument (UUIDv7 words its own).
    const Layout& fit = outer.fit ? *outer.fit : layout;
    const ShardCheck check = outer.check ? outer.check : check_shard;
    const bool shard_given = shard_from.source == ShardFrom::Source::argument && !PG_ARGISNULL(shard_from.argno);
    const bool from_node = shard_from.source == ShardFrom::Source::node_id ||
                           (shard_from.source == ShardFrom::Source::argument && !shard_given);
    const int32 shard = shard_given ? PG_GETARG_INT32(shard_from.argno) : 0;
    const bool coarse = layout.unit_ms >= 1000 && SystemClock::coarse_suits(layout.unit_ms);
    // Resolved here, outside guarded(): making it can ereport (PostgreSQL 17).
    const uint32 tick_wait = wait_event("ShardidNextTick", &next_tick_event);

    const bool shaped = source.shapes_generation();
    if (shaped)
        source.prepare(shard_given || from_node);
    TimestampTz waiting_since = 0;  // for the node-id source (0: not waiting)
    // A wait for the next tick as the source bounds it.
    LatchClock clock{{clock_offset_ms, coarse},
                     tick_wait,
                     shaped ? source.next_tick_wait_ms() : 0,
                     shaped && source.reads_fence_clock() && !coarse};
    for (;;) {
        source.refresh();
        Status status;
        uint64_t id = 0, word = 0;
        SourceTicket ticket;
        int64_t tick_ms = 0;
        clear_claim_refusal();
        const bool ok = guarded(status, [&] {
            uint64_t field = 0;
            if (!source.hold(&ticket, &status))
                return false;
            if (shard_given) {
                if (!check(fit, shard, "shard", &status))
                    return false;
                field = uint64_t(shard);
            } else if (from_node && !source.node_id(fit, ticket, &field, &status)) {
                return false;
            }
            // The value written into the shard field is this node's to
            // write: declared (shardid.shards), and with etcd held.
            if ((shard_given || from_node) &&
                !source.hold_value(slot_cache, layout, field, shard_given, &ticket, &status))
                return false;
            if (outer.fit) {
                *outer.shard = field;
                field = 0;
            }
            clock.wanted_ms = 0;
            if (next_id(layout, slot, clock, max_clock_lead_ms, field, &id, &status, &tick_ms, &word))
                return true;
            if (clock.wanted_ms != 0)
                status = next_tick_too_far(layout, clock);
            return false;
        });
        if (ok) {
            // Never hand out an ID the persisted node state does not cover,
            // nor one the source no longer vouches for (with the fence
            // clock's reading of the ID, unless covering it took time).
            const bool slow = cover_issued(slot_cache, layout, word, tick_ms);
            ticket.word = word;
            ticket.fence_read_ms = clock.through_fence && !slow ? clock.fence_read_ms : 0;
            if (source.confirm(ticket, tick_ms, &status)) {
                if (waiting_since != 0)
                    source.waited();
                return id;
            }
        }
        if (status.error == Error::not_claimed) {
            // Outside C++ scope: waits a little (interruptibly), or raises
            // once the source's bound has passed.
            if (waiting_since == 0)
                waiting_since = GetCurrentTimestamp();
            source.wait(waiting_since, status);
            continue;
        }
        if (status.error != Error::interrupted) {
            source.explain(&status);
            count_claim_refusal();
            if (status.error == Error::clock_lead_exceeded)
                count_generation_refusal(GenerationRefusal::clock_lead);
            else if (status.error == Error::not_configured)
                count_generation_refusal(GenerationRefusal::misconfigured);
            raise(status);
        }
        // A wait for the next tick was given up for an interrupt: serve it
        // here, outside C++ scope (cancel and terminate do not return), then
        // try again.
        CHECK_FOR_INTERRUPTS();
    }
}

int64_t LatchClock::now_ms() const
{
    if (!through_fence)
        return SystemClock::now_ms();
    // Per backend: the wall clock's offset to the fence clock, and when it
    // was read (fence clock ms).
    static int64_t offset = 0, offset_at = -1;
    fence_read_ms = fence_clock_ms();
    if (offset_at < 0 || fence_read_ms - offset_at >= 10 || fence_read_ms < offset_at) {
        offset = SystemClock::now_ms() - fence_read_ms;
        offset_at = fence_read_ms;
    }
    return fence_read_ms + offset;
}

bool LatchClock::pause(int64_t ms_left) const
{
    if (INTERRUPTS_PENDING_CONDITION() && INTERRUPTS_CAN_BE_PROCESSED())
        return false;
    if (max_wait_ms > 0 && ms_left > max_wait_ms) {
        wanted_ms = SystemClock::now_ms() + ms_left;
        return false;
    }
    if (ms_left > 1) {
        const int rc =
            WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, long(ms_left - 1), wait_event);
        if (rc & WL_LATCH_SET)
            ResetLatch(MyLatch);
    }
    // The last millisecond is spun through, so millisecond layouts reach
    // their cap; an interrupt still ends the spin.
    return !(INTERRUPTS_PENDING_CONDITION() && INTERRUPTS_CAN_BE_PROCESSED());
}

}  // namespace shardid::pg
