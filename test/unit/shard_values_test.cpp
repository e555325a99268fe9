// Shard value claims (src/core/etcd/shard_values.hpp): claim spaces, the marks
// in etcd (every value from etcd checked, int64's extremes included), the
// floor a new holder starts above, and shardid.shards.
#include <gtest/gtest.h>

#include <climits>

#include "core/etcd/wire.hpp"
#include "core/schemes.hpp"
#include "core/etcd/shard_values.hpp"

using namespace shardid;

TEST(ShardValues, ShapesNameTheirSpace)
{
    const Layout a = Layout::named("a").epoch(1288834974657).unit(1).time(41).shard(10).sequence(12);
    EXPECT_EQ(etcd::space_name(a), "e1288834974657u1t41s10q12");
    // The name is not part of the space: equal shapes share it.
    EXPECT_EQ(etcd::space_name(Layout::named("b").epoch(1288834974657).unit(1).time(41).shard(10).sequence(12)),
              etcd::space_name(a));
    // Any other field makes another space.
    EXPECT_NE(etcd::space_name(a.epoch(0)), etcd::space_name(a));
    EXPECT_NE(etcd::space_name(a.unit(2)), etcd::space_name(a));
    EXPECT_NE(etcd::space_name(a.time(40).shard(11)), etcd::space_name(a));
    EXPECT_NE(etcd::space_name(a.wrapping()), etcd::space_name(a));
    EXPECT_NE(etcd::space_name(a.first_sequence(1)), etcd::space_name(a));
    EXPECT_EQ(etcd::space_name(Layout::named("n").epoch(-5).unit(1).time(30).shard(3).sequence(4).wrapping()),
              "e-5u1t30s3q4w");
    EXPECT_EQ(etcd::shard_key("/p", "s", 7), "/p/shard/s/7");
    EXPECT_EQ(etcd::shard_mark_key("/p", "s", 7), "/p/shardmark/s/7");
    EXPECT_EQ(etcd::shard_retired_key("/p", "s"), "/p/shardretired/s");
    uint64_t word = 0;
    EXPECT_TRUE(etcd::parse_retired("0", &word));
    EXPECT_TRUE(etcd::parse_retired("9223372036854775807", &word));
    EXPECT_EQ(word, uint64_t(INT64_MAX));
    for (const char* bad : {"", "-1", "1 2", "0x5", "9223372036854775808", "5 "})
        EXPECT_FALSE(etcd::parse_retired(bad, &word)) << bad;
}

TEST(ShardValues, MarksReadBackWhatTheyWrite)
{
    for (const etcd::ShardMark m :
         {etcd::ShardMark{0, 0, 0, false, 0}, etcd::ShardMark{1795000000000, 1, 1023, true, 77},
          etcd::ShardMark{INT64_MAX, UINT64_MAX >> 1, 7, false, 0}, etcd::ShardMark{5, 1, 7, true, INT64_MAX},
          etcd::ShardMark{5, 1, 7, false, 3, INT64_MAX}}) {
        etcd::ShardMark back;
        ASSERT_TRUE(etcd::parse_shard_mark(etcd::shard_mark_value(m), 1023, &back)) << etcd::shard_mark_value(m);
        EXPECT_EQ(back.floor_ms, m.floor_ms);
        EXPECT_EQ(back.token, m.token);
        EXPECT_EQ(back.holder, m.holder);
        EXPECT_EQ(back.released, m.released);
        EXPECT_EQ(back.word, m.word);
        EXPECT_EQ(back.bound, m.bound);
    }
    EXPECT_EQ(etcd::shard_mark_value({5, 0xab, 3, true, 42}), "5 00000000000000ab 3 released 42 0");
    EXPECT_EQ(etcd::shard_mark_value({5, 0xab, 3, false, 42, 50}), "5 00000000000000ab 3 held 42 50");
}

TEST(ShardValues, MarksShardidNeverWritesAreRefused)
{
    etcd::ShardMark m;
    for (const char* bad :
         {"", "5", "5 00000000000000ab 3 held", "5 00000000000000ab 3 held 0", "5 00000000000000ab 3 held 0 0 extra",
          "-1 00000000000000ab 3 held 0 0", "9223372036854775808 00000000000000ab 3 held 0 0",
          "5 00000000000000AB 3 held 0 0", "5 ab 3 held 0 0", "5 00000000000000ab -1 held 0 0",
          "5 00000000000000ab 1024 held 0 0", "5 00000000000000ab 3 holding 0 0", "5  00000000000000ab 3 held 0 0",
          "0x5 00000000000000ab 3 held 0 0", "5 00000000000000ab 99999999999999999999 held 0 0",
          "5 00000000000000ab 3 released -1 0", "5 00000000000000ab 3 released 9223372036854775808 0",
          "5 00000000000000ab 3 held 0 -1", "5 00000000000000ab 3 held 0 9223372036854775808",
          // A released mark carries no bound: its word is where the next holder continues.
          "5 00000000000000ab 3 released 0 7"})
        EXPECT_FALSE(etcd::parse_shard_mark(bad, 1023, &m)) << bad;
}

// A one-minute layout (12 sequence bits): the bound moves an eighth of a
// tick (512 sequences) ahead, never past its tick, except within half the
// lead of the tick's end, where it reaches into the next tick.
TEST(ShardValues, BoundsCoverTheNextWordsOfACoarseLayout)
{
    const Layout minute = Layout::named("m").epoch(0).unit(60000).time(30).shard(10).sequence(12);
    EXPECT_TRUE(etcd::keeps_bound(minute));
    EXPECT_FALSE(etcd::keeps_bound(Layout::named("s").epoch(0).unit(1000).time(41).shard(10).sequence(12)));
    EXPECT_FALSE(etcd::keeps_bound(minute.wrapping()));
    const int64_t lead = 10000, t0 = 60000 * 100;  // the start of tick 100
    // Nothing issued yet: from the clock's tick.
    EXPECT_EQ(etcd::bound_target(minute, 0, t0 + 1000, lead, 0), minute.pack(100, 512));
    // Above the slot's word.
    EXPECT_EQ(etcd::bound_target(minute, minute.pack(100, 1000), t0 + 1000, lead, 0), minute.pack(100, 1512));
    EXPECT_EQ(etcd::bound_target(minute, minute.pack(100, 4000), t0 + 1000, lead, 0), minute.pack(100, 4095));
    // A word ahead of the clock (a previous holder's): its own tick.
    EXPECT_EQ(etcd::bound_target(minute, minute.pack(101, 7), t0 + 1000, lead, 0), minute.pack(101, 519));
    // The last 5 s of the tick: into the next one.
    EXPECT_EQ(etcd::bound_target(minute, minute.pack(100, 9), t0 + 55000, lead, 0), minute.pack(101, 511));
    EXPECT_EQ(etcd::bound_target(minute, minute.pack(100, 9), t0 + 54999, lead, 0), minute.pack(100, 521));
    // Past the time field: none.
    EXPECT_EQ(etcd::bound_target(minute, minute.pack(minute.time_max() + 1, 0), t0, lead, 0), 0u);

    // Due once less than half a step (256) is left, or below what is needed.
    EXPECT_FALSE(etcd::bound_due(minute, minute.pack(100, 600), minute.pack(100, 344), t0 + 1000, lead, 0));
    EXPECT_TRUE(etcd::bound_due(minute, minute.pack(100, 600), minute.pack(100, 345), t0 + 1000, lead, 0));
    EXPECT_TRUE(etcd::bound_due(minute, minute.pack(100, 600), minute.pack(101, 0), t0 + 1000, lead, 0));
    // Near the tick's end, until the bound is in the next tick.
    EXPECT_TRUE(etcd::bound_due(minute, minute.pack(100, 4095), minute.pack(100, 0), t0 + 55000, lead, 0));
    EXPECT_FALSE(etcd::bound_due(minute, minute.pack(101, 511), minute.pack(100, 0), t0 + 55000, lead, 0));
    // A bound at the end of its tick moves on only with the clock.
    EXPECT_FALSE(etcd::bound_due(minute, minute.pack(100, 4095), minute.pack(100, 4000), t0 + 1000, lead, 0));
    // A bound renewed as due covers what was needed, and is not due again.
    for (int64_t now : {t0, t0 + 30000, t0 + 56000, t0 + 59999})
        for (uint64_t need : {minute.pack(100, 0), minute.pack(100, 3000), minute.pack(100, 4095)}) {
            const uint64_t b = etcd::bound_target(minute, need, now, lead, 0);
            EXPECT_GE(b, need);
            EXPECT_FALSE(etcd::bound_due(minute, b, need, now, lead, 0)) << now << " " << need;
        }
}

// The bound reaches the holder's fence: a layout with 2-second ticks whose
// fence lies 8 s ahead is covered for every tick before the fence's, and
// the first eighth of that one, so an etcd pause shorter than the fence
// stalls nothing (issue 57: 2.9 s stalls over a 5 s pause before).
TEST(ShardValues, BoundsReachTheFence)
{
    const Layout two = Layout::named("two").epoch(0).unit(2000).time(40).shard(10).sequence(12);
    const int64_t lead = 10000, t0 = 2000 * 500;
    // Fence 8 s ahead: tick 504's first 512 sequences.
    EXPECT_EQ(etcd::bound_target(two, 0, t0 + 100, lead, t0 + 8100), two.pack(504, 511));
    // Not due while the fence stays in the bound's tick; due once it moves on.
    const uint64_t b = etcd::bound_target(two, 0, t0 + 100, lead, t0 + 8100);
    EXPECT_FALSE(etcd::bound_due(two, b, two.pack(500, 10), t0 + 300, lead, t0 + 9900));
    EXPECT_TRUE(etcd::bound_due(two, b, two.pack(500, 10), t0 + 2100, lead, t0 + 10100));
    // A fence behind the clock (none) adds nothing; the clock's own rules
    // hold (a tick shorter than half the lead: into the next tick).
    EXPECT_EQ(etcd::bound_target(two, 0, t0 + 100, lead, t0 - 5000), two.pack(501, 511));
    // A one-minute layout whose fence is within its tick: as before.
    const Layout minute = Layout::named("m").epoch(0).unit(60000).time(30).shard(10).sequence(12);
    EXPECT_EQ(etcd::bound_target(minute, 0, 60000 * 100 + 1000, lead, 60000 * 100 + 9000), minute.pack(100, 512));
    // Past the time field: nothing reached.
    EXPECT_EQ(etcd::bound_target(two, 0, t0, lead, int64_t(two.time_max() + 5) * 2000), two.pack(501, 511));
}

TEST(ShardValues, ANewHolderStartsAboveEveryPreviousId)
{
    int64_t floor = 0;
    // Released: the last tick the holder issued.
    EXPECT_TRUE(etcd::shard_floor({100, 1, 2, true, 0}, 5000, &floor));
    EXPECT_EQ(floor, 100);
    // Held (a crash, a lost lease): the holder's node mark bounds its IDs.
    EXPECT_TRUE(etcd::shard_floor({100, 1, 2, false}, 5000, &floor));
    EXPECT_EQ(floor, 5000);
    EXPECT_TRUE(etcd::shard_floor({9000, 1, 2, false}, 5000, &floor));
    EXPECT_EQ(floor, 9000);
    EXPECT_TRUE(etcd::shard_floor({INT64_MAX, 1, 2, false}, INT64_MAX, &floor));
    EXPECT_EQ(floor, INT64_MAX);
    // No node mark: nothing bounds the holder's IDs.
    EXPECT_FALSE(etcd::shard_floor({100, 1, 2, false}, -1, &floor));
}

TEST(ShardValues, ShardSets)
{
    std::vector<etcd::ShardRange> set;
    std::string why;
    ASSERT_TRUE(etcd::parse_shard_set("0-511,1024", 8191, &set, &why)) << why;
    EXPECT_TRUE(etcd::shard_set_contains(set, 0));
    EXPECT_TRUE(etcd::shard_set_contains(set, 511));
    EXPECT_FALSE(etcd::shard_set_contains(set, 512));
    EXPECT_TRUE(etcd::shard_set_contains(set, 1024));
    EXPECT_FALSE(etcd::shard_set_contains(set, 1025));
    EXPECT_FALSE(etcd::shard_set_contains(set, -1));
    ASSERT_TRUE(etcd::parse_shard_set(" 40 - 50 , 3, 0-100 ", 8191, &set, &why)) << why;
    EXPECT_TRUE(etcd::shard_set_contains(set, 99));
    EXPECT_TRUE(etcd::shard_set_contains(set, 45));
    EXPECT_FALSE(etcd::shard_set_contains(set, 101));
    EXPECT_EQ(etcd::shard_set_multirange(set), "{[0,100],[3,3],[40,50]}");
    ASSERT_TRUE(etcd::parse_shard_set("1024, 0-511", 8191, &set, &why)) << why;
    EXPECT_EQ(etcd::shard_set_multirange(set), "{[0,511],[1024,1024]}");
    ASSERT_TRUE(etcd::parse_shard_set("", 8191, &set, &why));
    EXPECT_TRUE(set.empty());
    EXPECT_EQ(etcd::shard_set_multirange(set), "{}");
    EXPECT_NE(etcd::text_fingerprint("{}"), 0u);
    EXPECT_NE(etcd::text_fingerprint("{[1,1]}"), etcd::text_fingerprint("{[1,2]}"));
    EXPECT_EQ(etcd::text_fingerprint("{[1,1]}"), etcd::text_fingerprint("{[1,1]}"));
    for (const char* bad : {"x", "1-", "-1", "5-3", "0-8192", "1,,2", "1;2", "9223372036854775808", "1-2-3", "0x10"}) {
        EXPECT_FALSE(etcd::parse_shard_set(bad, 8191, &set, &why)) << bad;
        EXPECT_FALSE(why.empty());
    }
}

TEST(ShardValues, TransactionsDeleteKeys)
{
    const std::string body = etcd::encode_txn({{etcd::Compare::Target::lease, "/p/shard/s/1", 0, "42"}},
                                              {{true, "/p/m", "v", ""}, {false, "/p/shard/s/1", "", "", true}}, {});
    EXPECT_EQ(body, R"({"compare":[{"key":"L3Avc2hhcmQvcy8x","lease":"42","result":"EQUAL","target":"LEASE"}],)"
                    R"("failure":[],)"
                    R"("success":[{"request_put":{"key":"L3AvbQ==","value":"dg=="}},)"
                    R"({"request_delete_range":{"key":"L3Avc2hhcmQvcy8x"}}]})");
}
