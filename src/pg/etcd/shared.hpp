// The etcd claim's part of the node's shared memory (src/pg/state/shmem.hpp,
// shmem_part()): what the coordinator worker (src/pg/etcd/worker/start.cpp)
// publishes and the generators' side (src/pg/etcd/id_source.cpp) and
// shardid_coordination() (src/pg/functions/coordination.cpp) read.
//
// Locking: the claim itself is atomics (the id held, its generation, the
// fence deadline, the window's end), written by the worker only, read by
// generators without a lock; `mutex` (a spinlock, held for a few copies
// only) guards the text and counts below it. Generators wait for a new
// claim or a counter value on `changed`, interruptibly.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/state/node_state.hpp"
#include "pg/base/fence_clock.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/spin.h"
}

namespace shardid::pg {

struct EtcdShared {
    std::atomic<int> held;               // the node id held, -1: none
    std::atomic<uint64_t> generation;    // changes whenever the claim does (never 0)
    std::atomic<int64_t> fence_ms;       // fence-clock ms (fence_clock_ms()): IDs only before it
    std::atomic<int64_t> window_end_ms;  // wall ms: IDs only in ticks starting before it
    std::atomic<int64_t> floor_ms;       // the mark found at the claim: IDs above it
    std::atomic<int64_t> need_ms;        // the latest tick a generator found outside the window
    // fence-clock ms: shard values are issued only before it, the fence of
    // the last renewal after which the keys held were re-checked
    // (src/pg/etcd/worker/confirm.cpp).
    std::atomic<int64_t> values_until_ms;
    // fence-clock ms: etcd's history under the prefix settles by then at the
    // latest (a new prefix, or etcd lost its data; 0: it settled). A
    // generator waits through it, whatever shardid.etcd_wait says: the wait
    // is bounded, and ends with the claim.
    std::atomic<int64_t> settling_until_ms;
    // Counter values (DecimalId generator ids, call-number run ids) are used
    // only under this epoch: the worker moves it when the values this node
    // holds could not be re-published before a new history of etcd's data
    // settled (another node may be handed them), and each user takes new
    // ones (src/pg/functions/counters.cpp).
    std::atomic<uint64_t> counters_epoch;
    // Per counter floor of the node state (NodeCounter, by its index in
    // node_state_fields; other entries unused): a value taken from etcd for
    // a backend (-1: none), and whether a backend wants one.
    std::atomic<int64_t> counter_ready[node_state_field_count];
    std::atomic<int> counter_want[node_state_field_count];
    // Run ids come in key eras (src/core/callnum.hpp): the fingerprint of
    // the call-number key a backend wants a run id for (set before
    // counter_want), and the key the run id in counter_ready was taken for
    // (set before it: a backend reads it before and after taking the value,
    // and uses the value only when both are its key). run_refused: 1 when
    // no era was left for the key run_refused_key (0: none), cleared by a
    // run id taken.
    std::atomic<int64_t> run_key_want;
    std::atomic<int64_t> run_ready_key;
    std::atomic<int64_t> run_refused;
    std::atomic<int64_t> run_refused_key;
    // The cluster's call-number key (<prefix>/call_number_key, recorded only
    // by a superuser's shardid_set_call_number_key()): backends ask by
    // taking a number from call_key_asked; the worker reads etcd, stores the
    // fingerprint in call_key_cluster (0: none recorded) and then the number
    // it served in call_key_served. call_key_set: a fingerprint to record
    // first (-1: clear it; 0: nothing to record).
    std::atomic<uint64_t> call_key_asked;
    std::atomic<uint64_t> call_key_served;
    std::atomic<int64_t> call_key_cluster;
    std::atomic<int64_t> call_key_set;
    std::atomic<Latch*> worker_latch;
    std::atomic<bool> misconfigured;      // a setting is not usable: generators fail at once (last_error says which)
    std::atomic<bool> password_in_clear;  // a password goes to an http:// endpoint
    ConditionVariable changed;            // broadcast on a new claim and a counter value
    slock_t mutex;                        // guards the fields below
    char state[32];
    char endpoint[256];
    char last_error[512];
    char lease_id[24];
    char node_id_from[320];  // "etcd: " and ClaimSettings::node_id_from, set at the worker's start
    int64_t lease_ttl_s;
    int64_t claimed_at_ms;  // wall ms
    int64_t last_ok_ms;     // wall ms of the last answer from etcd
    uint64_t requests;
    uint64_t errors;
    // Since the server started, for a scrape that comes long after an
    // episode (src/pg/etcd/worker/start.cpp, publish_state()): ms without a
    // node id while a primary, episodes and ms of `expiring`, and lease
    // renewals that came after they were due. *_since: fence-clock ms the
    // current period began (0: none open).
    int64_t not_held_ms;
    int64_t not_held_since;
    uint64_t expiring_episodes;
    int64_t expiring_ms;
    int64_t expiring_since;
    uint64_t renewals_late;
    uint64_t rechecks_failed;  // re-checks of the keys held that could not be made
    // Periods in which the node held its id but its values were not
    // confirmed (state `unconfirmed`), like not_held_*.
    int64_t unconfirmed_ms;
    int64_t unconfirmed_since;
};

// The claim's part of the node's shared memory (src/pg/state/shmem.hpp,
// shmem_part(); attached with the node state).
EtcdShared& etcd_shared();

// Within the room, from etcd_init(): the worker's registration
// (worker.cpp) and the shard values' table (claim_table.cpp).
void etcd_register_worker();
void shard_claims_init();

}  // namespace shardid::pg
