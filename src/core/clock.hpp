// The wall clock behind a small interface, so tests can inject a fake one.
//
// A Clock has now_ms() (Unix milliseconds) and pause(ms_left) (called while
// waiting for the next tick, with the milliseconds still to go).
#pragma once

#include <cstdint>
#include <ctime>
#include <thread>

namespace shardid {

struct SystemClock {
    int64_t offset_ms = 0;  // added to the real time (testing aid: shardid.clock_offset_ms)

    int64_t now_ms() const
    {
        timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000 + offset_ms;
    }

    // Sleep through long waits (TraceId's one-second ticks); spin through the
    // last millisecond so millisecond layouts reach their cap.
    void pause(int64_t ms_left) const
    {
        if (ms_left > 1)
            std::this_thread::sleep_for(std::chrono::milliseconds(ms_left - 1));
    }
};

}  // namespace shardid
