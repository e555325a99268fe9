// The lease arithmetic of the persisted node state: when the durable marks
// must move, to where, and which WAL record covers an ID. Pure: the glue
// (src/pg/state/persist.cpp) holds the locks, writes the file and the WAL record,
// and asks these functions what to do; test/unit/lease_test.cpp drives them
// with a fake clock.
//
// Two kinds of mark bound what a node issued:
//   - the node's time mark (NodeState::mark_ms): every issued tick starts
//     before it. It is written `time_lease_ms` ahead of the tick in use and
//     renewed once half of that is used.
//   - a coarse layout's own mark (LayoutMark::word): every issued packed
//     (tick, sequence) word is at most it. Layouts whose tick is longer than
//     the lease keep one, written a sixteenth of a tick's sequences ahead
//     (never past the end of the tick) and renewed once half of that is
//     used, so that a restart resumes within the tick.
//
// Either renewal is done early (Renewal::early), by whoever gets the state
// lock first and without making anybody wait, while the ID at hand is still
// covered; a generator waits for the lock (Renewal::must) only when its ID
// is not.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/layout.hpp"

namespace shardid::lease {

// How far ahead of the tick in use the node's time mark is written.
constexpr int64_t time_lease_ms = 1000;

// Layouts whose ticks are longer than the time lease keep marks of their own.
constexpr bool is_coarse(int64_t unit_ms) { return unit_ms > time_lease_ms; }

// What a generator does about a mark before it returns an ID.
enum class Renewal {
    none,   // covered, and not yet half used: nothing
    early,  // covered, but half used: renew if the lock is free at once
    must,   // not covered: take the lock (waiting) and renew
};

// The node's time mark `until_ms`, for an ID in the tick starting at tick_ms.
constexpr Renewal time_renewal(int64_t tick_ms, int64_t until_ms)
{
    return tick_ms + time_lease_ms / 2 < until_ms ? Renewal::none : tick_ms < until_ms ? Renewal::early : Renewal::must;
}

// The new time mark for an ID in the tick starting at tick_ms.
constexpr int64_t time_target(int64_t tick_ms) { return tick_ms + time_lease_ms; }

// How many sequences of a coarse layout's tick its own mark runs ahead.
constexpr uint64_t word_lease(const Shape& layout) { return std::max<uint64_t>(1, (layout.sequence_max() + 1) / 16); }

// The new mark for `word`: a lease ahead, but never past the end of its tick.
constexpr uint64_t word_target(const Shape& layout, uint64_t word)
{
    const uint64_t tick_end = layout.pack(layout.packed_tick(word), layout.sequence_max());
    return std::min(tick_end, word + word_lease(layout));
}

// A coarse layout's mark `persisted` (0: none), for the packed word `word`.
// A mark that already reaches the end of the word's tick needs no renewal.
constexpr Renewal word_renewal(const Shape& layout, uint64_t word, uint64_t persisted)
{
    const uint64_t lease = word_lease(layout);
    return word <= persisted && (persisted - word > lease / 2 || word_target(layout, word) <= persisted) ? Renewal::none
           : word <= persisted ? Renewal::early
                               : Renewal::must;
}

// The Unix ms at which the tick of a mark's word ends: once the wall clock
// is past it, the mark is retired into the node's retired floor.
constexpr int64_t word_end_ms(const Shape& layout, uint64_t word)
{
    return layout.ms_of_tick(int64_t(layout.packed_tick(word)) + 1);
}

// Which record covers an ID of a fine layout in the tick starting at
// tick_ms: the record that set the current time mark, or the one before it
// (which set `prev_until_ms`) for the ticks below that older mark. The mark
// is renewed half a lease early, so an ID needs the newer, possibly not yet
// replicated record only once its tick reaches the older mark.
enum class Covering { previous, current };
constexpr Covering covering_record(int64_t tick_ms, int64_t prev_until_ms)
{
    return tick_ms < prev_until_ms ? Covering::previous : Covering::current;
}

}  // namespace shardid::lease
