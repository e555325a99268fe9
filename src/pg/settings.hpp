// shardid's GUCs (defined in module.cpp) and the helpers that read them.
#pragma once

#include <type_traits>

#include <cstdint>

#include "core/clock.hpp"
#include "core/layout.hpp"
#include "core/status.hpp"

namespace shardid::pg {

constexpr int node_id_unset = -1;

extern int node_id;            // shardid.node_id, node_id_unset until configured
extern int max_clock_lead_ms;  // shardid.max_clock_lead
extern int clock_offset_ms;    // shardid.clock_offset_ms (testing aid)
extern int launch_id;          // shardid.launch_id, -1 until configured
extern int cluster_id;         // shardid.cluster_id (eight-byte ids)
extern char* call_number_key;  // shardid.call_number_key: a key-ring name
extern bool wal_log_mark;      // shardid.wal_log_mark: WAL-log the node state (when preloaded)
extern int uuidv7_shard_bits;  // shardid.uuidv7_shard_bits: the shard field's width in a UUIDv7's rand_b

// The wall clock as this backend reads it (with shardid.clock_offset_ms).
inline SystemClock wall_clock(bool coarse = false) { return SystemClock{clock_offset_ms, coarse}; }

// The clock generators use inside PostgreSQL: the wall clock, whose waits
// for the next tick sleep on the backend's latch (wait event "Extension",
// or "ShardidNextTick" from PostgreSQL 17) and give up as soon as an
// interrupt (cancel, terminate, statement_timeout, shutdown) is pending, so
// that the caller serves it with CHECK_FOR_INTERRUPTS() outside C++ scope.
// Its wait event is resolved before a generator enters guarded() (on
// PostgreSQL 17 making it can ereport), so that pause() calls nothing that
// can. WaitLatch() itself does not ereport; on postmaster death it exits the
// process (WL_EXIT_ON_PM_DEATH).
struct LatchClock : SystemClock {
    uint32_t wait_event;
    bool pause(int64_t ms_left) const;
};
static_assert(std::is_trivially_destructible_v<LatchClock>,
              "a clock lives inside guarded(): nothing there may need a destructor that an ereport would skip");

// This node's id as the shard/node field of `layout`, or a failure (55000
// when unset, 22003 when it does not fit the field): shardid.node_id, or
// with shardid.node_id_source = etcd the id claimed from etcd, and then in
// *claim the claim's generation for coord_confirm() (0 otherwise;
// Error::not_claimed when the node holds none: the caller waits).
bool node_shard(const Layout& layout, uint64_t* shard, uint64_t* claim, Status* status);

}  // namespace shardid::pg
