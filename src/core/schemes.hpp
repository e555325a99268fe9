// The schemes of shardid, as descriptions on top of Layout and the engine.
#pragma once

#include <cstdint>

#include "core/layout.hpp"
#include "core/status.hpp"

namespace shardid {

// TraceId (SPEC 2.1): 25-bit Unix seconds (wrapping about every 388 days),
// 16-bit node number, 22-bit counter starting at 1 in every second.
inline constexpr Layout trace_layout{"TraceId", 0, 1000, 25, 16, 22, true, 1};

struct TraceParts {
    int64_t unix_s;    // creation time, seconds since the Unix epoch
    uint32_t node_no;
    uint32_t counter;
};

// Decodes a TraceId. Its 25-bit time is resolved to the latest second not
// after near_unix_s + 1 day whose low 25 bits match.
bool trace_decode(int64_t id, int64_t near_unix_s, TraceParts* out, Status* status);

// The checks every use of a node or shard number makes against a layout's
// shard field; `what` names the value's source for the message.
bool check_shard(const Layout& layout, int64_t shard, const char* what, Status* status);

}  // namespace shardid
