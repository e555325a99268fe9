// UUIDv7 (RFC 9562): the RFC's test vector, the layout of every field, the
// order of a node's UUIDs, decoding, and the bounds of time ranges.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/engine.hpp"
#include "core/uuidv7.hpp"
#include "fake_clock.hpp"

using namespace shardid;

namespace {

std::string hex(const Uuid& u)
{
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            s += '-';
        s += digits[u.bytes[i] >> 4];
        s += digits[u.bytes[i] & 15];
    }
    return s;
}

Uuid parse(const char* text)
{
    Uuid u{};
    int n = 0;
    for (const char* p = text; *p && n < 32; ++p) {
        if (*p == '-')
            continue;
        const int v = *p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10;
        u.bytes[n / 2] = uint8_t(n % 2 ? (u.bytes[n / 2] | v) : v << 4);
        ++n;
    }
    return u;
}

int cmp(const Uuid& a, const Uuid& b) { return std::memcmp(a.bytes, b.bytes, 16); }

}  // namespace

// RFC 9562, appendix A.6: 017F22E2-79B0-7CC3-98C4-DC0C0C07398F, made on
// Tuesday, February 22, 2022 2:22:22.00 PM GMT-05:00 (1645557742000 ms),
// rand_a 0xCC3, rand_b 0x18C4DC0C0C07398F.
TEST(Uuidv7, RfcTestVector)
{
    const uint64_t word = uuidv7_layout.pack(1645557742000, 0xCC3);
    EXPECT_EQ(hex(uuidv7_compose(word, 0, 0, 0x18C4DC0C0C07398F)), "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
    Uuidv7Fields f{};
    Status st;
    ASSERT_TRUE(uuidv7_decode(parse("017F22E2-79B0-7CC3-98C4-DC0C0C07398F"), 0, &f, &st)) << st.message;
    EXPECT_EQ(f.unix_ms, 1645557742000);
    EXPECT_EQ(f.counter, 0xCC3u);
    EXPECT_EQ(f.shard, 0u);
}

TEST(Uuidv7, FieldPositions)
{
    // Every field at its maximum, one at a time.
    const uint64_t ms = uuidv7_max_ms, counter = 0xFFF;
    EXPECT_EQ(hex(uuidv7_compose(uuidv7_layout.pack(ms, 0), 0, 0, 0)), "ffffffff-ffff-7000-8000-000000000000");
    EXPECT_EQ(hex(uuidv7_compose(uuidv7_layout.pack(0, counter), 0, 0, 0)), "00000000-0000-7fff-8000-000000000000");
    EXPECT_EQ(hex(uuidv7_compose(0, 0, 0, ~uint64_t(0))), "00000000-0000-7000-bfff-ffffffffffff");
    // A 10-bit shard at the top of rand_b, random below it.
    EXPECT_EQ(hex(uuidv7_compose(0, 10, 0x3FF, 0)), "00000000-0000-7000-bff0-000000000000");
    EXPECT_EQ(hex(uuidv7_compose(0, 10, 0, ~uint64_t(0))), "00000000-0000-7000-800f-ffffffffffff");
    EXPECT_EQ(hex(uuidv7_compose(0, 32, 0xFFFFFFFF, 0)), "00000000-0000-7000-bfff-ffffc0000000");
    Uuidv7Fields f{};
    Status st;
    ASSERT_TRUE(uuidv7_decode(uuidv7_compose(uuidv7_layout.pack(1234, 567), 10, 789, ~uint64_t(0)), 10, &f, &st));
    EXPECT_EQ(f.unix_ms, 1234);
    EXPECT_EQ(f.counter, 567u);
    EXPECT_EQ(f.shard, 789u);
}

TEST(Uuidv7, RefusesOtherVersionsAndVariants)
{
    Uuidv7Fields f{};
    Status st;
    EXPECT_FALSE(uuidv7_decode(parse("f47ac10b-58cc-4372-a567-0e02b2c3d479"), 0, &f, &st));  // version 4
    EXPECT_EQ(st.error, Error::invalid_parameter);
    EXPECT_STREQ(st.detail, "Its version is 4; a UUIDv7 has version 7.");
    st = Status();
    EXPECT_FALSE(uuidv7_decode(parse("017f22e2-79b0-7cc3-d8c4-dc0c0c07398f"), 0, &f, &st));  // variant 11
    EXPECT_STREQ(st.detail, "Its variant bits are 11; a UUIDv7 has the RFC 9562 variant, binary 10.");
    st = Status();
    EXPECT_FALSE(uuidv7_decode(parse("00000000-0000-0000-0000-000000000000"), 0, &f, &st));  // nil
    st = Status();
    EXPECT_FALSE(uuidv7_decode(parse("017f22e2-79b0-7cc3-98c4-dc0c0c07398f"), 33, &f, &st));
    EXPECT_EQ(st.error, Error::invalid_parameter);
}

TEST(Uuidv7, ShardChecks)
{
    Status st;
    EXPECT_TRUE(uuidv7_check_shard(uuidv7_shard_fit(0), 0, "shard", &st));
    EXPECT_FALSE(uuidv7_check_shard(uuidv7_shard_fit(0), 1, "shard", &st));
    EXPECT_EQ(st.error, Error::invalid_parameter);
    st = Status();
    EXPECT_TRUE(uuidv7_check_shard(uuidv7_shard_fit(10), 1023, "shard", &st));
    EXPECT_FALSE(uuidv7_check_shard(uuidv7_shard_fit(10), 1024, "shard", &st));
    EXPECT_EQ(st.error, Error::out_of_range);
    st = Status();
    EXPECT_FALSE(uuidv7_check_shard(uuidv7_shard_fit(10), -1, "shard", &st));
    EXPECT_TRUE(uuidv7_check_shard(uuidv7_shard_fit(32), 0xFFFFFFFFll, "shard", &st));
}

// The engine's words, made into UUIDs with any shard and random bits, sort
// as the words do: the counter within a millisecond, then the millisecond.
TEST(Uuidv7, OrderFollowsTheEngine)
{
    SlotState slot{};
    FakeClock clock;
    clock.ms = 1795000000000;
    Status st;
    Uuid prev{};
    uint64_t rnd = 0x9E3779B97F4A7C15;
    for (int i = 0; i < 20000; ++i) {
        uint64_t id = 0;
        ASSERT_TRUE(next_id(uuidv7_layout, slot, clock, 10000, 0, &id, &st)) << st.message;
        rnd = rnd * 6364136223846793005 + 1442695040888963407;
        const Uuid u = uuidv7_compose(id, 8, uint64_t(i) & 0xFF, rnd);
        if (i > 0) {
            ASSERT_LT(cmp(prev, u), 0) << i;
        }
        prev = u;
    }
    EXPECT_GT(clock.pauses, 0);  // 4096 per millisecond: it waited for the next
}

TEST(Uuidv7, MinAndRanges)
{
    Uuid u{};
    Status st;
    ASSERT_TRUE(uuidv7_min(1645557742000, &u, &st));
    EXPECT_EQ(hex(u), "017f22e2-79b0-7000-8000-000000000000");
    EXPECT_FALSE(uuidv7_min(-1, &u, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
    st = Status();
    EXPECT_FALSE(uuidv7_min(uuidv7_max_ms + 1, &u, &st));

    Uuid lo{}, hi{};
    uuidv7_range(true, 1645557742000, true, 1645557742001, &lo, &hi);
    EXPECT_EQ(hex(lo), "017f22e2-79b0-0000-0000-000000000000");
    EXPECT_EQ(hex(hi), "017f22e2-79b1-ffff-ffff-ffffffffffff");
    // The RFC's UUID lies within its own millisecond's range, not the next's.
    const Uuid rfc = parse("017F22E2-79B0-7CC3-98C4-DC0C0C07398F");
    EXPECT_LE(cmp(lo, rfc), 0);
    EXPECT_LE(cmp(rfc, hi), 0);
    uuidv7_range(true, 1645557742001, false, 0, &lo, &hi);
    EXPECT_GT(cmp(lo, rfc), 0);
    EXPECT_EQ(hex(hi), "ffffffff-ffff-ffff-ffff-ffffffffffff");
    uuidv7_range(false, 0, true, -5, &lo, &hi);
    EXPECT_GT(cmp(lo, hi), 0);  // before 1970: empty
    uuidv7_range(true, uuidv7_max_ms + 1, false, 0, &lo, &hi);
    EXPECT_GT(cmp(lo, hi), 0);  // after the last millisecond: empty
    uuidv7_range(true, -100, true, uuidv7_max_ms + 100, &lo, &hi);
    EXPECT_EQ(hex(lo), "00000000-0000-0000-0000-000000000000");
    EXPECT_EQ(hex(hi), "ffffffff-ffff-ffff-ffff-ffffffffffff");
}
