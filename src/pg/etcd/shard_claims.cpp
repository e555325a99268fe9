// Shard value claims, the generators' side and the SQL functions
// (src/pg/etcd/shard_claims.hpp): the table in shared memory, looking a value up
// on each ID, asking the coordinator for one not held, and
// shardid_shard_claims(), shardid_shard_refusals(), shardid_release_shard().
#include "core/etcd/shard_values.hpp"
#include "pg/etcd/shard_claims.hpp"

extern "C" {
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
#include "catalog/pg_authid.h"
#include "commands/dbcommands.h"  // get_database_name() up to PostgreSQL 18
#include "utils/lsyscache.h"      // and from 19 on
#include "utils/acl.h"
}

#include "pg/source/node_source.hpp"
#include "pg/state/shmem.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/base/row.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/shared.hpp"
#include "pg/base/timeconv.hpp"
#include "pg/base/wait_event.hpp"

namespace shardid::pg {

namespace {

// The share of `oid` in `shares` (adding it when `add`), or -1.
int share_of(ClaimShare* shares, Oid oid, bool add)
{
    int unused = -1;
    for (int i = 0; i < claim_share_slots; i++) {
        if (shares[i].oid == oid)
            return i;
        if (unused < 0 && shares[i].oid == InvalidOid)
            unused = i;
    }
    if (!add || unused < 0)
        return -1;
    shares[unused] = ClaimShare{oid, 0};
    return unused;
}

// The backend's last refusal for a full pool or share, for
// name_claim_holders(): which share, and the oids that hold the most.
enum class FullShare { none, node, database, role };
FullShare last_full = FullShare::none;
bool caller_is_superuser = false;
Oid full_database = InvalidOid, full_role = InvalidOid;
int full_database_count = 0, full_role_count = 0;

// Caller holds the mutex. Whether the pool and the shares of this
// backend's database and role have room for one more entry; counts it
// against them if so.
FullShare take_share(ShardClaim& e)
{
    const int capacity = claims_table->capacity;
    const int db_cap = std::max(1, capacity / 2), role_cap = std::max(1, capacity / 4);
    const int db = share_of(claims_table->databases, MyDatabaseId, false),
              role = share_of(claims_table->roles, GetUserId(), false);
    FullShare full = FullShare::none;
    if (claims_table->in_use.load() >= capacity)
        full = FullShare::node;
    else if (db >= 0 && claims_table->databases[db].count >= db_cap)
        full = FullShare::database;
    else if (!caller_is_superuser && role >= 0 && claims_table->roles[role].count >= role_cap)
        full = FullShare::role;
    if (full != FullShare::none) {
        // Who holds the most of the pool (the refusal names them).
        int top_db = -1, top_role = -1;
        for (int i = 0; i < claim_share_slots; i++) {
            if (claims_table->databases[i].oid != InvalidOid &&
                (top_db < 0 || claims_table->databases[i].count > claims_table->databases[top_db].count))
                top_db = i;
            if (claims_table->roles[i].oid != InvalidOid &&
                (top_role < 0 || claims_table->roles[i].count > claims_table->roles[top_role].count))
                top_role = i;
        }
        full_database = top_db >= 0 ? claims_table->databases[top_db].oid : InvalidOid;
        full_database_count = top_db >= 0 ? claims_table->databases[top_db].count : 0;
        full_role = top_role >= 0 ? claims_table->roles[top_role].oid : InvalidOid;
        full_role_count = top_role >= 0 ? claims_table->roles[top_role].count : 0;
        return full;
    }
    const int new_db = share_of(claims_table->databases, MyDatabaseId, true),
              new_role = share_of(claims_table->roles, GetUserId(), true);
    if (new_db < 0 || new_role < 0)
        return FullShare::node;  // more databases or roles hold values than the shares track
    claims_table->databases[new_db].count++;
    claims_table->roles[new_role].count++;
    e.database_share = int16(new_db);
    e.role_share = int16(new_role);
    e.pooled = true;
    claims_table->in_use.fetch_add(1);
    return FullShare::none;
}

// Caller holds the mutex. A value shardid.shards declares: room in the
// pool only (the operator chose the set for the whole node; it bounds what
// any role can ask for).
FullShare take_pool(ShardClaim& e)
{
    if (claims_table->in_use.load() >= claims_table->capacity)
        return FullShare::node;
    e.database_share = e.role_share = -1;
    e.pooled = true;
    claims_table->in_use.fetch_add(1);
    return FullShare::none;
}

// The generator's cache of entries: where a value's entry is, and under
// which epoch of the table (and generation of the entry) it was last seen
// held: while the epoch has not moved, the value is still held so, and no
// entry is read (an entry is 128 bytes; 8,192 of them, used in turn, miss
// every cache of the processor: the claim's cost per ID). The used time
// the backend last wrote into the entry, so that it writes it at most every
// 100 ms without reading it.
struct CachedClaim {
    uint64_t key;  // claim_key() (0: nothing cached)
    uint64_t epoch;
    uint64_t generation;
    int64_t used_ms;
    int index;
};
// A layout whose shard field is at most 16 bits wide (Instagram's 13,
// snowflake's 10) has a dense cache of its own, by value, allocated when
// first used (calloc: only the pages a backend touches are its memory):
// logical shards used in turn stay in order. Others share a cache by the
// key's hash, 16,384 entries, direct-mapped.
constexpr int dense_bits_max = 16;
constexpr int cache_size = 16384;
CachedClaim cache[cache_size];
CachedClaim* dense[max_slots];
bool dense_tried[max_slots];

uint64_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

// The entry of `key`, given that key when `add` (reusing a free entry on
// its probe path, so a probe never passes an empty entry it needed); -1
// when there is none (and, adding, none to give). Adding needs the mutex;
// a lookup does not (the caller checks the entry's key again before use).
int probe(uint64_t key, bool add)
{
    const int mask = claims_table->size - 1;
    int reuse = -1;
    for (int i = 0, at = int(mix(key) & uint64_t(mask)); i < claims_table->size; i++, at = (at + 1) & mask) {
        ShardClaim& e = claims_table->entries[at];
        const uint64_t k = e.key.load(std::memory_order_acquire);
        if (k == key)
            return at;
        if (!add && k == 0)
            return -1;
        if (reuse < 0 && k != 0 && e.state.load() == int(ClaimState::free))
            reuse = at;
        if (k == 0) {
            if (reuse < 0)
                reuse = at;
            break;
        }
    }
    if (!add || reuse < 0)
        return -1;
    ShardClaim& e = claims_table->entries[reuse];
    bump_generation(claims_table, e);
    e.key.store(key, std::memory_order_release);
    return reuse;
}

// The cache entry of `key` (whose slot's layout is `layout`): a value's
// own in its layout's dense cache, else the hash cache's.
CachedClaim& cached_of(uint64_t key, const Layout& layout)
{
    const int slot = claim_slot(key);
    const uint64_t value = uint64_t(claim_value(key));
    if (layout.shard_bits <= dense_bits_max && slot >= 0 && slot < max_slots) {
        if (dense[slot] == nullptr && !dense_tried[slot]) {
            dense_tried[slot] = true;
            dense[slot] = static_cast<CachedClaim*>(calloc(size_t(1) << layout.shard_bits, sizeof(CachedClaim)));
        }
        if (dense[slot] != nullptr && value < (uint64_t(1) << layout.shard_bits))
            return dense[slot][value];
    }
    return cache[mix(key) & (cache_size - 1)];
}

}  // namespace

bool held_cached(SlotState* slot, const Layout& layout, uint64_t value, SourceTicket* ticket)
{
    if (layout.unit_ms > 1000)
        return false;
    const uint64_t key = claim_key(int(reinterpret_cast<Slot*>(slot) - shared->slots), value);
    CachedClaim& cached = cached_of(key, layout);
    if (cached.key != key || cached.epoch != claims_table->epoch.load(std::memory_order_seq_cst))
        return false;
    ticket->claim = cached.index;
    ticket->claim_generation = cached.generation;
    ticket->claim_epoch = cached.epoch;
    ticket->claim_cache = &cached;
    return true;
}

bool hold_claim(SlotState* slot, const Layout& layout, uint64_t value, bool own_id, bool declared, SourceTicket* ticket,
                Status* status)
{
    const uint64_t key = claim_key(int(reinterpret_cast<Slot*>(slot) - shared->slots), value);
    CachedClaim& cached = cached_of(key, layout);
    // Seen held under this epoch: held still, with the generation seen
    // then (no change of any entry since). A layout with long ticks goes on
    // below (its used time, before a wait for the next tick).
    const uint64_t epoch = claims_table->epoch.load(std::memory_order_seq_cst);
    if (cached.key == key && cached.epoch == epoch && layout.unit_ms <= 1000) {
        ticket->claim = cached.index;
        ticket->claim_generation = cached.generation;
        ticket->claim_epoch = epoch;
        ticket->claim_cache = &cached;
        return true;
    }
    int at = cached.key == key ? cached.index : -1;
    if (at < 0 || claims_table->entries[at].key.load(std::memory_order_acquire) != key) {
        at = probe(key, false);
        if (at < 0) {
            SpinLockAcquire(&claims_table->mutex);
            at = probe(key, true);
            SpinLockRelease(&claims_table->mutex);
        }
        if (at < 0) {
            note_claim_refusal(ClaimRefusal::table_full);
            last_full = FullShare::none;
            *status = claim_table_full(int(FullShare::node), claims_table->capacity);
            return false;
        }
        cached = CachedClaim{key, 0, 0, 0, at};
    }
    ShardClaim& e = claims_table->entries[at];
    // The epoch first, then the entry (bump_generation() changes them the
    // other way round): held under it means held while it stays.
    const uint64_t gen = e.generation.load(std::memory_order_seq_cst);
    const auto state = ClaimState(e.state.load(std::memory_order_seq_cst));
    if (state == ClaimState::held && e.key.load(std::memory_order_acquire) == key) {
        cached.epoch = epoch;
        cached.generation = gen;
        ticket->claim = at;
        ticket->claim_generation = gen;
        ticket->claim_epoch = epoch;
        ticket->claim_cache = &cached;
        // A coarse layout's ID may wait for its next tick (up to a tick)
        // from here: the value counts as used from now, so that it is not
        // given back for idleness while a backend waits with it.
        if (layout.unit_ms > 1000) {
            const int64_t now = wall_clock().now_ms();
            if (now - e.used_ms.load(std::memory_order_relaxed) >= 100)
                e.used_ms.store(now, std::memory_order_relaxed);
        }
        return true;
    }
    // Not one of this node's shards as the coordinator read shardid.shards
    // at the last reload (a range moved away while this statement runs on
    // the setting it began with): refused at once, never asked for.
    if (state == ClaimState::undeclared || (state == ClaimState::releasing && e.undeclared.load())) {
        note_claim_refusal(ClaimRefusal::outside_shards);
        e.wanted_ms.store(fence_clock_ms(), std::memory_order_relaxed);
        *status = claim_refused(ClaimState::undeclared, "", value, layout.name);
        return false;
    }
    // Not held: ask the coordinator for it.
    e.wanted_ms.store(fence_clock_ms(), std::memory_order_relaxed);
    if (own_id)
        e.own_id.store(true);
    if (state == ClaimState::free) {
        FullShare full = FullShare::none;
        SpinLockAcquire(&claims_table->mutex);
        if (e.key.load() == key && e.state.load() == int(ClaimState::free)) {
            // The node's own id is outside the pool: no role or database
            // can take the space it needs.
            e.database_share = e.role_share = -1;
            e.pooled = false;
            if (!own_id)
                full = declared ? take_pool(e) : take_share(e);
            if (full == FullShare::none) {
                e.declared.store(declared && !own_id);
                e.undeclared.store(false);
                e.state.store(int(ClaimState::wanted), std::memory_order_release);
            }
        }
        SpinLockRelease(&claims_table->mutex);
        if (full != FullShare::none) {
            note_claim_refusal(ClaimRefusal::table_full);
            last_full = full;
            *status = claim_table_full(int(full), claims_table->capacity);
            return false;
        }
    }
    if (Latch* latch = etcd_shared().worker_latch.load(std::memory_order_acquire))
        SetLatch(latch);
    char note[claim_note_size];
    SpinLockAcquire(&claims_table->mutex);
    strlcpy(note, claim_note(e), sizeof note);
    SpinLockRelease(&claims_table->mutex);
    note_claim_refusal(state == ClaimState::busy      ? ClaimRefusal::held_elsewhere
                       : state == ClaimState::refused ? ClaimRefusal::edited_by_hand
                       : state == ClaimState::ahead   ? ClaimRefusal::count  // none
                                                      : ClaimRefusal::not_claimed_in_time);
    *status = claim_refused(state, note, value, layout.name);
    return false;
}

bool confirm_claim(const SourceTicket& ticket, int64_t used_ms, uint64_t word, Status* status)
{
    ShardClaim& e = claims_table->entries[ticket.claim];
    auto* cached = static_cast<CachedClaim*>(ticket.claim_cache);
    // The epoch unchanged since the value was seen held: held still (the
    // caller's fence orders this after the ID's step of its slot), its used
    // time written every 100 ms. Only layouts of ticks up to a second go
    // this way, which keep no bound (etcd::keeps_bound()).
    if (claims_table->epoch.load(std::memory_order_seq_cst) == ticket.claim_epoch && cached != nullptr &&
        cached->key != 0 && cached->index == ticket.claim && ticket.unit_ms <= 1000) {
        if (used_ms - cached->used_ms >= 100) {
            cached->used_ms = used_ms;
            e.used_ms.store(used_ms, std::memory_order_relaxed);
        }
        return true;
    }
    if (e.generation.load(std::memory_order_seq_cst) != ticket.claim_generation ||
        e.state.load(std::memory_order_seq_cst) != int(ClaimState::held)) {
        note_claim_refusal(ClaimRefusal::not_claimed_in_time);
        *status = Status::fail(Error::not_claimed, "this node gave up a shard while issuing an ID with it")
                      .with_detail("The shard was released or its claim lost; no ID was handed out under it.")
                      .with_hint("See SELECT * FROM shardid_shard_claims();.");
        return false;
    }
    if (used_ms - e.used_ms.load(std::memory_order_relaxed) >= 100)
        e.used_ms.store(used_ms, std::memory_order_relaxed);
    if (word > e.bound.load(std::memory_order_seq_cst)) {
        // Beyond what the value's mark in etcd covers: the worker moves it.
        raise_to(e.bound_need, word);
        if (Latch* latch = etcd_shared().worker_latch.load(std::memory_order_acquire))
            SetLatch(latch);
        *status = Status::fail(Error::not_claimed, "the mark of a shard in etcd ends before the ID")
                      .with_detail("IDs with a shard of a layout with long ticks are issued only below the mark "
                                   "recorded in etcd, which could not be moved in time.")
                      .with_hint("See SELECT * FROM shardid_shard_claims(); and SELECT * FROM "
                                 "shardid_coordination(); for the last error.");
        return false;
    }
    return true;
}

void set_claim_caller(bool superuser) { caller_is_superuser = superuser; }

void release_shares_locked(ShardClaims* t, ShardClaim* e)
{
    if (e->database_share >= 0 && e->role_share >= 0) {
        ClaimShare& db = t->databases[e->database_share];
        ClaimShare& role = t->roles[e->role_share];
        if (--db.count <= 0)
            db = ClaimShare{InvalidOid, 0};
        if (--role.count <= 0)
            role = ClaimShare{InvalidOid, 0};
    }
    if (e->pooled)
        t->in_use.fetch_sub(1);
    e->pooled = false;
    e->database_share = e->role_share = -1;
}

bool want_declared(int slot, uint64_t value)
{
    const uint64_t key = claim_key(slot, value);
    bool ok = false;
    SpinLockAcquire(&claims_table->mutex);
    const int at = probe(key, true);
    if (at >= 0) {
        ShardClaim& e = claims_table->entries[at];
        ok = true;
        if (e.state.load() == int(ClaimState::free)) {
            e.own_id.store(false);
            ok = take_pool(e) == FullShare::none;
            if (ok) {
                e.wanted_ms.store(fence_clock_ms(), std::memory_order_relaxed);
                e.state.store(int(ClaimState::wanted), std::memory_order_release);
            }
        }
        if (ok) {
            e.declared.store(!e.own_id.load());
            e.undeclared.store(false);
        }
    }
    SpinLockRelease(&claims_table->mutex);
    return ok;
}

void name_claim_holders(Status* status)
{
    if (status->error != Error::limit_exceeded || last_full == FullShare::none || claims_table == nullptr)
        return;
    last_full = FullShare::none;
    // Who holds the space, to those who may see every role's claims.
    if (!has_privs_of_role(GetUserId(), ROLE_PG_MONITOR)) {
        strlcat(status->detail, " Superusers and pg_monitor see who holds them.", sizeof status->detail);
        return;
    }
    const char* db = OidIsValid(full_database) ? get_database_name(full_database) : nullptr;
    const char* role = OidIsValid(full_role) ? GetUserNameFromId(full_role, true) : nullptr;
    char names[128];
    snprintf(names, sizeof names, " Most: database \"%s\" (%d), role \"%s\" (%d).", db ? db : "?", full_database_count,
             role ? role : "?", full_role_count);
    strlcat(status->detail, names, sizeof status->detail);
}

int find_claim(uint64_t key) { return probe(key, false); }

}  // namespace shardid::pg
