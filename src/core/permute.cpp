#include "core/permute.hpp"

#include <initializer_list>

namespace shardid {

namespace {

constexpr int rounds = 4;  // Luby-Rackoff: four rounds of a PRF give a strong PRP

constexpr uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline void sipround(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3)
{
    v0 += v1;
    v1 = rotl(v1, 13);
    v1 ^= v0;
    v0 = rotl(v0, 32);
    v2 += v3;
    v3 = rotl(v3, 16);
    v3 ^= v2;
    v0 += v3;
    v3 = rotl(v3, 21);
    v3 ^= v0;
    v2 += v1;
    v1 = rotl(v1, 17);
    v1 ^= v2;
    v2 = rotl(v2, 32);
}

// The round function: the low `half` bits of SipHash(key, x, round).
inline uint64_t round_fn(const PermutationKey& key, uint64_t x, int round, int half)
{
    return siphash24(key, x, uint64_t(round) | (uint64_t(half) << 8)) & ((uint64_t(1) << half) - 1);
}

// One pass of the Feistel network over 2 * half bits.
uint64_t feistel(const PermutationKey& key, uint64_t v, int half, bool inverse)
{
    const uint64_t mask = (uint64_t(1) << half) - 1;
    uint64_t left = v >> half, right = v & mask;
    if (!inverse) {
        for (int r = 0; r < rounds; r++) {
            const uint64_t next = left ^ round_fn(key, right, r, half);
            left = right;
            right = next;
        }
    } else {
        for (int r = rounds - 1; r >= 0; r--) {
            const uint64_t prev = right ^ round_fn(key, left, r, half);
            right = left;
            left = prev;
        }
    }
    return (left << half) | right;
}

uint64_t walk(const PermutationKey& key, uint64_t value, int bits, bool inverse)
{
    const int half = (bits + 1) / 2;
    const uint64_t top = uint64_t(1) << bits;  // exclusive
    // Cycle walking: apply the permutation of the larger power-of-two
    // domain until the value falls in 1 .. 2^bits - 1 again.
    do
        value = feistel(key, value, half, inverse);
    while (value == 0 || value >= top);
    return value;
}

}  // namespace

PermutationKey PermutationKey::from_bytes(const uint8_t b[16])
{
    PermutationKey k{0, 0};
    for (int i = 7; i >= 0; i--) {
        k.k0 = (k.k0 << 8) | b[i];
        k.k1 = (k.k1 << 8) | b[8 + i];
    }
    return k;
}

uint64_t siphash24(const PermutationKey& key, uint64_t m0, uint64_t m1)
{
    uint64_t v0 = 0x736f6d6570736575ull ^ key.k0, v1 = 0x646f72616e646f6dull ^ key.k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ key.k0, v3 = 0x7465646279746573ull ^ key.k1;
    for (uint64_t m : {m0, m1}) {
        v3 ^= m;
        sipround(v0, v1, v2, v3);
        sipround(v0, v1, v2, v3);
        v0 ^= m;
    }
    const uint64_t last = uint64_t(16) << 56;  // message length 16, no tail bytes
    v3 ^= last;
    sipround(v0, v1, v2, v3);
    sipround(v0, v1, v2, v3);
    v0 ^= last;
    v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        sipround(v0, v1, v2, v3);
    return v0 ^ v1 ^ v2 ^ v3;
}

bool permute_check(int64_t value, int bits, Status* status)
{
    if (bits < permute_bits_min || bits > permute_bits_max) {
        *status = Status::fail(Error::invalid_parameter, "domain_bits must be between %d and %d, not %d",
                               permute_bits_min, permute_bits_max, bits)
                      .with_hint("Use 63 for any positive bigint, or 53 for values JavaScript holds exactly.");
        return false;
    }
    if (value < 1 || uint64_t(value) >= (uint64_t(1) << bits)) {
        *status = Status::fail(Error::out_of_range, "value %lld is outside the %d-bit domain 1..%llu", (long long)value,
                               bits, (unsigned long long)((uint64_t(1) << bits) - 1));
        return false;
    }
    return true;
}

uint64_t permute_forward(const PermutationKey& key, uint64_t value, int bits) { return walk(key, value, bits, false); }
uint64_t permute_inverse(const PermutationKey& key, uint64_t value, int bits) { return walk(key, value, bits, true); }

}  // namespace shardid
