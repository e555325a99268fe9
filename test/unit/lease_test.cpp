// Unit tests of the lease arithmetic (src/core/state/time_mark.hpp), driven like the
// glue drives it (src/pg/state/persist.cpp): a generator on the engine with a fake
// clock, a "disk" that holds what was made durable, renewals early when the
// lock is free and waiting ones when an ID is not covered, and crashes.
#include <gtest/gtest.h>

#include <random>

#include "core/engine.hpp"
#include "core/state/time_mark.hpp"
#include "core/schemes.hpp"
#include "fake_clock.hpp"

using namespace shardid;
using lease::Renewal;

namespace {

constexpr int64_t t0_ms = 1795000000000;  // 2026-11-18
constexpr int64_t max_lead_ms = 120000;   // lets a restart with the clock 60 s back go on
constexpr Layout ms_layout = Layout::named("ms").epoch(1577836800000).unit(1).time(41).shard(10).sequence(12);
constexpr Layout hourly = Layout::named("hourly").epoch(1577836800000).unit(3600000).time(30).shard(4).sequence(12);

// One node: its slot in memory, and its durable marks (the state file).
struct Node {
    SlotState slot{};
    int64_t until_ms = 0;    // the durable time mark
    uint64_t word_mark = 0;  // the durable mark of a coarse layout
    int renewals = 0;        // durable writes
    int waited = 0;          // renewals a generator had to wait for
    bool lock_free = true;   // early renewals find the state lock free

    void renew(Renewal r, bool* done)
    {
        *done = r == Renewal::must || (r == Renewal::early && lock_free);
        if (*done) {
            renewals++;
            waited += r == Renewal::must;
        }
    }

    // Issues an ID as a generator does: the engine, then the marks cover it.
    uint64_t issue(const Layout& layout, FakeClock& clock)
    {
        uint64_t id = 0, word = 0;
        int64_t tick_ms = 0;
        Status status;
        EXPECT_TRUE(next_id(layout, slot, clock, max_lead_ms, 1, &id, &status, &tick_ms, &word)) << status.message;
        bool done = false;
        renew(lease::time_renewal(tick_ms, until_ms), &done);
        if (done)
            until_ms = lease::time_target(tick_ms);
        if (lease::is_coarse(layout.unit_ms)) {
            renew(lease::word_renewal(layout, word, word_mark), &done);
            if (done)
                word_mark = std::max(word_mark, lease::word_target(layout, word));
            EXPECT_LE(word, word_mark) << "a coarse layout's ID above its durable mark";
        }
        EXPECT_LT(tick_ms, until_ms) << "an ID whose tick is not below the durable time mark";
        return id;
    }

    // A restart from the durable marks, as src/pg/state/shmem.cpp resumes slots.
    void restart_into(const Layout& layout, Node& n) const
    {
        n.until_ms = until_ms;
        n.word_mark = word_mark;
        if (lease::is_coarse(layout.unit_ms))
            raise_last(n.slot, word_mark);
        else
            resume_above(layout, n.slot, until_ms);
    }
};

TEST(Lease, TheTimeMarkCoversEveryIssuedTickAndIsRenewedEarly)
{
    FakeClock clock;
    clock.ms = t0_ms;
    Node node;
    std::mt19937 rng(7);
    while (clock.ms < t0_ms + 10000) {
        node.issue(ms_layout, clock);
        clock.ms += rng() % 3;  // 0 to 2 ms between IDs
    }
    // One write per half lease, and only the very first ID waited for one.
    EXPECT_GE(node.renewals, 19);
    EXPECT_LE(node.renewals, 21);
    EXPECT_EQ(node.waited, 1);
}

TEST(Lease, ABusyLockDelaysRenewalsUntilAnIdIsNotCovered)
{
    FakeClock clock;
    clock.ms = t0_ms;
    Node node;
    node.lock_free = false;
    for (int i = 0; i < 5000; i++, clock.ms += 1)
        node.issue(ms_layout, clock);
    // Every renewal then waits, once a lease: still no ID uncovered.
    EXPECT_EQ(node.waited, node.renewals);
    EXPECT_GE(node.renewals, 5);
    EXPECT_LE(node.renewals, 6);
}

TEST(Lease, ACrashAtAnyPointResumesAboveEveryIssuedIdWhateverTheClock)
{
    std::mt19937 rng(11);
    for (const Layout* layout : {&ms_layout, &trace_layout, &hourly}) {
        for (int trial = 0; trial < 50; trial++) {
            FakeClock clock;
            clock.ms = t0_ms;
            Node node;
            uint64_t highest = 0;
            const int n = 1 + int(rng() % 3000);
            for (int i = 0; i < n; i++) {
                highest = std::max(highest, node.issue(*layout, clock));
                clock.ms += rng() % 2;
            }
            clock.ms -= 60000;  // the server comes back with its clock a minute behind
            Node after;
            node.restart_into(*layout, after);
            for (int i = 0; i < 100; i++)
                ASSERT_GT(after.issue(*layout, clock), highest) << layout->name << " trial " << trial;
        }
    }
}

uint64_t last_of_tick_now(const Node& node)
{
    const uint64_t last = node.slot.last.load();
    return hourly.pack(hourly.packed_tick(last), hourly.sequence_max());
}

TEST(Lease, ACoarseLayoutsMarkRunsASixteenthOfATickAheadAndStopsAtItsEnd)
{
    EXPECT_FALSE(lease::is_coarse(1000));  // TraceId's seconds are covered by the time mark
    EXPECT_TRUE(lease::is_coarse(1001));
    EXPECT_EQ(lease::word_lease(hourly), 4096u / 16);
    const uint64_t last_of_tick = hourly.pack(5, hourly.sequence_max());
    EXPECT_EQ(lease::word_target(hourly, hourly.pack(5, 100)), hourly.pack(5, 100 + 256));
    EXPECT_EQ(lease::word_target(hourly, hourly.pack(5, 4000)), last_of_tick);
    EXPECT_EQ(lease::word_end_ms(hourly, hourly.pack(5, 7)), hourly.ms_of_tick(6));

    FakeClock clock;
    clock.ms = t0_ms;
    Node node;
    for (int i = 0; i < 4000; i++)
        node.issue(hourly, clock);
    // 4,000 IDs in one tick: the time mark once, and one write per half of
    // a 256-sequence lease until the mark reaches the end of the tick.
    EXPECT_EQ(node.renewals, 1 + 1 + (4095 - 256) / 128 + 1);
    EXPECT_EQ(node.word_mark, last_of_tick_now(node));
}

TEST(Lease, AnIdNeedsTheNewerRecordOnlyFromTheOlderMarkOn)
{
    EXPECT_EQ(lease::covering_record(t0_ms, t0_ms + 1), lease::Covering::previous);
    EXPECT_EQ(lease::covering_record(t0_ms + 1, t0_ms + 1), lease::Covering::current);
    EXPECT_EQ(lease::time_renewal(t0_ms, t0_ms + 501), Renewal::none);
    EXPECT_EQ(lease::time_renewal(t0_ms, t0_ms + 500), Renewal::early);
    EXPECT_EQ(lease::time_renewal(t0_ms, t0_ms), Renewal::must);
}

}  // namespace
