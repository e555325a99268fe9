// Keyed permutations: SipHash reference vector, bijectivity on whole small
// domains, round trips on large ones, unrelated permutations for other keys.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/permute.hpp"

using namespace shardid;

namespace {
PermutationKey key_of(uint64_t a, uint64_t b) { return PermutationKey{a, b}; }
}  // namespace

// A plain, byte-wise SipHash-2-4 from its specification, to check the
// core's 16-byte specialization against.
uint64_t reference_siphash(uint64_t k0, uint64_t k1, const uint8_t* m, size_t len)
{
    auto rotl = [](uint64_t x, int b) { return (x << b) | (x >> (64 - b)); };
    uint64_t v0 = 0x736f6d6570736575ull ^ k0, v1 = 0x646f72616e646f6dull ^ k1;
    uint64_t v2 = 0x6c7967656e657261ull ^ k0, v3 = 0x7465646279746573ull ^ k1;
    // SipHash's rounds as its paper writes them.
    // clang-format off
    auto round = [&] {
        v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);
        v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;
        v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;
        v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);
    };
    // clang-format on
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = 0;
        for (int b = 7; b >= 0; b--)
            w = (w << 8) | m[i + b];
        v3 ^= w;
        round();
        round();
        v0 ^= w;
    }
    uint64_t last = uint64_t(len & 0xff) << 56;
    for (size_t b = 0; i + b < len; b++)
        last |= uint64_t(m[i + b]) << (8 * b);
    v3 ^= last;
    round();
    round();
    v0 ^= last;
    v2 ^= 0xff;
    round();
    round();
    round();
    round();
    return v0 ^ v1 ^ v2 ^ v3;
}

// The SipHash paper's example: key 00 01 .. 0f, message 00 01 .. 0e.
TEST(Permute, SipHashMatchesItsSpecification)
{
    uint8_t kb[16], m[16];
    for (int i = 0; i < 16; i++)
        kb[i] = m[i] = uint8_t(i);
    const PermutationKey k = PermutationKey::from_bytes(kb);
    EXPECT_EQ(reference_siphash(k.k0, k.k1, m, 15), 0xa129ca6149be45e5ull);
    std::mt19937_64 rng(3);
    for (int t = 0; t < 1000; t++) {
        const PermutationKey key{rng(), rng()};
        const uint64_t m0 = rng(), m1 = rng();
        uint8_t bytes[16];
        for (int b = 0; b < 8; b++) {
            bytes[b] = uint8_t(m0 >> (8 * b));
            bytes[8 + b] = uint8_t(m1 >> (8 * b));
        }
        ASSERT_EQ(siphash24(key, m0, m1), reference_siphash(key.k0, key.k1, bytes, 16));
    }
}

TEST(Permute, BijectiveOnWholeSmallDomains)
{
    for (int bits : {8, 9, 16, 20}) {
        const PermutationKey k = key_of(0x0123456789abcdefull, uint64_t(bits) * 0x9e3779b97f4a7c15ull);
        const uint64_t top = uint64_t(1) << bits;
        std::vector<bool> seen(top, false);
        for (uint64_t v = 1; v < top; v++) {
            const uint64_t p = permute_forward(k, v, bits);
            ASSERT_GE(p, 1u);
            ASSERT_LT(p, top);
            ASSERT_FALSE(seen[p]) << "collision at bits=" << bits;
            seen[p] = true;
            ASSERT_EQ(permute_inverse(k, p, bits), v);
        }
    }
}

TEST(Permute, RoundTripsOn63And53Bits)
{
    std::mt19937_64 rng(99);
    const PermutationKey k = key_of(rng(), rng());
    for (int bits : {63, 53}) {
        const uint64_t top = uint64_t(1) << bits;
        for (int i = 0; i < 200000; i++) {
            uint64_t v = rng() & (top - 1);
            if (v == 0)
                v = 1;
            const uint64_t p = permute_forward(k, v, bits);
            ASSERT_TRUE(p >= 1 && p < top);
            ASSERT_EQ(permute_inverse(k, p, bits), v);
        }
        for (uint64_t v : {uint64_t(1), top - 1, top / 2})
            EXPECT_EQ(permute_inverse(k, permute_forward(k, v, bits), bits), v);
    }
}

TEST(Permute, OtherKeysGiveUnrelatedPermutations)
{
    const PermutationKey a = key_of(1, 2), b = key_of(1, 3);
    int same = 0, adjacent_in_order = 0;
    uint64_t prev = 0;
    for (uint64_t v = 1; v <= 10000; v++) {
        const uint64_t pa = permute_forward(a, v, 63);
        same += pa == permute_forward(b, v, 63);
        adjacent_in_order += pa > prev;
        prev = pa;
    }
    EXPECT_EQ(same, 0);
    EXPECT_GT(adjacent_in_order, 4500);  // about half: order is hidden
    EXPECT_LT(adjacent_in_order, 5500);
}

TEST(Permute, ChecksTheDomain)
{
    Status st;
    EXPECT_TRUE(permute_check(1, 63, &st));
    EXPECT_TRUE(permute_check(INT64_MAX, 63, &st));
    EXPECT_FALSE(permute_check(0, 63, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
    EXPECT_FALSE(permute_check(int64_t(1) << 53, 53, &st));
    EXPECT_FALSE(permute_check(5, 64, &st));
    EXPECT_EQ(st.error, Error::invalid_parameter);
    EXPECT_FALSE(permute_check(5, 7, &st));
}
