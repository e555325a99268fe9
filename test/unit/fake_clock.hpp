// The unit tests' clock: the test moves it by hand; waiting moves it forward.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace shardid {

struct FakeClock {
    std::atomic<int64_t> ms{0};
    int pauses = 0;
    int64_t now_ms() const { return ms.load(); }
    bool give_up = false;  // pause() refuses: as an interrupted backend's clock does
    bool pause(int64_t ms_left)
    {
        pauses++;
        if (give_up)
            return false;
        ms += std::max<int64_t>(1, ms_left);
        return true;
    }
};

}  // namespace shardid
