// Presets decode IDs that other systems published; compose/min_id edges.
#include <gtest/gtest.h>

#include <cstring>

#include "core/schemes.hpp"

using namespace shardid;

namespace {

Decoded decode(const Layout& layout, int64_t id)
{
    Decoded d{};
    Status st;
    EXPECT_TRUE(layout_decode(layout, id, &d, &st)) << st.message;
    return d;
}

}  // namespace

TEST(Presets, AreValidAndFindable)
{
    for (const Layout* p : presets) {
        EXPECT_TRUE(p->validate().ok()) << p->name;
        EXPECT_LE(p->total_bits(), 63u) << p->name;
        EXPECT_EQ(find_preset(p->name, std::strlen(p->name)), p);
    }
    EXPECT_EQ(find_preset("snow", 4), nullptr);
    EXPECT_EQ(find_preset("snowflakes", 10), nullptr);
}

// Tweet 204697221847986177, created "Mon May 21 22:16:35 +0000 2012".
TEST(Presets, TwitterTweet)
{
    const Decoded d = decode(twitter_layout, 204697221847986177);
    EXPECT_EQ(d.unix_ms, 1337638595436);
    EXPECT_EQ(d.shard, 35);  // datacenter 1, worker 3
    EXPECT_EQ(d.sequence, 1);
}

// Discord's documented examples.
TEST(Presets, DiscordSnowflakes)
{
    Decoded d = decode(discord_layout, 175928847299117063);
    EXPECT_EQ(d.unix_ms, 1462015105796);  // 2016-04-30 11:18:25.796 UTC
    EXPECT_EQ(d.shard, 32);               // worker 1, process 0
    EXPECT_EQ(d.sequence, 7);
    d = decode(discord_layout, 105484726235607040);
    EXPECT_EQ(d.unix_ms, 1445219918546);  // 2015-10-19 01:58:38.546 UTC
    d = decode(discord_layout, 90339695967350784);
    EXPECT_EQ(d.unix_ms, 1441609061949);  // worker 0, process 3, increment 0
    EXPECT_EQ(d.shard, 3);
    EXPECT_EQ(d.sequence, 0);
}

// Icicle's own test vector: time 1489959427000, shard 789, sequence 456.
TEST(Presets, IcicleTestVector)
{
    const Decoded d = decode(icicle_layout, 143322835047240136);
    EXPECT_EQ(d.unix_ms, 1489959427000);
    EXPECT_EQ(d.shard, 789);
    EXPECT_EQ(d.sequence, 456);
    int64_t id = 0;
    Status st;
    ASSERT_TRUE(layout_compose(icicle_layout, 1489959427000, 789, 456, &id, &st));
    EXPECT_EQ(id, 143322835047240136);
}

// Instagram media posted 2020-08-26T13:43:27Z and 2020-08-25T13:52:46Z.
TEST(Presets, InstagramMedia)
{
    Decoded d = decode(instagram_layout, 2384288897814875714);
    EXPECT_EQ(d.unix_ms, 1598449407313);
    EXPECT_EQ(d.shard, 2675);
    EXPECT_EQ(d.sequence, 578);
    d = decode(instagram_layout, 2383568809444681765);
    EXPECT_EQ(d.unix_ms, 1598363566090);
    EXPECT_EQ(d.shard, 2474);
    EXPECT_EQ(d.sequence, 37);
}

// The Instagram engineering post's worked example: 1387263000 ms after the
// epoch, shard 1341, sequence 5001 % 1024 = 905.
TEST(Presets, InstagramBlogExample)
{
    const int64_t id = (int64_t(1387263000) << 23) | (1341 << 10) | 905;
    const Decoded d = decode(instagram_layout, id);
    EXPECT_EQ(d.unix_ms, instagram_layout.epoch_ms + 1387263000);
    EXPECT_EQ(d.shard, 1341);
    EXPECT_EQ(d.sequence, 905);
}

TEST(Layouts, ComposeDecodeRoundTripsAtFieldEdges)
{
    for (const Layout* p : presets) {
        const int64_t last_ms = p->ms_of_tick(int64_t(p->time_max()));
        for (int64_t ms : {p->epoch_ms, p->epoch_ms + 1, last_ms})
            for (int64_t shard : {int64_t(0), int64_t(p->shard_max())})
                for (int64_t seq : {int64_t(0), int64_t(p->sequence_max())}) {
                    if (ms == p->epoch_ms && shard == 0 && seq == 0)
                        continue;  // the one all-zero ID is 0, which no generator gives
                    int64_t id = 0;
                    Status st;
                    ASSERT_TRUE(layout_compose(*p, ms, shard, seq, &id, &st)) << p->name << st.message;
                    EXPECT_GT(id, 0) << p->name;
                    const Decoded d = decode(*p, id);
                    EXPECT_EQ(d.unix_ms, ms);
                    EXPECT_EQ(d.shard, shard);
                    EXPECT_EQ(d.sequence, seq);
                }
    }
}

TEST(Layouts, ComposeRejectsFieldsOutOfRange)
{
    int64_t id = 0;
    Status st;
    EXPECT_FALSE(layout_compose(snowflake_layout, snowflake_layout.epoch_ms - 1, 0, 0, &id, &st));
    EXPECT_NE(std::strstr(st.message, "before"), nullptr);
    const int64_t end_ms = snowflake_layout.ms_of_tick(int64_t(snowflake_layout.time_max()) + 1);
    EXPECT_FALSE(layout_compose(snowflake_layout, end_ms, 0, 0, &id, &st));
    EXPECT_NE(std::strstr(st.message, "past the end"), nullptr);
    EXPECT_FALSE(layout_compose(snowflake_layout, end_ms - 1, 1024, 0, &id, &st));
    EXPECT_NE(std::strstr(st.message, "0..1023"), nullptr) << st.message;
    EXPECT_FALSE(layout_compose(instagram_layout, instagram_layout.epoch_ms, 0, 1024, &id, &st));
    EXPECT_NE(std::strstr(st.message, "0..1023"), nullptr) << st.message;
    EXPECT_FALSE(layout_compose(instagram_layout, instagram_layout.epoch_ms, -1, 0, &id, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
}

TEST(Layouts, DecodeRejectsImpossibleIds)
{
    Decoded d{};
    Status st;
    EXPECT_FALSE(layout_decode(snowflake_layout, 0, &d, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
    EXPECT_FALSE(layout_decode(snowflake_layout, -1, &d, &st));
    constexpr Layout js = Layout::named("js").epoch(0).unit(1).time(41).shard(4).sequence(8);  // 53 bits
    EXPECT_TRUE(layout_decode(js, (int64_t(1) << 53) - 1, &d, &st));
    EXPECT_FALSE(layout_decode(js, int64_t(1) << 53, &d, &st));
    EXPECT_EQ(st.error, Error::invalid_parameter);
}

TEST(Layouts, MinIdIsTheFirstIdOfTheTick)
{
    int64_t id = 0;
    Status st;
    ASSERT_TRUE(layout_min_id(snowflake_layout, snowflake_layout.epoch_ms + 5, &id, &st));
    EXPECT_EQ(id, int64_t(5) << 22);
    ASSERT_TRUE(layout_min_id(snowflake_layout, 0, &id, &st));
    EXPECT_EQ(id, 0) << "before the epoch every ID qualifies";
    constexpr Layout secs = Layout::named("secs").epoch(1000).unit(1000).time(30).shard(3).sequence(5);
    ASSERT_TRUE(layout_min_id(secs, 3999, &id, &st));
    EXPECT_EQ(id, int64_t(2) << 8) << "floored to its one-second tick";
    EXPECT_FALSE(layout_min_id(secs, secs.ms_of_tick(int64_t(1) << 30), &id, &st));
}

TEST(Layouts, RangeIdsCoverExactlyTheTicksOfTheRange)
{
    int64_t lo = 0, hi = 0;
    const int64_t e = snowflake_layout.epoch_ms;
    layout_range_ids(snowflake_layout, true, e + 10, true, e + 20, &lo, &hi);
    EXPECT_EQ(lo, int64_t(10) << 22);
    EXPECT_EQ(hi, (int64_t(21) << 22) - 1);
    layout_range_ids(snowflake_layout, false, 0, false, 0, &lo, &hi);
    EXPECT_EQ(lo, 1);
    EXPECT_EQ(hi, INT64_MAX);
    layout_range_ids(snowflake_layout, true, 0, true, e - 1, &lo, &hi);
    EXPECT_GT(lo, hi) << "entirely before the epoch: empty";
    layout_range_ids(snowflake_layout, true, e + (int64_t(1) << 41), false, 0, &lo, &hi);
    EXPECT_GT(lo, hi) << "entirely after the end: empty";
}

TEST(Layouts, TraceRangeIdsWithinAWrapPeriod)
{
    int64_t lo = 0, hi = 0;
    const int64_t s = 1795000000;
    trace_range_ids(true, s * 1000, true, s * 1000 + 5999, &lo, &hi);
    EXPECT_EQ(lo, int64_t(trace_layout.compose(uint64_t(s), 0, 1)));
    EXPECT_EQ(hi, int64_t(trace_layout.compose(uint64_t(s + 5), 65535, trace_layout.sequence_max())));
    const int64_t wrap = (s | ((int64_t(1) << 25) - 1)) + 1;  // a second whose low 25 bits are 0
    trace_range_ids(true, (wrap - 10) * 1000, true, (wrap + 10) * 1000, &lo, &hi);
    EXPECT_EQ(lo, 1);
    EXPECT_EQ(hi, INT64_MAX) << "crosses the wrap: every TraceId";
    trace_range_ids(true, 0, false, 0, &lo, &hi);
    EXPECT_EQ(hi, INT64_MAX);
}
