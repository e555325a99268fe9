// Shard value claims in shared memory (the rules: src/core/etcd/shard_values.hpp;
// docs/coordination.md, "Shard values"). In etcd mode a generator issues an
// ID only while this node holds the value of the ID's shard field in the
// layout's claim space (its slot): generators look a value up here and ask
// for it when it is not held (src/pg/etcd/shard_claims.cpp); the coordinator
// worker claims, keeps and releases values in etcd and publishes them here
// (src/pg/etcd/worker/values.cpp).
//
// Locking: `mutex` (a spinlock, held for a probe of the table or a few
// copies) guards giving a key to an entry, an entry's way to and from the
// free state (and in_use), and the notes. Everything else is atomics: the
// worker alone moves an entry between the other states and bumps its
// generation whenever the value stops or starts being held, and the
// table's epoch after it (bump_generation()); generators read without a
// lock and confirm after the ID is made: with the epoch alone while it has
// not moved since they saw the value held (no entry is read: the claim's
// cost per ID), else with the entry's generation.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/layout.hpp"
#include "core/status.hpp"
#include "pg/base/pg.hpp"
#include "pg/state/shared.hpp"

extern "C" {
#include "storage/spin.h"
}

namespace shardid::pg {

enum class ClaimState : int {
    free = 0,     // nobody wants it (the key stays, for the probes)
    wanted,       // a generator waits for it: the worker claims it
    held,         // held in etcd under this node's lease: IDs may use it
    busy,         // another node holds it (note: which)
    refused,      // its keys in etcd hold what shardid never writes (note: which)
    taking_over,  // claimed; its previous holder did not release it: waiting out that holder's fence
    releasing,    // being given back (idle, asked, or the claim of the node id lost)
    ahead,        // its previous holder's IDs lie beyond shardid.max_clock_lead of this node's clock (note: how far)
    undeclared,   // shardid.shards, as the coordinator last read it, does not list it: never claimed
};
const char* claim_state_name(ClaimState s);
// The refusal of a value a generator may not use now, in `state`, with the
// entry's note (src/pg/etcd/claim_words.cpp): releasing is a value
// shardid.shards no longer lists (the only way a generator is told of one).
Status claim_refused(ClaimState state, const char* note, uint64_t value, const char* layout);
// The refusal of a value for a full pool or share: whose 1 the node's,
// 2 the database's, 3 the role's.
Status claim_table_full(int whose, int capacity);

// One value's entry. Generators read the first fields on every ID: they
// share a cache line (the entry is aligned to one), and the note lives
// apart (claim_note()), so a claim table of Instagram's 8,192 values stays
// dense in the caches.
struct alignas(64) ShardClaim {
    std::atomic<uint64_t> key;  // claim_key(slot, value); 0: never used
    std::atomic<uint64_t> generation;
    // Coarse layouts (etcd::keeps_bound()): no ID with the value above this
    // word, the bound its mark in etcd records (UINT64_MAX: none kept);
    // stored by the worker once etcd has it. A generator that needs more
    // raises `bound_need` and waits for the worker.
    std::atomic<uint64_t> bound;
    std::atomic<int64_t> used_ms;  // wall ms of the last ID (its tick), to 100 ms
    std::atomic<int> state;        // ClaimState
    std::atomic<bool> own_id;      // the value is this node's id: kept while the node id is
    // shardid.shards declares it (etcd mode: the node's logical shards):
    // claimed with the rest of the set and kept while declared; no longer
    // declared after a reload: given back (the worker's flags).
    std::atomic<bool> declared;
    std::atomic<bool> undeclared;
    // Under the mutex: whether it counts in the pool (not the node's own
    // id), and the shares it counts against (-1: none: the node's own id,
    // or a value shardid.shards declares, which the operator chose for the
    // whole node); see ShardClaims.
    bool pooled;
    int16 database_share;
    int16 role_share;
    // The rest: the worker's, and shardid_shard_claims()'.
    std::atomic<int64_t> wanted_ms;  // fence clock: when a generator last asked for it
    std::atomic<int64_t> floor_ms;   // the floor it was claimed above (wall ms)
    std::atomic<int64_t> since_ms;   // wall ms: held since
    std::atomic<uint64_t> bound_need;
    std::atomic<uint64_t> raised;  // the word the slot was raised above at the claim (its mark's word)
};
static_assert(offsetof(ShardClaim, role_share) < 64, "what generators read is in the entry's first cache line");
// What an entry's note holds, under the mutex: the holder (busy) or the
// key that is wrong (refused), or how far ahead (ahead).
constexpr size_t claim_note_size = 128;

// Who holds how much of the pool, under the mutex: a database holds at
// most half of it, a role other than a superuser at most a quarter (at
// least one each), so that
// no role or database can take what others need; the node's own ids are
// outside the pool (one per layout shape at most).
constexpr int claim_share_slots = 128;
struct ClaimShare {
    Oid oid;  // InvalidOid: unused
    int count;
};

struct ShardClaims {
    slock_t mutex;
    int capacity;             // shardid.max_shard_claims: entries in the pool at most
    int size;                 // the table's length, a power of two of at least 1.5 times the capacity and the slots
    std::atomic<int> in_use;  // entries in the pool (not free, not the node's own id)
    // Moves after every change of any entry's generation (never 0): a
    // value seen held while it was E is held with the generation seen then
    // while it is still E. In a cache line of its own, read on every ID.
    alignas(64) std::atomic<uint64_t> epoch;
    char epoch_line[64 - sizeof(std::atomic<uint64_t>)];
    ClaimShare databases[claim_share_slots];
    ClaimShare roles[claim_share_slots];
    ShardClaim entries[FLEXIBLE_ARRAY_MEMBER];  // `size` of them, then as many notes (claim_note())
};
// An entry's note (the caller holds the table's mutex).
char* claim_note(const ShardClaim& e);

// Every change of an entry's generation: after the change of its state
// that goes with it, the generation, then the table's epoch (seq_cst: a
// generator that read the old epoch before it saw the entry held sees the
// new one, or the new generation, before it returns an ID).
inline void bump_generation(ShardClaims* t, ShardClaim& e)
{
    e.generation.fetch_add(1, std::memory_order_seq_cst);
    t->epoch.fetch_add(1, std::memory_order_seq_cst);
}
// Caller holds the mutex: gives an entry back to the pool and its shares.
void release_shares_locked(ShardClaims* t, ShardClaim* e);

// The table (nullptr without a coordinator: shardid.node_id_source is not
// etcd, or shardid is not preloaded; src/pg/etcd/claim_table.cpp makes
// it). claims_table is the same, for the generators' side in this room.
ShardClaims* shard_claims();
extern ShardClaims* claims_table;
// Called from _PG_init when preloading: asks for the table's shared memory
// and makes it in the postmaster's shmem hooks.
void shard_claims_init();

inline uint64_t claim_key(int slot_index, uint64_t value)
{
    return (uint64_t(slot_index) + 1) << 32 | (value & 0xffffffffu);
}
inline int claim_slot(uint64_t key) { return int(key >> 32) - 1; }
inline int64_t claim_value(uint64_t key) { return int64_t(key & 0xffffffffu); }

// The generators' side (never ereports; runs inside guarded()). Whether the
// value `value` of the slot `slot` is held: its entry and generation in
// *index and *generation; otherwise a failure: Error::not_claimed (the
// worker was asked for it: wait and ask again), Error::limit_exceeded (the
// table is full).
// `declared`: an explicit shard shardid.shards declares (in the pool, in
// no role's or database's share).
struct SourceTicket;
bool hold_claim(SlotState* slot, const Layout& layout, uint64_t value, bool own_id, bool declared, SourceTicket* ticket,
                Status* status);
// Whether the value is held as this backend last saw it (the claim table's
// epoch unchanged since, a layout of ticks up to a second): the ticket
// filled as hold_claim() fills it; false says nothing (hold_claim()).
bool held_cached(SlotState* slot, const Layout& layout, uint64_t value, SourceTicket* ticket);
// The worker: asks for value `value` of slot `slot` as one shardid.shards
// declares (claimed with the rest of the set, kept while declared); false
// when the pool has no room for it.
bool want_declared(int slot, uint64_t value);
// Before hold_claim(), outside guarded(): whether the caller is a
// superuser (exempt from the role's share, not the database's).
void set_claim_caller(bool superuser);
// After an ID is made and before it is returned: the value is still held
// under the same generation (the table's epoch unchanged since, or else the
// entry's generation), and the ID's packed word is within the bound its
// mark in etcd records (otherwise Error::not_claimed: the worker was asked
// to move it). `used_ms` (wall ms) is when it was last used.
bool confirm_claim(const SourceTicket& ticket, int64_t used_ms, uint64_t word, Status* status);
// The entry of `key`, or -1 (the caller checks its key again before use).
int find_claim(uint64_t key);
// Outside guarded(), before a refusal for a full pool or share is raised:
// names the database and role that hold the most of it in the detail.
void name_claim_holders(Status* status);

}  // namespace shardid::pg
