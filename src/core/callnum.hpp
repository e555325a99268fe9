// Short public call numbers (SPEC 2.6): 47 bits, most significant first
// version (3) | run_id (30) | sequence (14), stably shuffled by a bit
// permutation derived from a key, then written as 8 base62 characters.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"

namespace shardid {

constexpr int call_bits = 47;
constexpr int call_chars = 8;  // 62^8 > 2^47
constexpr uint32_t call_version_max = 7;
constexpr uint32_t call_run_max = (1u << 30) - 1;
constexpr uint32_t call_sequence_max = (1u << 14) - 1;

struct CallParts {
    uint32_t version;
    uint32_t run_id;
    uint32_t sequence;
};

constexpr uint64_t call_pack(CallParts p)
{
    return (uint64_t(p.version) << 44) | (uint64_t(p.run_id) << 14) | p.sequence;
}
constexpr CallParts call_unpack(uint64_t v)
{
    return CallParts{uint32_t(v >> 44) & call_version_max, uint32_t(v >> 14) & call_run_max,
                     uint32_t(v) & call_sequence_max};
}

// A fixed permutation of the 47 bit positions, the same for the same key.
struct BitShuffle {
    uint8_t to[call_bits];    // bit i of the input goes to bit to[i]
    uint8_t from[call_bits];  // the inverse

    static BitShuffle from_key(const char* key, size_t len);
    uint64_t apply(uint64_t v) const;
    uint64_t invert(uint64_t v) const;
};

// The call number of those parts, shuffled and encoded (9 bytes with NUL).
bool call_number_compose(const BitShuffle& shuffle, int64_t version, int64_t run_id, int64_t sequence,
                         char out[call_chars + 1], Status* status);

// Undoes call_number_compose; anything else is invalid_text.
bool call_number_decode(const BitShuffle& shuffle, const char* text, size_t len, CallParts* out, Status* status);

}  // namespace shardid
