// Shard value claims (src/core/coord/shard_claim.hpp): claim spaces, the marks
// in etcd (every value from etcd checked, int64's extremes included), the
// floor a new holder starts above, and shardid.shards.
#include <gtest/gtest.h>

#include <climits>

#include "core/coord/etcd_wire.hpp"
#include "core/schemes.hpp"
#include "core/coord/shard_claim.hpp"

using namespace shardid;

TEST(ShardClaim, ShapesNameTheirSpace)
{
    const Layout a = Layout::named("a").epoch(1288834974657).unit(1).time(41).shard(10).sequence(12);
    EXPECT_EQ(coord::space_name(a), "e1288834974657u1t41s10q12");
    // The name is not part of the space: equal shapes share it.
    EXPECT_EQ(coord::space_name(Layout::named("b").epoch(1288834974657).unit(1).time(41).shard(10).sequence(12)),
              coord::space_name(a));
    // Any other field makes another space.
    EXPECT_NE(coord::space_name(a.epoch(0)), coord::space_name(a));
    EXPECT_NE(coord::space_name(a.unit(2)), coord::space_name(a));
    EXPECT_NE(coord::space_name(a.time(40).shard(11)), coord::space_name(a));
    EXPECT_NE(coord::space_name(a.wrapping()), coord::space_name(a));
    EXPECT_NE(coord::space_name(a.first_sequence(1)), coord::space_name(a));
    EXPECT_EQ(coord::space_name(Layout::named("n").epoch(-5).unit(1).time(30).shard(3).sequence(4).wrapping()),
              "e-5u1t30s3q4w");
    EXPECT_EQ(coord::shard_key("/p", "s", 7), "/p/shard/s/7");
    EXPECT_EQ(coord::shard_mark_key("/p", "s", 7), "/p/shardmark/s/7");
}

TEST(ShardClaim, MarksReadBackWhatTheyWrite)
{
    for (const coord::ShardMark m :
         {coord::ShardMark{0, 0, 0, false, 0}, coord::ShardMark{1795000000000, 1, 1023, true, 77},
          coord::ShardMark{INT64_MAX, UINT64_MAX >> 1, 7, false, 0}, coord::ShardMark{5, 1, 7, true, INT64_MAX}}) {
        coord::ShardMark back;
        ASSERT_TRUE(coord::parse_shard_mark(coord::shard_mark_value(m), 1023, &back)) << coord::shard_mark_value(m);
        EXPECT_EQ(back.floor_ms, m.floor_ms);
        EXPECT_EQ(back.token, m.token);
        EXPECT_EQ(back.holder, m.holder);
        EXPECT_EQ(back.released, m.released);
        EXPECT_EQ(back.word, m.word);
    }
    EXPECT_EQ(coord::shard_mark_value({5, 0xab, 3, true, 42}), "5 00000000000000ab 3 released 42");
    EXPECT_EQ(coord::shard_mark_value({5, 0xab, 3, false, 42}), "5 00000000000000ab 3 held 42");
}

TEST(ShardClaim, MarksShardidNeverWritesAreRefused)
{
    coord::ShardMark m;
    for (const char* bad :
         {"", "5", "5 00000000000000ab 3 held", "5 00000000000000ab 3 held 0 extra", "-1 00000000000000ab 3 held 0",
          "9223372036854775808 00000000000000ab 3 held 0", "5 00000000000000AB 3 held 0", "5 ab 3 held 0",
          "5 00000000000000ab -1 held 0", "5 00000000000000ab 1024 held 0", "5 00000000000000ab 3 holding 0",
          "5  00000000000000ab 3 held 0", "0x5 00000000000000ab 3 held 0",
          "5 00000000000000ab 99999999999999999999 held 0", "5 00000000000000ab 3 released -1",
          "5 00000000000000ab 3 released 9223372036854775808"})
        EXPECT_FALSE(coord::parse_shard_mark(bad, 1023, &m)) << bad;
}

TEST(ShardClaim, ANewHolderStartsAboveEveryPreviousId)
{
    int64_t floor = 0;
    // Released: the last tick the holder issued.
    EXPECT_TRUE(coord::shard_floor({100, 1, 2, true, 0}, 5000, &floor));
    EXPECT_EQ(floor, 100);
    // Held (a crash, a lost lease): the holder's node mark bounds its IDs.
    EXPECT_TRUE(coord::shard_floor({100, 1, 2, false}, 5000, &floor));
    EXPECT_EQ(floor, 5000);
    EXPECT_TRUE(coord::shard_floor({9000, 1, 2, false}, 5000, &floor));
    EXPECT_EQ(floor, 9000);
    EXPECT_TRUE(coord::shard_floor({INT64_MAX, 1, 2, false}, INT64_MAX, &floor));
    EXPECT_EQ(floor, INT64_MAX);
    // No node mark: nothing bounds the holder's IDs.
    EXPECT_FALSE(coord::shard_floor({100, 1, 2, false}, -1, &floor));
}

TEST(ShardClaim, ShardSets)
{
    std::vector<coord::ShardRange> set;
    std::string why;
    ASSERT_TRUE(coord::parse_shard_set("0-511,1024", 8191, &set, &why)) << why;
    EXPECT_TRUE(coord::shard_set_contains(set, 0));
    EXPECT_TRUE(coord::shard_set_contains(set, 511));
    EXPECT_FALSE(coord::shard_set_contains(set, 512));
    EXPECT_TRUE(coord::shard_set_contains(set, 1024));
    EXPECT_FALSE(coord::shard_set_contains(set, 1025));
    EXPECT_FALSE(coord::shard_set_contains(set, -1));
    ASSERT_TRUE(coord::parse_shard_set(" 40 - 50 , 3, 0-100 ", 8191, &set, &why)) << why;
    EXPECT_TRUE(coord::shard_set_contains(set, 99));
    EXPECT_TRUE(coord::shard_set_contains(set, 45));
    EXPECT_FALSE(coord::shard_set_contains(set, 101));
    EXPECT_EQ(coord::shard_set_multirange(set), "{[0,100],[3,3],[40,50]}");
    ASSERT_TRUE(coord::parse_shard_set("1024, 0-511", 8191, &set, &why)) << why;
    EXPECT_EQ(coord::shard_set_multirange(set), "{[0,511],[1024,1024]}");
    ASSERT_TRUE(coord::parse_shard_set("", 8191, &set, &why));
    EXPECT_TRUE(set.empty());
    EXPECT_EQ(coord::shard_set_multirange(set), "{}");
    EXPECT_NE(coord::text_fingerprint("{}"), 0u);
    EXPECT_NE(coord::text_fingerprint("{[1,1]}"), coord::text_fingerprint("{[1,2]}"));
    EXPECT_EQ(coord::text_fingerprint("{[1,1]}"), coord::text_fingerprint("{[1,1]}"));
    for (const char* bad : {"x", "1-", "-1", "5-3", "0-8192", "1,,2", "1;2", "9223372036854775808", "1-2-3", "0x10"}) {
        EXPECT_FALSE(coord::parse_shard_set(bad, 8191, &set, &why)) << bad;
        EXPECT_FALSE(why.empty());
    }
}

TEST(ShardClaim, TransactionsDeleteKeys)
{
    const std::string body = etcd::encode_txn({{etcd::Compare::Target::lease, "/p/shard/s/1", 0, "42"}},
                                              {{true, "/p/m", "v", ""}, {false, "/p/shard/s/1", "", "", true}}, {});
    EXPECT_EQ(body, R"({"compare":[{"key":"L3Avc2hhcmQvcy8x","lease":"42","result":"EQUAL","target":"LEASE"}],)"
                    R"("failure":[],)"
                    R"("success":[{"request_put":{"key":"L3AvbQ==","value":"dg=="}},)"
                    R"({"request_delete_range":{"key":"L3Avc2hhcmQvcy8x"}}]})");
}
