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

// Keys a worker's lease of the coordinator's key ring keeps (a ring with
// more is pulled per statement beyond them: src/pg/citus/key_lease.cpp).
constexpr int max_leased_keys = 32;
// Call-number run ids a worker keeps at hand per call-number key, taken
// from the coordinator ahead of need (src/pg/citus/spare_runs.cpp).
constexpr int max_spare_keys = 4;
constexpr int max_spare_runs = 64;
struct SpareRuns {
    int64_t key;        // the call-number key's fingerprint (0: a free slot)
    int64_t wanted_ms;  // fence clock: when a backend last asked for one
    int64_t window_ms;  // fence clock: the start of the current window (a quarter fence long)
    int taken;          // runs taken from the slot in the current window
    int taken_before;   // ... and in the window before
    int n;
    int64_t runs[max_spare_runs];
};

struct LeasedKey {
    char name[64];  // the ring's names are 1 to 63 characters
    uint8_t secret[16];
};

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

    // The lease of the coordinator's key ring (PostgreSQL 16 and later:
    // src/pg/citus/key_lease.cpp), renewed by the same worker while keys
    // are wanted. A request asks for IDs' or keys' renewal now.
    std::atomic<int64_t> keys_wanted_ms;  // fence clock: when a statement last needed a key
    std::atomic<bool> ids_asked;
    std::atomic<bool> keys_asked;
    std::atomic<int64_t> keys_answered_ms;  // fence clock of the last answer (0: none)
    slock_t keys_mutex;                     // guards what follows
    // The request's send time (fence clock; 0: no lease) and until when
    // any statement may use the keys (sent + the granted fence; sent when
    // the coordinator's ring was changing: then only statements that began
    // before the request was sent may).
    int64_t keys_sent_ms;
    int64_t keys_until_ms;
    bool keys_complete;  // the whole ring is below (else the rest is pulled per statement)
    int n_keys;
    LeasedKey keys[max_leased_keys];
    char keys_error[256];  // why the last renewal failed ("": it did not)

    // Spare call-number run ids (under keys_mutex), kept while backends
    // want them, and why the last refill failed.
    std::atomic<int64_t> runs_wanted_ms;
    std::atomic<bool> runs_asked;
    SpareRuns spares[max_spare_keys];
    char runs_error[256];
};

// On a coordinator: the key-ring leases it granted (src/pg/citus/key_lease.cpp).
struct KeyLeases {
    std::atomic<int64_t> until_ms;  // fence clock: the end of the longest lease granted
    std::atomic<int> changers;      // transactions changing a key ring, not yet ended
    slock_t mutex;                  // guards the two below
    // No ring change commits before floor_ms: leases this server granted in
    // its previous life, or another server of its timeline before a
    // promotion, end by then. The timeline last seen (the control file's at
    // start).
    int64_t floor_ms;
    uint32_t timeline;
};

struct CitusShared {
    slock_t mutex;  // guards the entries' `database`
    CitusFence fences[max_citus_databases];
    KeyLeases leases;
};

// The attached part (nullptr until citus_shared_attach()).
extern CitusShared* citus_shared;
// Attaches the part with the node state unless done; ereports when the
// server has no room for it (not preloaded, out of the slack).
CitusShared* citus_shared_attach();

// Called from _PG_init: registers the part.
void citus_shmem_init();

}  // namespace shardid::pg
