// Unit tests of the pure C++ core: layouts, the engine's clock rules, TraceId.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/engine.hpp"
#include "core/schemes.hpp"
#include "fake_clock.hpp"

using namespace shardid;

namespace {

// A small millisecond layout whose sequence runs out quickly.
constexpr Layout tiny = Layout::named("tiny").epoch(1000).unit(1).time(20).shard(4).sequence(3);

constexpr int64_t day_ms = 86400000;
constexpr int64_t t0_ms = 1795000000000;  // 2026-11-18

struct Engine : ::testing::Test {
    SlotState slot{};
    FakeClock clock;
    Status status;

    uint64_t next(const Layout& layout, uint64_t shard, int64_t max_lead_ms = 10000)
    {
        uint64_t id = 0;
        EXPECT_TRUE(next_id(layout, slot, clock, max_lead_ms, shard, &id, &status)) << status.message;
        return id;
    }
};

}  // namespace

TEST(Layout, TraceIdBitPositions)
{
    const uint64_t id = trace_layout.compose(0x1ABCDEF, 0xBEEF, 0x3FFFFF);
    EXPECT_EQ(id >> 63, 0u);
    EXPECT_EQ((id >> 38) & 0x1FFFFFF, 0x1ABCDEFu);
    EXPECT_EQ((id >> 22) & 0xFFFF, 0xBEEFu);
    EXPECT_EQ(id & 0x3FFFFF, 0x3FFFFFu);
    const Fields f = trace_layout.decompose(id);
    EXPECT_EQ(f.tick, 0x1ABCDEFu);
    EXPECT_EQ(f.shard, 0xBEEFu);
    EXPECT_EQ(f.sequence, 0x3FFFFFu);
    EXPECT_EQ(trace_layout.total_bits(), 63u);
}

TEST(Layout, TraceIdTimeFieldWraps)
{
    const uint64_t period = uint64_t(1) << 25;
    EXPECT_EQ(trace_layout.decompose(trace_layout.compose(period + 5, 1, 1)).tick, 5u);
    EXPECT_EQ(trace_layout.compose(period - 1, 0, 1) >> 38, period - 1);
    EXPECT_EQ(trace_layout.compose(period, 0, 1) >> 38, 0u);
}

TEST(Layout, TickOfUsesFloorDivision)
{
    constexpr Layout secs = Layout::named("secs").epoch(1000).unit(1000).time(30).shard(1).sequence(1);
    EXPECT_EQ(secs.tick_of(1000), 0);
    EXPECT_EQ(secs.tick_of(1999), 0);
    EXPECT_EQ(secs.tick_of(2000), 1);
    EXPECT_EQ(secs.tick_of(999), -1);
    EXPECT_EQ(secs.tick_of(0), -1);
    EXPECT_EQ(secs.tick_of(-1), -2);
    EXPECT_EQ(secs.ms_of_tick(3), 4000);
}

TEST(Layout, ValidateRejectsBadShapes)
{
    EXPECT_TRUE(trace_layout.validate().ok());
    EXPECT_TRUE(tiny.validate().ok());
    Layout l = tiny;
    l.unit_ms = 0;
    EXPECT_EQ(l.validate().error, Error::invalid_parameter);
    l = tiny;
    l.time_bits = 40, l.shard_bits = 13, l.sequence_bits = 10;  // Instagram within a positive bigint
    EXPECT_TRUE(l.validate().ok());
    l.time_bits = 41;  // the original's 41st time bit is the sign bit
    EXPECT_EQ(l.validate().error, Error::invalid_parameter);
    EXPECT_NE(std::strstr(l.validate().message, "63"), nullptr) << l.validate().message;
    l = tiny;
    l.sequence_bits = 0;
    EXPECT_FALSE(l.validate().ok());
    l = tiny;
    l.time_bits = 62, l.shard_bits = 0, l.sequence_bits = 1, l.unit_ms = 1000000;
    EXPECT_FALSE(l.validate().ok()) << "2^62 ticks of 1000 s overflow a bigint of milliseconds";
    l = tiny;
    l.epoch_ms = -1;
    EXPECT_FALSE(l.validate().ok());
}

TEST_F(Engine, CounterStartsAtOneAndNeverZero)
{
    clock.ms = t0_ms;
    const uint64_t first = next(trace_layout, 7);
    EXPECT_EQ(trace_layout.decompose(first).sequence, 1u);
    EXPECT_EQ(trace_layout.decompose(first).shard, 7u);
    EXPECT_EQ(trace_layout.decompose(first).tick, uint64_t(t0_ms / 1000) & trace_layout.time_max());
    clock.ms += 1000;
    EXPECT_EQ(trace_layout.decompose(next(trace_layout, 7)).sequence, 1u);
}

TEST_F(Engine, SequenceCountsUpWithinATickAndRestartsOnTheNext)
{
    clock.ms = 5000;
    EXPECT_EQ(next(tiny, 3), tiny.compose(4000, 3, 0));
    EXPECT_EQ(next(tiny, 3), tiny.compose(4000, 3, 1));
    EXPECT_EQ(next(tiny, 3), tiny.compose(4000, 3, 2));
    clock.ms = 5001;
    EXPECT_EQ(next(tiny, 3), tiny.compose(4001, 3, 0));
}

TEST_F(Engine, AWaitTheClockGivesUpFailsAsInterruptedAndIssuesNothing)
{
    clock.ms = 5000;
    for (int i = 0; i < 8; i++)
        next(tiny, 1);
    const uint64_t before = slot.last.load();
    clock.give_up = true;
    uint64_t id = 0;
    Status status;
    EXPECT_FALSE(next_id(tiny, slot, clock, 10000, 1, &id, &status));
    EXPECT_EQ(status.error, Error::interrupted);
    EXPECT_EQ(slot.last.load(), before) << "an interrupted wait leaves the state as it was";
    clock.give_up = false;
    EXPECT_EQ(next(tiny, 1), tiny.compose(4001, 1, 0)) << "and the next call carries on";
}

TEST_F(Engine, ExhaustedSequenceWaitsForTheNextTick)
{
    clock.ms = 5000;
    uint64_t prev = 0;
    for (int i = 0; i < 8; i++) {
        const uint64_t id = next(tiny, 1);
        EXPECT_GT(id, prev);
        prev = id;
    }
    EXPECT_EQ(clock.pauses, 0);
    const uint64_t id = next(tiny, 1);  // sequence 0..7 used: must wait for tick 4001
    EXPECT_EQ(id, tiny.compose(4001, 1, 0));
    EXPECT_GE(clock.pauses, 1);
    EXPECT_EQ(clock.ms.load(), 5001) << "waited exactly into the next tick, not beyond";
    EXPECT_EQ(slot.waits.load(), 1u);
    EXPECT_EQ(slot.ahead.load(), 0u);
}

TEST_F(Engine, ClockStepBackContinuesFromTheLastTick)
{
    clock.ms = t0_ms;
    const uint64_t before = next(trace_layout, 2);
    clock.ms = t0_ms - 60000;  // the wall clock steps back a minute
    const uint64_t after = next(trace_layout, 2);
    EXPECT_GT(after, before);
    EXPECT_EQ(trace_layout.decompose(after).tick, trace_layout.decompose(before).tick);
    EXPECT_EQ(trace_layout.decompose(after).sequence, 2u);
}

TEST_F(Engine, StepBackWithSequenceUsedUpMovesTheLogicalClockAhead)
{
    clock.ms = 10000;
    for (int i = 0; i < 8; i++)
        next(tiny, 0);                  // tick 9000, sequences 0..7
    clock.ms = 9995;                    // 5 ms back
    const uint64_t id = next(tiny, 0);  // logical clock moves to tick 9001, 6 ms ahead
    EXPECT_EQ(id, tiny.compose(9001, 0, 0));
    EXPECT_EQ(slot.ahead.load(), 1u);
    EXPECT_EQ(slot.waits.load(), 0u);
    EXPECT_EQ(clock.ms.load(), 9995) << "no waiting while the clock is behind";
}

TEST_F(Engine, LeadLimitIsAnError)
{
    clock.ms = 10000;
    for (int i = 0; i < 8; i++)
        next(tiny, 0);
    clock.ms = 9990;  // advancing would lead by 11 ms
    uint64_t id = 0;
    EXPECT_FALSE(next_id(tiny, slot, clock, 10, 0, &id, &status));
    EXPECT_EQ(status.error, Error::clock_lead_exceeded);
    EXPECT_NE(std::strstr(status.message, "11 ms"), nullptr) << status.message;
    EXPECT_NE(std::strstr(status.hint, "shardid.max_clock_lead"), nullptr);
    // State is untouched by the failure: with a larger limit it continues.
    EXPECT_EQ(next(tiny, 0, 11), tiny.compose(9001, 0, 0));
}

TEST_F(Engine, LeadLimitAppliesToTraceIdSeconds)
{
    clock.ms = t0_ms;
    slot.last = trace_layout.pack(uint64_t(t0_ms / 1000), trace_layout.sequence_max());  // second used up
    clock.ms = t0_ms - 60000;
    uint64_t id = 0;
    EXPECT_FALSE(next_id(trace_layout, slot, clock, 10000, 0, &id, &status));
    EXPECT_EQ(status.error, Error::clock_lead_exceeded);
    EXPECT_TRUE(next_id(trace_layout, slot, clock, 61000, 0, &id, &status));
    EXPECT_EQ(trace_layout.decompose(id).tick, uint64_t(t0_ms / 1000 + 1) & trace_layout.time_max());
}

TEST_F(Engine, ResumeAboveTheHighWaterMarkAfterARestart)
{
    // Before the "restart": IDs up to tick 9000 (ms 10000) were issued and
    // the persisted mark is 10500 (leases run ahead of use).
    resume_above(tiny, slot, 10500);
    clock.ms = 10200;  // the clock is now earlier than the mark
    const uint64_t id = next(tiny, 2);
    EXPECT_EQ(id, tiny.compose(9501, 2, 0)) << "the first ID after the restart lies above the mark";
    uint64_t tick_ms_out = 0;
    int64_t tick_ms = 0;
    ASSERT_TRUE(next_id(tiny, slot, clock, 10000, 2, &tick_ms_out, &status, &tick_ms));
    EXPECT_EQ(tick_ms, 10501);
    // Far behind the mark, the lead limit applies.
    SlotState fresh{};
    resume_above(tiny, fresh, 70000);
    uint64_t out = 0;
    EXPECT_FALSE(next_id(tiny, fresh, clock, 10000, 2, &out, &status));
    EXPECT_EQ(status.error, Error::clock_lead_exceeded);
    // A mark before the layout's epoch means nothing of it was issued.
    SlotState untouched{};
    resume_above(tiny, untouched, 500);
    EXPECT_EQ(untouched.last.load(), 0u);
}

TEST_F(Engine, CountsIdsIssuedBehindTheCallersClock)
{
    clock.ms = 10000;
    next(tiny, 0);
    clock.ms = 9999;  // one tick behind: a race between backends looks like this, not counted
    next(tiny, 0);
    EXPECT_EQ(slot.behind.load(), 0u);
    clock.ms = 9000;  // a real step back
    next(tiny, 0);
    next(tiny, 0);
    EXPECT_EQ(slot.behind.load(), 2u);
}

TEST_F(Engine, ClockBeforeEpochIsAnError)
{
    clock.ms = 999;
    uint64_t id = 0;
    EXPECT_FALSE(next_id(tiny, slot, clock, 10000, 0, &id, &status));
    EXPECT_EQ(status.error, Error::out_of_range);
}

TEST_F(Engine, NonWrappingLayoutRunsOutOfTime)
{
    constexpr Layout brief = Layout::named("brief").epoch(0).unit(1).time(4).shard(0).sequence(2);  // ticks 0..15
    clock.ms = 15;
    next(brief, 0);
    clock.ms = 16;
    uint64_t id = 0;
    EXPECT_FALSE(next_id(brief, slot, clock, 10000, 0, &id, &status));
    EXPECT_EQ(status.error, Error::time_exhausted);
    // The end as a time a reader knows, and what to do instead.
    EXPECT_STREQ(status.detail,
                 "Its 4-bit time field ended at 1970-01-01 00:00:00.016+00 (16 ms after the Unix epoch).");
    EXPECT_NE(std::string(status.hint).find("more time bits"), std::string::npos) << status.hint;
}

TEST(UtcText, WritesWhatPostgresWritesInUtc)
{
    EXPECT_STREQ(utc_text(0).text, "1970-01-01 00:00:00+00");
    EXPECT_STREQ(utc_text(1704068248576).text, "2024-01-01 00:17:28.576+00");
    EXPECT_STREQ(utc_text(1577836804000).text, "2020-01-01 00:00:04+00");
    EXPECT_STREQ(utc_text(1577836804500).text, "2020-01-01 00:00:04.5+00");
    EXPECT_STREQ(utc_text(951782400000).text, "2000-02-29 00:00:00+00");  // a leap day of a leap century
    EXPECT_STREQ(utc_text(-1).text, "1969-12-31 23:59:59.999+00");
    EXPECT_STREQ(utc_text(4102444799999).text, "2099-12-31 23:59:59.999+00");
    EXPECT_STREQ(utc_text(253402300800000).text, "10000-01-01 00:00:00+00");
    // Every int64 fits (no overflow in the date arithmetic).
    EXPECT_NE(utc_text(INT64_MAX).text[0], '\0');
    EXPECT_NE(utc_text(INT64_MIN).text[0], '\0');
}

TEST_F(Engine, TraceIdWrapKeepsGeneratingAcrossThe25BitBoundary)
{
    const int64_t period_s = int64_t(1) << 25;
    const int64_t wrap_s = 50 * period_s;  // a second whose low 25 bits are 0
    clock.ms = (wrap_s - 1) * 1000;
    const uint64_t before = next(trace_layout, 1);
    clock.ms = wrap_s * 1000;
    const uint64_t after = next(trace_layout, 1);
    EXPECT_EQ(trace_layout.decompose(before).tick, uint64_t(period_s - 1));
    EXPECT_EQ(trace_layout.decompose(after).tick, 0u);
    // Monotonic within a wrap period only; the decoder restores the time.
    TraceParts p{};
    ASSERT_TRUE(trace_decode(int64_t(after), wrap_s, &p, &status));
    EXPECT_EQ(p.unix_s, wrap_s);
    ASSERT_TRUE(trace_decode(int64_t(before), wrap_s, &p, &status));
    EXPECT_EQ(p.unix_s, wrap_s - 1);
}

TEST(TraceDecode, ResolvesTimeNearTheReference)
{
    const int64_t now_s = t0_ms / 1000;
    const int64_t id = int64_t(trace_layout.compose(uint64_t(now_s), 9, 42));
    Status st;
    TraceParts p{};
    ASSERT_TRUE(trace_decode(id, now_s, &p, &st));
    EXPECT_EQ(p.unix_s, now_s);
    EXPECT_EQ(p.node_no, 9u);
    EXPECT_EQ(p.counter, 42u);
    // Exactly one day ahead of near is still "not after near + 1 day".
    ASSERT_TRUE(trace_decode(id, now_s - 86400, &p, &st));
    EXPECT_EQ(p.unix_s, now_s);
    // One second further and the previous wrap period is chosen.
    ASSERT_TRUE(trace_decode(id, now_s - 86401, &p, &st));
    EXPECT_EQ(p.unix_s, now_s - (int64_t(1) << 25));
    // A year later (less than one period) still resolves to the same instant.
    ASSERT_TRUE(trace_decode(id, now_s + 365 * 86400, &p, &st));
    EXPECT_EQ(p.unix_s, now_s);
}

TEST(TraceDecode, RejectsValuesThatCannotBeTraceIds)
{
    Status st;
    TraceParts p{};
    EXPECT_FALSE(trace_decode(0, 0, &p, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
    EXPECT_FALSE(trace_decode(-5, 0, &p, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
    EXPECT_FALSE(trace_decode(int64_t(trace_layout.compose(123, 4, 0)), 0, &p, &st));
    EXPECT_EQ(st.error, Error::invalid_parameter);
    EXPECT_NE(std::strstr(st.detail, "counter"), nullptr);
}

TEST(CheckShard, NamesTheRange)
{
    Status st;
    EXPECT_TRUE(check_shard(trace_layout, 0, "shard", &st));
    EXPECT_TRUE(check_shard(trace_layout, 65535, "shard", &st));
    EXPECT_FALSE(check_shard(trace_layout, 65536, "shardid.node_id", &st));
    EXPECT_EQ(st.error, Error::out_of_range);
    EXPECT_NE(std::strstr(st.message, "0..65535"), nullptr) << st.message;
    EXPECT_FALSE(check_shard(trace_layout, -1, "shard", &st));
}

TEST(EngineThreads, ContendingThreadsNeverCollide)
{
    SlotState slot{};
    struct RealishClock {
        int64_t now_ms() const { return SystemClock{}.now_ms(); }
        bool pause(int64_t) const
        {
            std::this_thread::yield();
            return true;
        }
    };
    constexpr Layout busy =
        Layout::named("busy").epoch(0).unit(1).time(44).shard(4).sequence(10);  // 1,024 per ms: waits happen
    constexpr int threads = 4, per_thread = 50000;
    std::vector<std::vector<uint64_t>> out(threads);
    std::vector<std::thread> pool;
    std::atomic<int> failures{0};
    for (int t = 0; t < threads; t++)
        pool.emplace_back([&, t] {
            RealishClock clock;
            Status st;
            for (int i = 0; i < per_thread; i++) {
                uint64_t id = 0;
                if (!next_id(busy, slot, clock, 10000, 5, &id, &st))
                    failures++;
                out[t].push_back(id);
            }
        });
    for (auto& th : pool)
        th.join();
    EXPECT_EQ(failures.load(), 0);
    std::vector<uint64_t> all;
    for (auto& v : out) {
        EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
        EXPECT_EQ(std::adjacent_find(v.begin(), v.end()), v.end()) << "strictly increasing per thread";
        all.insert(all.end(), v.begin(), v.end());
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "no duplicate across threads";
    EXPECT_GT(slot.waits.load(), 0u) << "1,024 IDs per ms must have made callers wait";
}

// A logical shard moves from a node whose clock is ahead to one whose clock
// is behind: after advance_past() with its highest ID, the new node's IDs of
// that shard sort above every ID the shard had, in the same tick or later.
TEST_F(Engine, AdvancePastMovesEveryLaterIdAboveTheMovedShard)
{
    SlotState old_node{};
    FakeClock old_clock;
    old_clock.ms = t0_ms + 15000;  // the old node is 15 s ahead
    uint64_t highest = 0;
    for (int i = 0; i < 5000; i++) {
        uint64_t id;
        ASSERT_TRUE(next_id(instagram_layout, old_node, old_clock, 10000, 5, &id, &status));
        highest = std::max(highest, id);
    }
    clock.ms = t0_ms;
    // Without it, the new node's first ID of shard 5 is below (the negative control).
    SlotState unmoved{};
    uint64_t below;
    ASSERT_TRUE(next_id(instagram_layout, unmoved, clock, 10000, 5, &below, &status));
    EXPECT_LT(below, highest);

    int64_t tick_ms = 0;
    uint64_t word = 0;
    ASSERT_TRUE(advance_past(instagram_layout, slot, int64_t(highest), clock.now_ms(), 60000, &status, &tick_ms, &word))
        << status.message;
    EXPECT_EQ(tick_ms, instagram_layout.ms_of_tick(int64_t(instagram_layout.decompose(highest).tick)));
    for (int i = 0; i < 3000; i++)
        EXPECT_GT(next(instagram_layout, 5, 60000), highest);
    // The slot never goes down: advancing past an older ID changes nothing.
    const uint64_t last = slot.last.load();
    ASSERT_TRUE(advance_past(instagram_layout, slot, int64_t(below), clock.now_ms(), 60000, &status, &tick_ms, &word));
    EXPECT_EQ(slot.last.load(), last);
}

// The review's case: past an ID of shard 5000, the next ID of shard 1 (a
// lower shard, same tick) must sort above it too: the whole tick is used.
TEST_F(Engine, AdvancePastCoversTheWholeTickForEveryShard)
{
    clock.ms = t0_ms;
    const uint64_t tick = uint64_t(instagram_layout.tick_of(t0_ms + 2000));
    const uint64_t moved = instagram_layout.compose(tick, 5000, 3);
    int64_t tick_ms = 0;
    uint64_t word = 0;
    ASSERT_TRUE(advance_past(instagram_layout, slot, int64_t(moved), clock.now_ms(), 10000, &status, &tick_ms, &word));
    EXPECT_EQ(word, instagram_layout.pack(tick, instagram_layout.sequence_max()));
    for (int shard : {0, 1, 4999, 5000, 8191})
        EXPECT_GT(next(instagram_layout, shard, 10000), moved) << shard;
}

TEST_F(Engine, AdvancePastIsBoundedByTheClockLead)
{
    clock.ms = t0_ms;
    const uint64_t ahead = instagram_layout.compose(uint64_t(instagram_layout.tick_of(t0_ms + 20000)), 5, 7);
    int64_t tick_ms = 0;
    uint64_t word = 0;
    EXPECT_FALSE(advance_past(instagram_layout, slot, int64_t(ahead), clock.now_ms(), 10000, &status, &tick_ms, &word));
    EXPECT_EQ(status.error, Error::clock_lead_exceeded);
    EXPECT_EQ(slot.last.load(), 0u);  // refused: untouched
    EXPECT_TRUE(advance_past(instagram_layout, slot, int64_t(ahead), clock.now_ms(), 30000, &status, &tick_ms, &word));
}

TEST_F(Engine, AdvancePastRefusesWhatItCannotOrder)
{
    int64_t tick_ms = 0;
    uint64_t word = 0;
    EXPECT_FALSE(advance_past(instagram_layout, slot, -1, t0_ms, 10000, &status, &tick_ms, &word));
    EXPECT_EQ(status.error, Error::out_of_range);
    EXPECT_FALSE(advance_past(tiny, slot, int64_t(1) << 27, t0_ms, 10000, &status, &tick_ms, &word));
    EXPECT_EQ(status.error, Error::out_of_range);
    EXPECT_FALSE(advance_past(trace_layout, slot, 1, t0_ms, 10000, &status, &tick_ms, &word));
    EXPECT_EQ(status.error, Error::invalid_parameter);
}
