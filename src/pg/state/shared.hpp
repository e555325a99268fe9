// The node's shared struct, for the files that work on it:
//   src/pg/state/shmem.cpp    the struct, attaching it, layout slots, DecimalId entries
//   src/pg/state/persist.cpp  the persistence protocol: covering IDs with durable
//                       marks (src/core/state/time_mark.hpp), counter floors, replay,
//                       waiting for the synchronous standbys
//   src/pg/functions/node_status.cpp   shardid_status()
//
// Locking rules (who guards what, and in which order):
//   - AddinShmemInitLock: attaching the struct (PostgreSQL's lock for
//     ShmemInitStruct); held for nothing else once the struct is there.
//   - slots_lock (tranche "shardid"): allocating layout slots (each slot's
//     shape and name, then n_used), raising every slot to a claim floor, and
//     DecimalId database entries. Held only for memory work; no other lock is
//     taken under it. A slot is filled in under it before n_used publishes
//     it (see Shared::n_used).
//   - The WAL record of a node state is inserted under state_lock and
//     flushed (and confirmed by synchronous standbys) by confirm_covered()
//     outside any lock, before an ID it covers is returned.
//   - state_lock (tranche "shardid"): serializes writers of the persisted
//     node state (src/pg/state/state_file.hpp): lease_until_ms, counter_floors
//     and every slot's `persisted` word change only under it, and
//     only after the file that covers the new value is durable. Held for
//     memory work and that one file write; never while waiting for a
//     heavyweight lock, and never together with slots_lock.
//   - Each slot's SlotState: lock-free atomics (the engine's CAS).
//   - DecimalId: each database's counter word is an atomic; taking a new
//     generator id is serialized by a heavyweight lock on that database's
//     generator sequence (src/pg/functions/counters.cpp), which the deadlock detector
//     sees and which a cancel interrupts.
#pragma once

#include <atomic>
#include <cstddef>

#include "core/engine.hpp"
#include "core/state/node_state.hpp"
#include "pg/base/pg.hpp"
#include "pg/state/shmem.hpp"

extern "C" {
#include "access/xlogdefs.h"
#include "storage/lwlock.h"
}

namespace shardid::pg {

// Why a generation was refused a shard value (shardid_shard_refusals()).
enum class ClaimRefusal : int {
    held_elsewhere,
    edited_by_hand,
    not_claimed_in_time,
    outside_shards,
    table_full,
    count
};
constexpr const char* claim_refusal_names[] = {"held by another node", "keys edited by hand", "not claimed in time",
                                               "outside shardid.shards", "claim table full"};
static_assert(sizeof claim_refusal_names / sizeof *claim_refusal_names == size_t(ClaimRefusal::count),
              "a name for every cause");

// Why a generation of any layout was refused, counted since the server
// started (shardid_coordination()): it waited shardid.etcd_wait for the
// coordinator in vain (no node id held, the claim lost, the window not
// moved), the clock ran ahead of shardid.max_clock_lead, or the node's
// settings are not usable.
enum class GenerationRefusal : int { waiting, clock_lead, misconfigured, count };

struct Slot {
    SlotState state;  // first, so it keeps the slot's 64-byte alignment
    Shape shape;
    char name[max_name_len + 1];      // the layout that first claimed the slot, for shardid_status()
    Oid database;                     // the database that first claimed it (InvalidOid: restored from the node state)
    std::atomic<uint64_t> persisted;  // coarse layouts: the persisted per-layout mark (0: none, or retired)
    std::atomic<uint64_t> mark_lsn;   // coarse layouts: the end of the WAL record of that mark (0: none)
};
static_assert(offsetof(Slot, state) == 0, "a SlotState pointer is its Slot's address");

struct Shared {
    uint32_t magic;  // written last by attach_locked(), checked by every attach
    // Slots in use: a slot is filled in under slots_lock before it is
    // published here (release), so a reader that loads n_used (acquire), with
    // or without a lock, sees whole slots; shape and name never change once
    // published.
    std::atomic<int> n_used;
    int tranche;
    bool state_unreadable;                  // the state file could not be read: generation refuses
    std::atomic<int64_t> restart_floor_ms;  // the mark found at start-up, or replayed since: new slots resume above it
    std::atomic<int64_t> lease_until_ms;    // the persisted mark: every issued tick starts before it
    std::atomic<int64_t> retired_ms;        // NodeState::retired_ms: coarse shapes without a mark resume after it
    // The highest mark in etcd that a claim of the node id by this data
    // directory started above (NodeState::claim_floor_ms, 0: none;
    // src/pg/etcd/worker/node_claim.cpp): every slot, new ones too, resumes above the
    // tick that contains it. Read from the state file at start (a clean
    // restart finds its own mark and raises nothing), raised under
    // slots_lock, persisted with the node state, never in WAL.
    std::atomic<int64_t> claim_floor_ms;
    // NodeState::fleet_ttl_ms: the longest lease TTL the coordinator knows
    // the fleet under its prefix to use (src/pg/etcd/worker/history.cpp); read
    // from the state file at start, raised by the coordinator, persisted
    // with the node state, never in WAL.
    std::atomic<int64_t> fleet_ttl_ms;
    // Which WAL record covers an ID (see confirm_covered()): the record that
    // set lease_until_ms (cur_lsn), and the one before it with the mark it
    // set (prev_lsn, prev_until_ms), which still covers the ticks before
    // that mark: the mark is renewed half a lease early, so IDs need the
    // older, long replicated record until the newer one is half a lease old.
    // (prev_until_ms, prev_lsn) change together under a sequence counter
    // (odd while they change), read without a lock.
    std::atomic<uint64_t> lease_version;
    std::atomic<int64_t> prev_until_ms;
    std::atomic<uint64_t> prev_lsn;
    std::atomic<uint64_t> cur_lsn;
    // Every record up to here is flushed and confirmed by the synchronous
    // standbys (when the node has any): callers that need no later one do
    // not wait.
    std::atomic<uint64_t> confirmed_lsn;
    // The node state's counter floors (DecimalId generator ids, call-number
    // run ids, ...), by their index in node_state_fields; other entries unused.
    int64 counter_floors[node_state_field_count];
    // NodeState::call_eras: the call-number key eras this node recorded as
    // the one that hands out run ids (take_call_run()), under state_lock.
    CallEras call_eras;
    // NodeState::release_token: read from the state file at start, set by
    // the coordinator at a clean release, written at the postmaster's clean
    // exit (src/pg/state/persist.cpp); never replayed from WAL.
    std::atomic<int64_t> release_token;
    int64_t release_token_at_start;
    // The node's history (NodeState::history, history_began_ms, awaiting,
    // adopted; src/pg/state/lineage.hpp): written under state_lock, and
    // histories_version is raised after every change (backends' checks of
    // their database's shardid_lineage compare it, without a lock).
    std::atomic<int64_t> history;
    int64_t history_began_ms;
    std::atomic<int64_t> awaiting;
    Histories adopted;
    std::atomic<uint64_t> histories_version;
    // Generations refused a shard value, by cause (src/pg/etcd/shard_claims.hpp).
    std::atomic<uint64_t> claim_refusals[int(ClaimRefusal::count)];
    // Generations refused, by cause (count_generation_refusal()).
    std::atomic<uint64_t> generation_refusals[int(GenerationRefusal::count)];
    LWLock state_lock;  // see the locking rules above
    LWLock slots_lock;  // likewise
    Slot slots[max_slots];
    struct {
        Oid database;
        DecimalState state;
        // With node ids from etcd, the counters' epoch its generator id was
        // taken in (EtcdShared::counters_epoch): another epoch takes a new one.
        std::atomic<uint64_t> epoch;
    } decimal[max_decimal_databases];
};

// The attached struct (nullptr until attach_if_needed()).
extern Shared* shared;

void attach_if_needed();
// ereports (XX001) if the state file could not be read at start-up.
void raise_if_corrupt();

// Why new_slot_locked() gave no slot.
enum class NoSlot { none, node_full, database_full };
// A new slot for `shape`, first claimed by `database` (InvalidOid: the
// node state's own), resumed above what its shape may have issued. Caller
// holds slots_lock (or is initialising the struct); nullptr when the node, or the database's share
// of it, is full.
Slot* new_slot_locked(const Shape& shape, const char* name, Oid database, NoSlot* why = nullptr);

// Whether a claim floor moves slots of `shape`: not a coarse layout's with
// node ids from etcd, whose IDs every value's shard mark bounds to the word
// (etcd::keeps_bound()): a node id taken over does not send a one-minute
// layout to the minute after its previous holder's window.
bool claim_floor_applies(const Shape& shape);

// Makes a slot continue above the tick of `layout` that contains floor_ms
// (0: nothing to do).
inline void claim_floor_raise(const Layout& layout, SlotState& slot, int64_t floor_ms)
{
    if (!claim_floor_applies(layout))
        return;
    const int64_t tick = floor_ms > 0 ? layout.tick_of(floor_ms) : -1;
    if (tick >= 0)
        raise_last(slot, layout.pack(uint64_t(tick), layout.sequence_max()));
}

// Raises every slot, and every slot made later, above the tick containing
// floor_ms: a new claim of the node id from etcd starts above the mark its
// previous holder recorded. Takes slots_lock.
void raise_claim_floor(int64_t floor_ms);

// The start (Unix ms) of the latest tick any slot has issued an ID in, or
// been raised to (0: none): a mark at or above it lies above every ID the
// node returned. Reads each slot's word with seq_cst (see the etcd
// source's confirm()).
int64_t highest_issued_tick_ms();

// Raises the retired floor to cover a mark whose tick is over.
void retire(const Shape& shape, uint64_t word);

// The state as it is persisted now (src/pg/state/persist.cpp). Caller holds
// state_lock.
NodeState persisted_state();
// Makes a new node state durable (src/pg/state/persist.cpp): in WAL first,
// then in the state file. Caller holds state_lock. Returns the end of the
// WAL record (0: not WAL-logged), which confirm_lsn() makes safe before
// anything the new state covers is used.
XLogRecPtr persist(const NodeState& st);
// Flushes WAL up to `need` and, with synchronous replication, waits until
// the synchronous standbys confirm it. True when it flushed or waited.
bool confirm_lsn(XLogRecPtr need);

// Copies between the counter floors of a node state and shared memory
// (src/pg/state/counter_floors.cpp); `raise` only ever raises.
void set_counter_floors(const NodeState& st, bool raise);

// The glue handles each kind of field of the node state: one time mark, one
// retired floor, and any number of counter floors.
constexpr bool node_state_fields_known()
{
    int marks = 0, retired = 0, tokens = 0, claims = 0, ttls = 0, histories = 0, began = 0, awaiting = 0;
    for (const NodeStateField& f : node_state_fields) {
        marks += f.kind == NodeStateFieldKind::time_mark;
        retired += f.kind == NodeStateFieldKind::retired_floor;
        tokens += f.kind == NodeStateFieldKind::release_token;
        claims += f.kind == NodeStateFieldKind::claim_floor;
        ttls += f.kind == NodeStateFieldKind::fleet_ttl;
        histories += f.kind == NodeStateFieldKind::history;
        began += f.kind == NodeStateFieldKind::history_began;
        awaiting += f.kind == NodeStateFieldKind::awaiting;
    }
    return marks == 1 && retired == 1 && tokens == 1 && claims == 1 && ttls == 1 && histories == 1 && began == 1 &&
           awaiting == 1;
}
static_assert(node_state_fields_known(), "the glue knows one time mark, one retired floor, one release token, one "
                                         "claim floor, one fleet TTL and one of each history field");

}  // namespace shardid::pg
