// RFC 9562 UUIDv7 (SPEC 4b) on the generic engine.
//
// The engine's layout "UUIDv7" (Unix milliseconds | 12-bit counter, no shard
// field) gives a 60-bit word that is strictly increasing across every
// backend of the node and never below the node's persisted mark, like every
// layout. The UUID carries that word in unix_ts_ms (48 bits) and rand_a (12
// bits: RFC 9562 section 6.2, Method 1, a dedicated counter), then the
// version (7) and the variant (binary 10), and in rand_b's 62 bits a shard
// field of `shard_bits` at the top with random bits below:
//
//   0               48   52           64 66                         128
//   | unix_ts_ms (48) |0111| counter(12) |10| shard (w) | random (62-w) |
//
// UUIDs compare bytewise (PostgreSQL's uuid type does), so the order of a
// node's UUIDs is the order of their words; the shard and random bits never
// decide between two UUIDs of one node.
#pragma once

#include <cstdint>

#include "core/layout.hpp"
#include "core/status.hpp"

namespace shardid {

inline constexpr Layout uuidv7_layout = Layout::named("UUIDv7").epoch(0).unit(1).time(48).shard(0).sequence(12);

// The widest shard field rand_b may hold: 32 bits leave 30 random bits.
inline constexpr unsigned uuidv7_max_shard_bits = 32;
// The last Unix millisecond unix_ts_ms can hold (in the year 10889).
inline constexpr int64_t uuidv7_max_ms = (int64_t(1) << 48) - 1;

struct Uuid {
    uint8_t bytes[16];
};

struct Uuidv7Fields {
    int64_t unix_ms;   // unix_ts_ms
    uint32_t counter;  // rand_a
    uint64_t shard;    // the top shard_bits of rand_b
};

// The UUID of an engine word, a shard (already checked to fit shard_bits)
// and random bits (only the low 62 - shard_bits are used).
Uuid uuidv7_compose(uint64_t word, unsigned shard_bits, uint64_t shard, uint64_t random);

// The fields of a version 7, variant 10 UUID; fails (invalid_parameter) for
// any other version or variant, and for a shard width above the maximum.
bool uuidv7_decode(const Uuid& u, unsigned shard_bits, Uuidv7Fields* out, Status* status);

// The smallest UUIDv7 of a Unix millisecond (counter and rand_b zero): the
// bound for range scans and partitions. Fails (out_of_range) before 1970 and
// after uuidv7_max_ms.
bool uuidv7_min(int64_t unix_ms, Uuid* out, Status* status);

// The UUIDs (version 7 or not) whose unix_ts_ms lies within a time range, as
// one inclusive range [*lo, *hi] of the uuid order: whole milliseconds, a
// superset to be rechecked against the exact times. Empty: *lo > *hi.
// has_lower/has_upper false: unbounded on that side.
void uuidv7_range(bool has_lower, int64_t lower_ms, bool has_upper, int64_t upper_ms, Uuid* lo, Uuid* hi);

// A shard field's width: 0..uuidv7_max_shard_bits (invalid_parameter otherwise).
bool uuidv7_check_width(int64_t shard_bits, Status* status);

// The layout a UUIDv7's shard must fit: "UUIDv7" with a shard field
// `shard_bits` wide (at most uuidv7_max_shard_bits). Its word never holds
// the shard, which travels in rand_b.
const Layout& uuidv7_shard_fit(unsigned shard_bits);

// check_shard() against such a layout, in a UUIDv7's words (a width of 0
// has no shard field at all); `what` names the shard's source.
bool uuidv7_check_shard(const Layout& fit, int64_t shard, const char* what, Status* status);

}  // namespace shardid
