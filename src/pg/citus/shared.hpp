// The Citus group fence in shared memory (src/pg/citus/fence.cpp), a part
// of the node's (src/pg/state/shmem.hpp, shmem_part()): one entry per
// database whose node ids are its Citus group id, kept by that database's
// "shardid citus fence" background worker and read by its generators
// (src/pg/citus/source.cpp).
#pragma once

#include <atomic>
#include <cstdint>

#include "pg/base/pg.hpp"

extern "C" {
#include "storage/latch.h"
#include "storage/spin.h"
}

namespace shardid::pg {

// Databases of one node that can generate under a Citus group id at once
// (each has one background worker while it generates).
constexpr int max_citus_databases = 16;

struct CitusFence {
    // The database (InvalidOid: free). Set and cleared under the struct's
    // citus_mutex; read without it.
    std::atomic<uint32_t> database;
    std::atomic<int> worker_pid;       // its worker (0: none)
    std::atomic<Latch*> worker_latch;  // set by generators that need a confirmation now
    std::atomic<int64_t> started_ms;   // fence clock: when a generator last started a worker
    std::atomic<int64_t> wanted_ms;    // fence clock: when a generator last needed the fence
    // What the coordinator last confirmed: the group (-1: none), until when
    // (fence clock: IDs only before it) and below which tick (wall-clock
    // ms, as IDs carry it: the window end recorded on the coordinator).
    // The worker stores fence_ms = 0 first and last when it changes them.
    std::atomic<int64_t> group;
    std::atomic<int64_t> fence_ms;
    std::atomic<int64_t> window_end_ms;
    // The fingerprint of the shardid.shards the coordinator recorded with
    // the current window (0: none; an explicit shard is issued only under
    // it), one it refused because it lists another node's group id, and
    // that group. The worker stores a new `declared` before it raises
    // window_end_ms; generators read the window first.
    std::atomic<uint64_t> declared;
    std::atomic<uint64_t> declared_refused;
    std::atomic<int64_t> declared_conflict;
    std::atomic<int64_t> answered_at;  // TimestampTz of the last answer (0: none)
    std::atomic<uint64_t> requests;
    std::atomic<uint64_t> errors;
    slock_t mutex;         // guards the text below
    char state[32];        // "confirmed", "waiting", "refused", "unreachable", "starting"
    char last_error[256];  // for shardid_coordination() (superusers, pg_monitor) and the log
};

struct CitusShared {
    slock_t mutex;  // guards the entries' `database`
    CitusFence fences[max_citus_databases];
};

// The attached part (nullptr until the node state is attached:
// attach_if_needed()).
extern CitusShared* citus_shared;

// Called from _PG_init: registers the part.
void citus_shmem_init();

}  // namespace shardid::pg
