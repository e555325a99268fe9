// The clock of every fence (an etcd lease's, the Citus group fence's, a
// key lease's), read the same way by the workers that set a fence and the
// backends that check it: milliseconds since boot, counting time the
// machine spent suspended (CLOCK_BOOTTIME; CLOCK_MONOTONIC stops then), so
// a node that resumes after longer than its lease does not take its lease
// for fresh. docs/coordination.md says what no clock sees: a VM its
// hypervisor paused, whose boot clock may not advance either.
#pragma once

#include <cstdint>
#include <ctime>

namespace shardid::pg {

inline int64_t fence_clock_ms()
{
    timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace shardid::pg
