// Keyed, reversible permutations of 1 .. 2^bits - 1 (SPEC 2.7): a Feistel
// network over 2 * ceil(bits / 2) bits, SipHash-2-4 as its keyed round
// function, and cycle walking to stay inside the domain. It hides order and
// volume; it is not encryption (the permutation of a small domain can be
// learned from enough (input, output) pairs).
#pragma once

#include <cstdint>

#include "core/status.hpp"

namespace shardid {

struct PermutationKey {
    uint64_t k0, k1;  // 128 bits

    // From 16 bytes, little-endian words (the key ring's bytea).
    static PermutationKey from_bytes(const uint8_t bytes[16]);
};

uint64_t siphash24(const PermutationKey& key, uint64_t m0, uint64_t m1);

constexpr int permute_bits_min = 8;
constexpr int permute_bits_max = 63;

// Checks that bits is supported and value lies in 1 .. 2^bits - 1.
bool permute_check(int64_t value, int bits, Status* status);

// The permutation and its inverse; value must pass permute_check.
uint64_t permute_forward(const PermutationKey& key, uint64_t value, int bits);
uint64_t permute_inverse(const PermutationKey& key, uint64_t value, int bits);

}  // namespace shardid
