// Eight-byte IDs against the reference Java library's own byte vectors.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "core/eightbyte.hpp"

using namespace shardid;

namespace {

std::string hex(const EightParts& p)
{
    uint8_t b[8];
    eight_to_bytes(eight_word(p), b);
    std::string s;
    char buf[3];
    for (uint8_t x : b) {
        std::snprintf(buf, sizeof buf, "%02x", x);
        s += buf;
    }
    return s;
}

}  // namespace

TEST(EightByte, ReferenceVectors)
{
    EXPECT_EQ(hex({0, 0, 0, 0, EightMode::spread}), "0000000000000000");
    EXPECT_EQ(hex({eight_time_max, 63, 2047, 15, EightMode::spread}), "ffffffffffffefff");
    EXPECT_EQ(hex({143062936275, 0, 0, 0, EightMode::spread}), "cb54ecf284000000");
    EXPECT_EQ(hex({0x3FFFFFFFD, 0, 0, 0, EightMode::spread}), "bfffffffc0000000");
    EXPECT_EQ(hex({0, 0x22, 0, 0, EightMode::spread}).substr(10, 2), "22");
    EXPECT_EQ(hex({0, 0, 0x27, 0, EightMode::spread}).substr(12, 4), "0270");
    EXPECT_EQ(hex({0, 0, 0, 5, EightMode::spread}).substr(12, 4), "0005");
    EXPECT_EQ(hex({0, 0, 0, 0, EightMode::time_sequential}).substr(12, 4), "1000");
}

TEST(EightByte, RoundTripsBothModesAndExtremes)
{
    for (EightMode mode : {EightMode::spread, EightMode::time_sequential})
        for (int64_t ts : {int64_t(0), int64_t(1), int64_t(143062936275), eight_time_max})
            for (uint32_t gen : {0u, 1u, 0x27u, 255u, 256u, 2047u})
                for (uint32_t seq : {0u, 10u, 63u})
                    for (uint32_t cluster : {0u, 5u, 15u}) {
                        const EightParts p{ts, seq, gen, cluster, mode};
                        const EightParts q = eight_parts(eight_word(p));
                        ASSERT_EQ(q.unix_ms, ts);
                        ASSERT_EQ(q.sequence, seq);
                        ASSERT_EQ(q.generator_id, gen);
                        ASSERT_EQ(q.cluster_id, cluster);
                        ASSERT_EQ(q.mode, mode);
                    }
}

TEST(EightByte, EveryGeneratorIdIsDistinct)
{
    // As the reference library checks: all 2,048 generator ids give distinct IDs.
    std::set<uint64_t> seen;
    for (uint32_t g = 0; g <= eight_generator_max; g++) {
        seen.insert(eight_word({eight_time_max, 63, g, 15, EightMode::spread}));
        seen.insert(eight_word({eight_time_max, 63, g, 15, EightMode::time_sequential}));
    }
    EXPECT_EQ(seen.size(), 2u * 2048);
}

TEST(EightByte, TimeSequentialSortsByTime)
{
    const uint64_t a = eight_word({1000, 63, 2047, 15, EightMode::time_sequential});
    const uint64_t b = eight_word({1001, 0, 0, 0, EightMode::time_sequential});
    EXPECT_LT(a, b);
    EXPECT_EQ(eight_word({(int64_t(1) << 41) - 1, 63, 2047, 15, EightMode::time_sequential}) >> 63, 0u)
        << "positive as a bigint until 2039-09-07";
}

TEST(EightByte, ChecksRanges)
{
    Status st;
    EXPECT_TRUE(eight_check({0, 0, 0, 0, EightMode::spread}, 63, 2047, 15, &st));
    EXPECT_FALSE(eight_check({eight_time_max + 1, 0, 0, 0, EightMode::spread}, 0, 0, 0, &st));
    EXPECT_FALSE(eight_check({-1, 0, 0, 0, EightMode::spread}, 0, 0, 0, &st));
    EXPECT_FALSE(eight_check({0, 0, 0, 0, EightMode::spread}, 64, 0, 0, &st));
    EXPECT_FALSE(eight_check({0, 0, 0, 0, EightMode::spread}, 0, 2048, 0, &st));
    EXPECT_FALSE(eight_check({0, 0, 0, 0, EightMode::spread}, 0, 0, 16, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
    EXPECT_TRUE(eightbyte_layout.validate().ok());
}
