// The Citus group fence (src/pg/citus/fence.cpp): a worker issues
// IDs under its group id only while the coordinator has confirmed, within
// shardid.citus_fence, that this server is the group's primary.
#pragma once

#include <cstdint>

#include "pg/base/pg.hpp"
#include "pg/citus/shared.hpp"

namespace shardid::pg {

// This database's fence entry, or nullptr when it has none. Never
// ereports; reads only.
CitusFence* citus_fence_of_database();

// Whether the entry confirms `group` now and a tick starting at tick_ms
// (-1: not asked) lies inside the window the coordinator recorded. Never
// ereports.
bool citus_fence_holds(const CitusFence* fence, int64_t group, int64_t tick_ms);

// Notes that a generator needs the fence (cheap: a store at most once a
// second). Never ereports.
void citus_fence_wanted(CitusFence* fence);

// This database's entry, made when missing, with its background worker
// running (started when it is not) and woken: a generator calls it when
// the fence does not hold. Can ereport (53400: no entry or no worker free).
CitusFence* citus_fence_need();

// The entry's state and last error, copied (for errors and
// shardid_coordination()).
void citus_fence_report(CitusFence* fence, char* state, size_t state_size, char* error, size_t error_size);

}  // namespace shardid::pg
