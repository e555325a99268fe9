// The generator engine: one node-wide state word per layout, advanced with a
// single compare-and-swap, so that every ID a node issues for a layout is
// larger than every one it issued before, whichever backend asks.
//
// Rules (SPEC section 1):
//  - the wall clock is ahead of the last tick: start that tick at sequence_first;
//  - otherwise (same tick, or the clock stepped back): next sequence of the
//    last tick, so the logical clock never goes back;
//  - sequence used up and the wall clock is in that tick: wait for the next
//    (the clock's pause() may give up: then the call fails as interrupted);
//  - sequence used up and the wall clock is behind (it stepped back): move the
//    logical clock one tick ahead, unless it would then lead the wall clock
//    by more than max_lead_ms, which is an error.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/layout.hpp"
#include "core/status.hpp"
#include "core/utc.hpp"

namespace shardid {

// Lives in shared memory: plain atomics, no pointers, no constructors needed
// beyond zero bytes.
struct alignas(64) SlotState {
    std::atomic<uint64_t> last;    // Layout::pack(tick, sequence) of the last ID issued
    std::atomic<uint64_t> waits;   // times a caller waited for the next tick
    std::atomic<uint64_t> ahead;   // ticks the logical clock was moved ahead of a wall clock that stepped back
    std::atomic<uint64_t> behind;  // IDs issued two or more ticks ahead of the caller's wall clock
};
static_assert(std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free to be shared between processes");

// Waits until the clock reaches `tick`, or returns early if it falls behind
// `from` (it stepped back: the caller then moves the logical clock instead).
// Returns false when the clock's pause() gives up (the PostgreSQL glue's
// clock does so when the backend has an interrupt to serve).
template <class Clock>
bool wait_for_tick(const Layout& layout, Clock& clock, int64_t tick, int64_t from)
{
    for (;;) {
        const int64_t now = clock.now_ms();
        const int64_t wall = layout.tick_of(now);
        if (wall >= tick || wall < from)
            return true;
        if (!clock.pause(layout.ms_of_tick(tick) - now))
            return false;
    }
}

// After a restart: continue as if every tick up to the one containing
// floor_ms (the persisted high-water mark) were used up, so no ID issued
// before the restart can come again, whatever the wall clock says now.
inline void resume_above(const Layout& layout, SlotState& slot, int64_t floor_ms)
{
    const int64_t tick = layout.tick_of(floor_ms);
    if (tick >= 0)
        slot.last.store(layout.pack(uint64_t(tick), layout.sequence_max()), std::memory_order_relaxed);
}

// Raises an atomic to at least `value`; never lowers it.
template <class T>
inline void raise_to(std::atomic<T>& a, T value)
{
    T cur = a.load(std::memory_order_acquire);
    while (cur < value && !a.compare_exchange_weak(cur, value, std::memory_order_acq_rel))
        ;
}

// For a slot of a shape that has no mark of its own: every ID the shape
// ever issued on this node lies in a tick that ends at or before end_ms (the
// node state's retired floor), so continue as if every such tick were used
// up. Unlike resume_above(), the tick that contains end_ms stays free: a
// coarse layout first used after a restart does not wait for its next tick.
inline void resume_after(const Layout& layout, SlotState& slot, int64_t end_ms)
{
    const int64_t tick = layout.tick_of(end_ms) - 1;
    if (tick >= 0)
        raise_to(slot.last, layout.pack(uint64_t(tick), layout.sequence_max()));
}

// Raises the slot's last issued word to at least `word` (a replayed mark:
// never lowers it).
inline void raise_last(SlotState& slot, uint64_t word) { raise_to(slot.last, word); }

// Raises the slot so that every later ID of `layout`, whatever its shard,
// sorts above `id`: the highest ID of a logical shard that moves to this
// node from another, whose clock may be ahead of this one's. Refused when
// that would make the logical clock lead the wall clock (now_ms) by more
// than max_lead_ms, for IDs outside the layout, and for layouts whose time
// field wraps (their IDs do not sort by time). On success *tick_ms is the
// Unix ms at which the ID's tick starts and *word the raised word (for the
// persisted node state); the slot never goes down.
inline bool advance_past(const Layout& layout, SlotState& slot, int64_t id, int64_t now_ms, int64_t max_lead_ms,
                         Status* status, int64_t* tick_ms, uint64_t* word)
{
    if (layout.wraps) {
        *status = Status::fail(Error::invalid_parameter, "%s IDs cannot be advanced past", layout.name)
                      .with_detail("Its time field wraps around, so its IDs do not sort by time.");
        return false;
    }
    if (id < 0 || (layout.total_bits() < 64 && (uint64_t(id) >> layout.total_bits()) != 0)) {
        *status =
            Status::fail(Error::out_of_range, "%lld is not an ID of the %s layout", (long long)id, layout.name)
                .with_detail("A %s ID is a non-negative number of at most %u bits.", layout.name, layout.total_bits());
        return false;
    }
    const Fields f = layout.decompose(uint64_t(id));
    const int64_t start_ms = layout.ms_of_tick(int64_t(f.tick));
    const int64_t lead_ms = start_ms - now_ms;
    if (lead_ms > max_lead_ms) {
        *status = Status::fail(Error::clock_lead_exceeded,
                               "advancing %s past ID %lld would make its logical clock lead the wall clock by %lld ms",
                               layout.name, (long long)id, (long long)lead_ms)
                      .with_detail("shardid.max_clock_lead is %lld ms.", (long long)max_lead_ms)
                      .with_hint("Wait until this node's clock is within shardid.max_clock_lead of the ID's time, "
                                 "or raise shardid.max_clock_lead.");
        return false;
    }
    // The whole tick counts as used, not just the pair (tick, sequence):
    // the next ID is in a later tick, so it sorts above the given one
    // whatever either's shard is.
    *word = layout.pack(f.tick, layout.sequence_max());
    *tick_ms = start_ms;
    raise_last(slot, *word);
    return true;
}

// Issues the next ID of `layout` for `shard` (already checked against the
// shard field), and the Unix ms at which its tick starts (for the
// high-water mark). On failure fills *status and returns false.
template <class Clock>
bool next_id(const Layout& layout, SlotState& slot, Clock& clock, int64_t max_lead_ms, uint64_t shard, uint64_t* id,
             Status* status, int64_t* tick_ms = nullptr, uint64_t* word_out = nullptr)
{
    const uint64_t sequence_max = layout.sequence_max();
    uint64_t last = slot.last.load(std::memory_order_acquire);
    int64_t now = clock.now_ms();
    for (;;) {
        const int64_t wall = layout.tick_of(now);
        if (wall < 0) {
            *status = Status::fail(Error::out_of_range, "the clock is before the %s epoch", layout.name)
                          .with_detail("The wall clock reads %lld ms since the Unix epoch; the layout starts at %lld.",
                                       (long long)now, (long long)layout.epoch_ms)
                          .with_hint("Check the server clock and shardid.clock_offset_ms.");
            return false;
        }
        const uint64_t last_tick = layout.packed_tick(last);
        const uint64_t last_sequence = layout.packed_sequence(last);
        uint64_t tick, sequence;
        bool moved_ahead = false;
        if (uint64_t(wall) > last_tick) {
            tick = uint64_t(wall);
            sequence = layout.sequence_first;
        } else if (last_sequence < sequence_max) {
            tick = last_tick;
            sequence = last_sequence + 1;
        } else if (uint64_t(wall) == last_tick) {
            slot.waits.fetch_add(1, std::memory_order_relaxed);
            if (!wait_for_tick(layout, clock, wall + 1, wall)) {
                *status = Status::fail(Error::interrupted, "waiting for the next %s tick was interrupted", layout.name);
                return false;
            }
            last = slot.last.load(std::memory_order_acquire);
            now = clock.now_ms();
            continue;
        } else {
            tick = last_tick + 1;
            sequence = layout.sequence_first;
            moved_ahead = true;
            const int64_t lead_ms = layout.ms_of_tick(int64_t(tick)) - now;
            if (lead_ms > max_lead_ms) {
                *status =
                    Status::fail(Error::clock_lead_exceeded, "%s logical clock would lead the wall clock by %lld ms",
                                 layout.name, (long long)lead_ms)
                        .with_detail("The wall clock is behind the last issued ID (it stepped back) and the "
                                     "sequence of that tick is used up; shardid.max_clock_lead is %lld ms.",
                                     (long long)max_lead_ms)
                        .with_hint("Wait for the wall clock to catch up, or raise shardid.max_clock_lead.");
                return false;
            }
        }
        if (!layout.wraps && tick > layout.time_max()) {
            const int64_t end_ms = layout.ms_of_tick(int64_t(layout.time_max()) + 1);
            *status = Status::fail(Error::time_exhausted, "the %s layout has run out of time", layout.name)
                          .with_detail("Its %u-bit time field ended at %s (%lld ms after the Unix epoch).",
                                       unsigned(layout.time_bits), utc_text(end_ms).text, (long long)end_ms)
                          .with_hint("Make new IDs with a layout of more time bits or a longer time unit "
                                     "(create_layout()).");
            return false;
        }
        const uint64_t word = layout.pack(tick, sequence);
        // seq_cst: a caller that then loads what says whether the ID may be
        // returned (a claim's generation, seq_cst) needs no fence between
        // the two (the glue's etcd source); on x86 the same instruction.
        if (slot.last.compare_exchange_weak(last, word, std::memory_order_seq_cst, std::memory_order_acquire)) {
            if (moved_ahead)
                slot.ahead.fetch_add(1, std::memory_order_relaxed);
            if (tick >= uint64_t(wall) + 2)
                slot.behind.fetch_add(1, std::memory_order_relaxed);
            *id = layout.compose(tick, shard, sequence);
            if (tick_ms)
                *tick_ms = layout.ms_of_tick(int64_t(tick));
            if (word_out)
                *word_out = word;
            return true;
        }
        // Another backend got there first; `last` now holds its word. Its
        // tick is ours (contention within a tick, the common case): retry
        // with the same clock reading. A newer tick: read the clock again,
        // so a stale reading never looks like a clock that stepped back.
        if (layout.packed_tick(last) > uint64_t(wall))
            now = clock.now_ms();
    }
}

}  // namespace shardid
