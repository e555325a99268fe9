// Node ids, DecimalId generator ids and call-number run ids from etcd
// (shardid.node_id_source = 'etcd'): the background worker that holds the
// claim (src/pg/coordinator.cpp), its part of the shared struct, and what
// generators ask of it. The rules: src/core/coord.hpp.
//
// Generators never talk to etcd: they read the claim from shared memory
// (atomics: the id held, its generation, the fence deadline on the
// monotonic clock, the window's end on the wall clock) and wait on a
// condition variable, interruptibly and for a bounded time, when there is
// none. Only the worker calls the network, outside any lock.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/layout.hpp"
#include "core/status.hpp"
#include "pg/pg.hpp"

extern "C" {
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

namespace shardid::pg {

enum class NodeIdSource : int { setting = 0, etcd = 1 };
extern int node_id_source;  // shardid.node_id_source (server start)

// The coordinator's part of the shared struct (zeroed, then coord_init()).
struct CoordShared {
    std::atomic<int> held;              // the node id held, -1: none
    std::atomic<uint64_t> generation;   // changes whenever the claim does
    std::atomic<int64_t> fence_ms;      // monotonic ms: IDs only before it
    std::atomic<int64_t> window_end_ms; // wall ms: IDs only in ticks starting before it
    std::atomic<int64_t> floor_ms;      // the mark found at the claim: IDs above it
    std::atomic<int64_t> need_ms;       // the latest tick a generator found outside the window
    std::atomic<int64_t> counter_ready[2];  // a value taken from etcd for a backend, -1: none
    std::atomic<int> counter_want[2];
    std::atomic<Latch*> worker_latch;
    ConditionVariable changed;          // broadcast on a new claim and a counter value
    slock_t mutex;                      // guards the fields below
    char state[32];
    char endpoint[256];
    char last_error[512];
    char lease_id[24];
    int64_t lease_ttl_s;
    int64_t claimed_at_ms;              // wall ms
    int64_t last_ok_ms;                 // wall ms of the last answer from etcd
    uint64_t requests;
    uint64_t errors;
};

void coord_init(CoordShared& c);

// shardid.node_id's check: in etcd mode no session, role or database value.
bool coord_check_node_id(int* newval, void** extra, GucSource source);

// Called from _PG_init: the settings, and the worker when preloading with
// shardid.node_id_source = 'etcd'.
void coord_define_settings();
void coord_register_worker();

inline bool coord_enabled() { return node_id_source == int(NodeIdSource::etcd); }

// The node id held, as the shard/node field of `layout`, and the claim's
// generation for coord_confirm(); Error::not_claimed when there is no
// valid claim (the caller waits with coord_wait(), outside guarded()).
bool coord_node_shard(const Layout& layout, uint64_t* shard, uint64_t* generation, Status* status);
// After an ID of the claim `generation` in the tick starting at tick_ms is
// covered and before it is returned: the claim is unchanged, its fence not
// passed and the tick inside its window. Otherwise the ID must not be
// returned; the caller waits (coord_wait()) and generates again.
bool coord_confirm(uint64_t generation, int64_t tick_ms, Status* status);
// Waits (interruptibly) a little for the claim to change; raises `why` once
// shardid.etcd_wait has passed since `since` (GetCurrentTimestamp()).
void coord_wait(TimestampTz since, const Status& why);

// Counters from etcd (DecimalId generator ids, call-number run ids): a
// value no node took before, above this node's floor; waits for the worker
// up to shardid.etcd_wait, then raises.
enum class NodeCounter : int;
int64 coord_take_counter(NodeCounter which);
const char* coord_counter_name(NodeCounter which);

}  // namespace shardid::pg
