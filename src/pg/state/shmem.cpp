// Node-wide state in shared memory: the struct (src/pg/state/shared.hpp, with
// the locking rules), attaching it, layout slots and DecimalId entries.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

#include "pg/state/shmem.hpp"

#include "core/clock.hpp"
#include "core/etcd/shard_values.hpp"
#include "core/state/time_mark.hpp"
#include "pg/base/pg.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/lineage.hpp"
#include "pg/state/shared.hpp"
#include "pg/state/state_file.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/syscache.h"
}

namespace shardid::pg {

Shared* shared = nullptr;

namespace {

constexpr uint32_t shared_magic = 0x53484944;  // "SHID"
constexpr const char* shared_name = "shardid";
// ShmemInitStruct aligns to MAXALIGN only; ask for room to align to 64.
constexpr Size shared_size = sizeof(Shared) + alignof(Shared);

shmem_request_hook_type prev_shmem_request_hook = nullptr;
shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

// The parts rooms above registered (shmem_part()).
SharedPart parts[max_shared_parts];
int n_parts = 0;

// Attaches to (or creates) part i. Caller holds AddinShmemInitLock.
void attach_part_locked(int i)
{
    bool found;
    void* raw = ShmemInitStruct(parts[i].name, parts[i].size, &found);
    void* part =
        parts[i].align > 0 ? reinterpret_cast<void*>(TYPEALIGN(parts[i].align, reinterpret_cast<uintptr_t>(raw))) : raw;
    if (!found) {
        memset(raw, 0, parts[i].size);
        parts[i].init(part);
    }
    *parts[i].where = part;
}

// Attaches to (or creates) every part but the on-demand ones. Before the
// node state: a part that cannot be had (out of shared memory) leaves
// `shared` unset, so the next call tries again. Caller holds
// AddinShmemInitLock.
void attach_parts_locked()
{
    for (int i = 0; i < n_parts; i++) {
        if (!parts[i].on_demand)
            attach_part_locked(i);
    }
}

// Makes a slot that has no mark of its own continue above everything its
// shape may have issued on this node: a fine layout above the restart
// floor (its IDs are covered by the node's time mark), a coarse one after
// the retired floor (its IDs are covered by its own marks, retired into
// that floor once their tick is over). A coarse layout that never issued
// an ID so starts in the current tick.
void resume_unmarked(Slot& slot)
{
    const Layout layout = slot.shape.layout(slot.name);
    if (lease::is_coarse(layout.unit_ms))
        resume_after(layout, slot.state, shared->retired_ms.load());
    else
        resume_above(layout, slot.state, shared->restart_floor_ms.load());
    // The mark a claim of the node id from etcd started above (0: none).
    claim_floor_raise(layout, slot.state, shared->claim_floor_ms.load());
}

// Attaches to (or creates) the shared struct. Caller holds AddinShmemInitLock.
void attach_locked()
{
    attach_parts_locked();
    bool found;
    void* raw = ShmemInitStruct(shared_name, shared_size, &found);
    auto* aligned = reinterpret_cast<Shared*>(TYPEALIGN(alignof(Shared), raw));
    // `magic` is written last: a struct without it was never initialised
    // whole (an attach that failed part way, say reading the state file out
    // of memory, in a backend that attached lazily) and is initialised again
    // here. Nobody used it meanwhile: `shared` is set only by an attach.
    if (!found || aligned->magic != shared_magic) {
        memset(raw, 0, shared_size);
#if PG_VERSION_NUM >= 190000
        // 19 keeps the tranche's name in shared memory, for every process.
        aligned->tranche = LWLockNewTrancheId("shardid");
#else
        aligned->tranche = LWLockNewTrancheId();
#endif
        LWLockInitialize(&aligned->state_lock, aligned->tranche);
        LWLockInitialize(&aligned->slots_lock, aligned->tranche);
        NodeState st;
        const StateFileRead got = state_file_read(&st);
        if (got == StateFileRead::corrupt)
            ereport(WARNING, (errmsg("shardid high-water mark file \"%s\" is unreadable", state_file_name),
                              errdetail("ID generation is refused until it is fixed, since IDs issued before the "
                                        "restart could otherwise be issued again."),
                              errhint("If the server clock is known to be past every ID ever issued, remove the "
                                      "file and restart the server.")));
        aligned->state_unreadable = got == StateFileRead::corrupt;
        if (got != StateFileRead::corrupt)
            begin_history_if_none(st);
        aligned->history.store(st.history);
        aligned->history_began_ms = st.history_began_ms;
        aligned->awaiting.store(st.awaiting);
        aligned->adopted = st.adopted;
        aligned->restart_floor_ms.store(st.mark_ms);
        aligned->lease_until_ms.store(st.mark_ms);
        aligned->retired_ms.store(st.retired_ms);
        aligned->release_token.store(st.release_token);
        aligned->release_token_at_start = st.release_token;
        aligned->claim_floor_ms.store(st.claim_floor_ms);
        aligned->fleet_ttl_ms.store(st.fleet_ttl_ms);
        aligned->call_eras = st.call_eras;
        shared = aligned;
        set_counter_floors(st, false);
        // Layouts with marks of their own resume exactly where those say;
        // marks whose tick is over are retired instead, so a restart frees
        // their slots.
        const int64 now_ms = wall_clock().now_ms();
        for (int i = 0; i < st.n_marks; i++) {
            const LayoutMark& m = st.marks[i];
            Slot* slot =
                lease::word_end_ms(m.shape, m.word) <= now_ms ? nullptr : new_slot_locked(m.shape, m.name, InvalidOid);
            if (slot == nullptr) {
                retire(m.shape, m.word);
                continue;
            }
            slot->state.last.store(m.word, std::memory_order_relaxed);
            slot->persisted.store(m.word, std::memory_order_relaxed);
            claim_floor_raise(slot->shape.layout(slot->name), slot->state, st.claim_floor_ms);
        }
        aligned->magic = shared_magic;
    }
#if PG_VERSION_NUM < 190000
    LWLockRegisterTranche(aligned->tranche, "shardid");
#endif
    shared = aligned;
}

void attach()
{
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    attach_locked();
    LWLockRelease(AddinShmemInitLock);
}

void request_hook()
{
    if (prev_shmem_request_hook)
        prev_shmem_request_hook();
    RequestAddinShmemSpace(shared_size);
    for (int i = 0; i < n_parts; i++)
        RequestAddinShmemSpace(parts[i].size);
}

void startup_hook()
{
    if (prev_shmem_startup_hook)
        prev_shmem_startup_hook();
    attach();
}

// Per-backend cache of shapes already looked up.
struct CachedSlot {
    Shape shape;
    SlotState* state;
};
CachedSlot cache[max_slots];
int n_cached = 0;

}  // namespace

void raise_if_corrupt()
{
    if (shared->state_unreadable)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("shardid high-water mark file \"%s\" is unreadable", state_file_name),
                        errdetail("IDs issued before the last restart could be issued again."),
                        errhint("If the server clock is known to be past every ID ever issued, remove the file and "
                                "restart the server.")));
}

void retire(const Shape& shape, uint64_t word)
{
    raise_to(shared->retired_ms, int64_t(lease::word_end_ms(shape, word)));
}

Slot* new_slot_locked(const Shape& shape, const char* name, Oid database, NoSlot* why)
{
    int of_database = 0;
    const int n_used = shared->n_used.load(std::memory_order_relaxed);  // written under our lock only
    for (int i = 0; i < n_used; i++)
        of_database += OidIsValid(database) && shared->slots[i].database == database;
    NoSlot no = n_used == max_slots                     ? NoSlot::node_full
                : of_database >= max_slots_per_database ? NoSlot::database_full
                                                        : NoSlot::none;
    if (why != nullptr)
        *why = no;
    if (no != NoSlot::none)
        return nullptr;
    Slot* slot = &shared->slots[n_used];
    slot->shape = shape;
    slot->database = database;
    strlcpy(slot->name, name, sizeof slot->name);
    resume_unmarked(*slot);
    shared->n_used.store(n_used + 1, std::memory_order_release);  // published whole
    return slot;
}

void count_generation_refusal(GenerationRefusal why)
{
    if (shared != nullptr)
        shared->generation_refusals[int(why)].fetch_add(1, std::memory_order_relaxed);
}

namespace {
int last_refusal = -1;  // the cause of this backend's last refusal of a shard value (ClaimRefusal), -1: none
}  // namespace

void note_claim_refusal(ClaimRefusal cause) { last_refusal = cause == ClaimRefusal::count ? -1 : int(cause); }

void count_claim_refusal()
{
    if (shared != nullptr && last_refusal >= 0 && last_refusal < int(ClaimRefusal::count))
        shared->claim_refusals[last_refusal].fetch_add(1);
    last_refusal = -1;
}

void clear_claim_refusal() { last_refusal = -1; }

void shmem_part(const SharedPart& part)
{
    if (n_parts == max_shared_parts)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("too many parts of shardid's shared memory")));
    parts[n_parts] = part;
    if (part.align > 0)
        parts[n_parts].size = add_size(part.size, part.align);  // room to align it
    n_parts++;
}

void attach_if_needed()
{
    if (shared == nullptr)
        attach();
}

void shmem_part_attach(void** where)
{
    attach_if_needed();
    if (*where != nullptr)
        return;
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    for (int i = 0; i < n_parts; i++) {
        if (parts[i].where == where && *where == nullptr)
            attach_part_locked(i);
    }
    LWLockRelease(AddinShmemInitLock);
}

void shmem_init()
{
    if (!process_shared_preload_libraries_in_progress)
        return;
    prev_shmem_request_hook = shmem_request_hook;
    shmem_request_hook = request_hook;
    prev_shmem_startup_hook = shmem_startup_hook;
    shmem_startup_hook = startup_hook;
    settle_mark_at_clean_exit();
}

SlotState* slot_for(const Layout& layout)
{
    const Shape shape = Shape::of(layout);
    for (int i = 0; i < n_cached; i++)
        if (cache[i].shape == shape)
            return cache[i].state;

    attach_if_needed();
    LWLockAcquire(&shared->slots_lock, LW_EXCLUSIVE);
    Slot* slot = nullptr;
    for (int i = 0, n = shared->n_used.load(std::memory_order_acquire); i < n && slot == nullptr; i++)
        if (shared->slots[i].shape == shape)
            slot = &shared->slots[i];
    NoSlot why = NoSlot::none;
    if (slot == nullptr)
        slot = new_slot_locked(shape, layout.name, MyDatabaseId, &why);
    LWLockRelease(&shared->slots_lock);

    if (why == NoSlot::database_full)
        ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                        errmsg("too many distinct shardid layouts in use in this database"),
                        errdetail("A database may bring at most %d distinct layout shapes into use on a node "
                                  "between restarts (the node has %d).",
                                  max_slots_per_database, max_slots),
                        errhint("Reuse an existing layout shape. A restart frees the shapes whose current tick "
                                "is over.")));
    if (slot == nullptr)
        ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                        errmsg("too many distinct shardid layouts in use on this node"),
                        errdetail("Each distinct layout shape takes one of %d shared state slots.", max_slots),
                        errhint("Reuse an existing layout shape. A restart frees the shapes whose current tick "
                                "is over.")));
    cache[n_cached++] = CachedSlot{shape, &slot->state};
    return &slot->state;
}

bool claim_floor_applies(const Shape& shape) { return !(etcd_enabled() && etcd::keeps_bound(shape)); }

void raise_claim_floor(int64_t floor_ms)
{
    LWLockAcquire(&shared->slots_lock, LW_EXCLUSIVE);
    raise_to(shared->claim_floor_ms, floor_ms);
    for (int i = 0, n = shared->n_used.load(std::memory_order_acquire); i < n; i++) {
        Slot& slot = shared->slots[i];
        claim_floor_raise(slot.shape.layout(slot.name), slot.state, floor_ms);
    }
    LWLockRelease(&shared->slots_lock);
}

int64_t highest_issued_tick_ms()
{
    int64_t highest = 0;
    for (int i = 0, n = shared->n_used.load(std::memory_order_acquire); i < n; i++) {
        const Slot& slot = shared->slots[i];
        const uint64_t last = slot.state.last.load(std::memory_order_seq_cst);
        if (last == 0)
            continue;
        const Layout layout = slot.shape.layout(slot.name);
        highest = std::max(highest, int64_t(layout.ms_of_tick(int64_t(layout.packed_tick(last)))));
    }
    return highest;
}

std::atomic<uint64_t>& decimal_epoch(DecimalState* state)
{
    for (auto& d : shared->decimal)
        if (&d.state == state)
            return d.epoch;
    return shared->decimal[0].epoch;  // never reached: every state is an entry's
}

DecimalState* decimal_state(Oid database)
{
    // An entry of this database, or a free one; when there is none, the
    // entries of databases that were dropped are freed (looked up outside
    // the LWLock: a catalog lookup may wait for a heavyweight lock). A
    // dropped database has no backend left to use its entry.
    Oid gone[max_decimal_databases];
    int n_gone = 0;
    attach_if_needed();
    for (int attempt = 0; attempt < 2; attempt++) {
        LWLockAcquire(&shared->slots_lock, LW_EXCLUSIVE);
        DecimalState* found = nullptr;
        for (auto& d : shared->decimal)
            if (d.database == database)
                found = &d.state;
        for (auto& d : shared->decimal) {
            if (found != nullptr)
                break;
            if (d.database == InvalidOid || std::find(gone, gone + n_gone, d.database) != gone + n_gone) {
                d.database = database;
                d.state.word.store(0);
                found = &d.state;
            }
        }
        Oid in_use[max_decimal_databases];
        for (int i = 0; i < max_decimal_databases; i++)
            in_use[i] = shared->decimal[i].database;
        LWLockRelease(&shared->slots_lock);
        if (found != nullptr)
            return found;
        for (Oid db : in_use)
            if (!SearchSysCacheExists1(DATABASEOID, ObjectIdGetDatum(db)))
                gone[n_gone++] = db;
    }
    ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                    errmsg("too many databases on this node generate decimal ids"),
                    errdetail("Decimal id state is kept for at most %d databases per node; the entry of a dropped "
                              "database is freed for another.",
                              max_decimal_databases),
                    errhint("Generate decimal ids in fewer databases of this node, or drop databases that no longer "
                            "need them.")));
    pg_unreachable();
}

}  // namespace shardid::pg
