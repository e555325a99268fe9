// Eight-byte IDs in the layout of Lable's Java "uniqueid" library (SPEC 2.5):
//
//   byte:  0        1        2        3        4        5        6        7
//          TTTTTTTT TTTTTTTT TTTTTTTT TTTTTTTT TTTTTTTT TTSSSSSS GGGMGGGG GGGGCCCC
//
// T: 42-bit Unix ms; in spread mode the bit-reversed 64-bit timestamp (Java's
// Long.reverse), in time_sequential mode the timestamp shifted left 22.
// S: 6-bit sequence. G: 11-bit generator id (top 3 bits first). M: mode.
// C: 4-bit cluster id.
#pragma once

#include <cstdint>

#include "core/layout.hpp"
#include "core/status.hpp"

namespace shardid {

enum class EightMode : uint8_t { spread = 0, time_sequential = 1 };

constexpr int64_t eight_time_max = (int64_t(1) << 42) - 1;  // until 2109
constexpr uint32_t eight_sequence_max = 63;
constexpr uint32_t eight_generator_max = 2047;
constexpr uint32_t eight_cluster_max = 15;

struct EightParts {
    int64_t unix_ms;
    uint32_t sequence;
    uint32_t generator_id;
    uint32_t cluster_id;
    EightMode mode;
};

// The engine's view of eight-byte generation: 42 bits of ms | 11-bit
// generator | 6-bit sequence, 64 IDs per ms per generator.
inline constexpr Layout eightbyte_layout =
    Layout::named("eight-byte id").epoch(0).unit(1).time(42).shard(11).sequence(6);

constexpr uint64_t bit_reverse(uint64_t v)
{
    v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
    v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
    v = ((v >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((v & 0x0F0F0F0F0F0F0F0Full) << 4);
    v = ((v >> 8) & 0x00FF00FF00FF00FFull) | ((v & 0x00FF00FF00FF00FFull) << 8);
    v = ((v >> 16) & 0x0000FFFF0000FFFFull) | ((v & 0x0000FFFF0000FFFFull) << 16);
    return (v >> 32) | (v << 32);
}

// The 8 bytes read as a big-endian 64-bit word.
constexpr uint64_t eight_word(const EightParts& p)
{
    const uint64_t t = p.mode == EightMode::spread ? bit_reverse(uint64_t(p.unix_ms)) : uint64_t(p.unix_ms) << 22;
    return (t & ~((uint64_t(1) << 22) - 1)) | (uint64_t(p.sequence) << 16) | (uint64_t(p.generator_id >> 8) << 13) |
           (uint64_t(p.mode) << 12) | (uint64_t(p.generator_id & 0xFF) << 4) | p.cluster_id;
}

constexpr EightParts eight_parts(uint64_t w)
{
    const EightMode mode = EightMode((w >> 12) & 1);
    const uint64_t t = w & ~((uint64_t(1) << 22) - 1);
    return EightParts{int64_t(mode == EightMode::spread ? bit_reverse(t) : t >> 22), uint32_t(w >> 16) & 63,
                      uint32_t(((w >> 13) & 7) << 8 | ((w >> 4) & 0xFF)), uint32_t(w) & 15, mode};
}

inline void eight_to_bytes(uint64_t w, uint8_t out[8])
{
    for (int i = 0; i < 8; i++)
        out[i] = uint8_t(w >> (56 - 8 * i));
}
inline uint64_t eight_from_bytes(const uint8_t in[8])
{
    uint64_t w = 0;
    for (int i = 0; i < 8; i++)
        w = (w << 8) | in[i];
    return w;
}

// Checks every field's range; fills *status on failure.
bool eight_check(const EightParts& p, int64_t sequence, int64_t generator_id, int64_t cluster_id, Status* status);

}  // namespace shardid
