// The wall clock behind a small interface, so tests can inject a fake one.
//
// A Clock has now_ms() (Unix milliseconds) and pause(ms_left) (called while
// waiting for the next tick, with the milliseconds still to go; it returns
// false to give the wait up). SystemClock is the core's own, for tests and
// benchmarks; inside PostgreSQL the glue's clock waits on the latch.
#pragma once

#include <cstdint>
#include <ctime>
#include <limits>
#include <thread>

namespace shardid {

struct SystemClock {
    int64_t offset_ms = 0;  // added to the real time (testing aid: shardid.clock_offset_ms)
    // CLOCK_REALTIME_COARSE needs no hardware clock read, at the kernel
    // tick's resolution (1-4 ms): good enough for long ticks (TraceId's one
    // second), not for millisecond layouts, which would waste their ticks.
    bool coarse = false;

    int64_t now_ms() const
    {
        timespec ts;
        clock_gettime(coarse ? CLOCK_REALTIME_COARSE : CLOCK_REALTIME, &ts);
        return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000 + offset_ms;
    }

    // Is the coarse clock precise enough for ticks of unit_ms? (at least a
    // hundred of its steps per tick)
    static bool coarse_suits(int64_t unit_ms)
    {
        static const int64_t resolution_ns = [] {
            timespec res;
            return clock_getres(CLOCK_REALTIME_COARSE, &res) == 0 ? int64_t(res.tv_sec) * 1000000000 + res.tv_nsec
                                                                  : std::numeric_limits<int64_t>::max() / 1000;
        }();
        return resolution_ns * 100 <= unit_ms * 1000000;
    }

    // Sleep through long waits (TraceId's one-second ticks); spin through the
    // last millisecond so millisecond layouts reach their cap.
    bool pause(int64_t ms_left) const
    {
        if (ms_left > 1)
            std::this_thread::sleep_for(std::chrono::milliseconds(ms_left - 1));
        return true;
    }
};

}  // namespace shardid
