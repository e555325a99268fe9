// Layouts and their shapes: how a "time | shard | sequence" ID is cut into bits.
//
//   bit 63 | time_bits | shard_bits | sequence_bits      (most significant first)
//   0      | tick      | shard      | sequence
//
// tick counts time units of unit_ms since epoch_ms (Unix milliseconds). A
// wrapping layout (TraceId) keeps only the low time_bits of the tick; any
// other layout refuses ticks that do not fit. Every scheme of shardid that is
// ordered by time is one Layout value; the engine knows nothing else.
#pragma once

#include <cstdint>

#include "core/status.hpp"

namespace shardid {

struct Fields {
    uint64_t tick;  // the time field as stored (wrapped for wrapping layouts)
    uint64_t shard;
    uint64_t sequence;
};

// Every ID is a positive bigint: at most 63 bits, bit 63 always 0.
constexpr unsigned max_id_bits = 63;
// The longest name of a layout or key, in bytes: PostgreSQL's identifier
// length (names are also stored in the node state and in messages).
constexpr int max_name_len = 63;
// A field width a layout may have, before the rules of Layout::validate().
constexpr bool field_width_fits(long long bits) { return bits >= 0 && bits <= max_id_bits; }

// Division rounding toward minus infinity (times before 1970, or before an
// epoch, fall into the tick or second that contains them).
constexpr int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
// The matching remainder, in 0..b-1.
constexpr int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

// A layout's shape: the epoch, the tick length and the three widths, with
// all the arithmetic on them. Two layouts of the same shape share node state
// (the name is for people only); shapes live in shared memory and in the
// persisted node state (src/core/state/node_state.hpp), so they hold no pointer.
struct Layout;
struct Shape {
    int64_t epoch_ms = 0;  // Unix milliseconds of tick 0
    int64_t unit_ms = 1;   // length of one tick, >= 1
    uint8_t time_bits = 0;
    uint8_t shard_bits = 0;
    uint8_t sequence_bits = 0;
    bool wraps = false;          // time field holds tick modulo 2^time_bits
    uint8_t sequence_first = 0;  // first sequence value of a tick (0, or 1 for TraceId)

    // A layout's shape (a Layout is a Shape with a name).
    static constexpr Shape of(const Shape& s) { return s; }
    // The layout of this shape, named `name` (which must outlive it).
    constexpr Layout layout(const char* name) const;

    static constexpr uint64_t mask(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }

    constexpr uint64_t time_max() const { return mask(time_bits); }
    constexpr uint64_t shard_max() const { return mask(shard_bits); }
    constexpr uint64_t sequence_max() const { return mask(sequence_bits); }
    constexpr unsigned total_bits() const { return time_bits + shard_bits + sequence_bits; }

    // Assumes tick, shard and sequence have been checked against their fields
    // (a wrapping layout's tick is masked here).
    constexpr uint64_t compose(uint64_t tick, uint64_t shard, uint64_t sequence) const
    {
        const uint64_t t = wraps ? (tick & time_max()) : tick;
        return (t << (shard_bits + sequence_bits)) | (shard << sequence_bits) | sequence;
    }

    constexpr Fields decompose(uint64_t id) const
    {
        return Fields{(id >> (shard_bits + sequence_bits)) & time_max(), (id >> sequence_bits) & shard_max(),
                      id & sequence_max()};
    }

    // The tick that contains Unix millisecond `ms` (floor division, so
    // instants before the epoch give negative ticks).
    constexpr int64_t tick_of(int64_t ms) const
    {
        const int64_t d = ms - epoch_ms;
        if (d >= 0) {
            // The common units by constant division (a multiply), not a
            // runtime 64-bit divide on the hot path.
            if (unit_ms == 1)
                return d;
            if (unit_ms == 1000)
                return d / 1000;
            return d / unit_ms;
        }
        return floor_div(d, unit_ms);
    }
    constexpr int64_t ms_of_tick(int64_t tick) const { return epoch_ms + tick * unit_ms; }

    // The engine's packed state word: (tick << sequence_bits) | sequence.
    constexpr uint64_t pack(uint64_t tick, uint64_t sequence) const { return (tick << sequence_bits) | sequence; }
    constexpr uint64_t packed_tick(uint64_t word) const { return word >> sequence_bits; }
    constexpr uint64_t packed_sequence(uint64_t word) const { return word & sequence_max(); }

    constexpr bool operator==(const Shape& o) const
    {
        return epoch_ms == o.epoch_ms && unit_ms == o.unit_ms && time_bits == o.time_bits &&
               shard_bits == o.shard_bits && sequence_bits == o.sequence_bits && sequence_first == o.sequence_first &&
               wraps == o.wraps;
    }
    constexpr bool operator!=(const Shape& o) const { return !(*this == o); }
};

// A layout: a shape and the name messages and people use ("snowflake").
// Every time-ordered scheme is one Layout value; the engine knows nothing else.
struct Layout : Shape {
    const char* name = "";

    // Named construction, for presets and tests (C++17 has no designated
    // initializers): Layout::named("x").epoch(e).unit(1).time(41).shard(10).sequence(12).
    static constexpr Layout named(const char* n)
    {
        Layout l{};
        l.name = n;
        return l;
    }
    // One line a field, as the table they are.
    // clang-format off
    constexpr Layout epoch(int64_t ms) const { Layout l = *this; l.epoch_ms = ms; return l; }
    constexpr Layout unit(int64_t ms) const { Layout l = *this; l.unit_ms = ms; return l; }
    constexpr Layout time(unsigned bits) const { Layout l = *this; l.time_bits = uint8_t(bits); return l; }
    constexpr Layout shard(unsigned bits) const { Layout l = *this; l.shard_bits = uint8_t(bits); return l; }
    constexpr Layout sequence(unsigned bits) const { Layout l = *this; l.sequence_bits = uint8_t(bits); return l; }
    constexpr Layout wrapping() const { Layout l = *this; l.wraps = true; return l; }
    constexpr Layout first_sequence(unsigned f) const { Layout l = *this; l.sequence_first = uint8_t(f); return l; }
    // clang-format on

    // Is the layout well formed? (widths, unit, room for the packed state)
    Status validate() const;
};

constexpr Layout Shape::layout(const char* name) const
{
    Layout l{};
    static_cast<Shape&>(l) = *this;
    l.name = name;
    return l;
}

}  // namespace shardid
