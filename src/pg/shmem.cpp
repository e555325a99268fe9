// Node-wide state in shared memory.
//
// Locking rules (who guards what, and in which order):
//   - AddinShmemInitLock: attaching the struct, allocating layout slots
//     (n_used, each slot's shape and name) and DecimalId database entries.
//     Held only for memory work; no other lock is taken under it. A slot is
//     filled in under it in the same hold that raises n_used, so a reader
//     that read n_used under it (shardid_status) may read those slots' shape
//     and name after releasing it: they never change once published.
//   - The WAL record of a node state is inserted under state_lock and
//     flushed (and confirmed by synchronous standbys) by confirm_covered()
//     outside any lock, before an ID it covers is returned.
//   - state_lock (tranche "shardid"): serializes writers of the persisted
//     node state (src/pg/hwm.hpp): lease_until_ms, generator_floor,
//     run_floor and every slot's `persisted` word change only under it, and
//     only after the file that covers the new value is durable. Held for
//     memory work and that one file write; never while waiting for a
//     heavyweight lock, and never together with AddinShmemInitLock.
//   - Each slot's SlotState: lock-free atomics (the engine's CAS).
//   - DecimalId: each database's counter word is an atomic; taking a new
//     generator id is serialized by a heavyweight lock on that database's
//     generator sequence (src/pg/counters.cpp), which the deadlock detector
//     sees and which a cancel interrupts.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>

#include "pg/shmem.hpp"

#include "core/clock.hpp"
#include "pg/hwm.hpp"
#include "pg/pg.hpp"
#include "pg/settings.hpp"
#include "pg/wal.hpp"
#include "pg/timeconv.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
}

extern "C" {
PG_FUNCTION_INFO_V1(shardid_status);
}

namespace shardid::pg {

namespace {

void confirm_lsn(XLogRecPtr need);  // below, with confirm_covered()

// How far ahead of the IDs in use the high-water mark is written.
constexpr int64 lease_ms = 1000;

// Layouts whose tick is longer than the lease also keep a mark of their own
// in (tick, sequence) terms, so that a restart resumes within the tick.
bool is_coarse(int64_t unit_ms) { return unit_ms > lease_ms; }

struct Slot {
    SlotState state;  // first, so it keeps the slot's 64-byte alignment
    Shape shape;
    char name[64];    // the layout that first claimed the slot, for shardid_status()
    Oid database;     // the database that first claimed it (InvalidOid: restored from the node state)
    std::atomic<uint64_t> persisted;  // coarse layouts: the persisted per-layout mark (0: none, or retired)
    std::atomic<uint64_t> mark_lsn;   // coarse layouts: the end of the WAL record of that mark (0: none)
};
static_assert(offsetof(Slot, state) == 0, "a SlotState pointer is its Slot's address");

struct Shared {
    uint32_t magic;
    int n_used;
    int tranche;
    bool hwm_corrupt;              // the state file could not be read: generation refuses
    std::atomic<int64_t> restart_floor_ms;  // the mark found at start-up, or replayed since: new slots resume above it
    std::atomic<int64_t> lease_until_ms;  // the persisted mark: every issued tick starts before it
    std::atomic<int64_t> retired_ms;  // NodeState::retired_ms: coarse shapes without a mark resume after it
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
    int64 generator_floor;         // highest DecimalId generator id taken on this node (-1: none)
    int64 run_floor;               // highest call-number run id taken on this node (-1: none)
    LWLock state_lock;             // see the locking rules above
    Slot slots[max_slots];
    struct {
        Oid database;
        DecimalState state;
    } decimal[max_decimal_databases];
};

constexpr uint32_t shared_magic = 0x53484944;  // "SHID"
constexpr const char* shared_name = "shardid";
// ShmemInitStruct aligns to MAXALIGN only; ask for room to align to 64.
constexpr Size shared_size = sizeof(Shared) + alignof(Shared);

Shared* shared = nullptr;

shmem_request_hook_type prev_shmem_request_hook = nullptr;
shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

void raise_if_corrupt()
{
    if (shared->hwm_corrupt)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("shardid high-water mark file \"%s\" is unreadable", hwm_path),
                        errdetail("IDs issued before the last restart could be issued again."),
                        errhint("If the server clock is known to be past every ID ever issued, remove the file and "
                                "restart the server.")));
}

// A slot's persisted mark, as the state file holds it.
LayoutMark mark_of(const Slot& slot, uint64_t word)
{
    LayoutMark m;
    strlcpy(m.name, slot.name, sizeof m.name);
    m.shape = slot.shape;
    m.word = word;
    return m;
}

// The Unix ms at which the tick of a mark's word ends.
int64 mark_end_ms(const Shape& shape, uint64_t word)
{
    const Layout layout = shape.layout("");
    return layout.ms_of_tick(int64(layout.packed_tick(word)) + 1);
}

// Raises the retired floor to cover a mark whose tick is over.
void retire(const Shape& shape, uint64_t word) { raise_to(shared->retired_ms, int64_t(mark_end_ms(shape, word))); }

// The state as it is persisted now. Caller holds state_lock. A coarse
// layout's mark whose tick is over (by the wall clock) is retired: the
// retired floor covers its whole tick from now on, so the state keeps only
// the marks of ticks in progress, and a layout used once does not hold a
// place in it for ever. Its slot writes a new mark if it issues again.
NodeState persisted_state()
{
    const int64 now_ms = wall_clock().now_ms();
    NodeState st;
    st.mark_ms = shared->lease_until_ms.load(std::memory_order_acquire);
    st.generator_floor = shared->generator_floor;
    st.run_floor = shared->run_floor;
    for (int i = 0; i < shared->n_used; i++) {
        Slot& slot = shared->slots[i];
        const uint64_t word = slot.persisted.load(std::memory_order_acquire);
        if (word == 0)
            continue;
        if (mark_end_ms(slot.shape, word) <= now_ms || st.n_marks == NodeState::max_marks) {
            retire(slot.shape, word);
            slot.persisted.store(0, std::memory_order_release);
            continue;
        }
        st.marks[st.n_marks++] = mark_of(slot, word);
    }
    st.retired_ms = shared->retired_ms.load();
    return st;
}

// Makes a new node state durable: in WAL first (when it is WAL-logged, so
// that standbys replay it), then in the state file. Caller holds
// state_lock and publishes the new values in memory afterwards. Returns the
// end of the WAL record (0: not WAL-logged): IDs the new state covers are
// handed out only once that is flushed and confirmed (confirm_covered()).
XLogRecPtr persist(const NodeState& st)
{
    const XLogRecPtr end = wal_logging() ? wal_log_state(st) : InvalidXLogRecPtr;
    hwm_write(st);
    return end;
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
    if (is_coarse(layout.unit_ms))
        resume_after(layout, slot.state, shared->retired_ms.load());
    else
        resume_above(layout, slot.state, shared->restart_floor_ms.load());
}

// Why new_slot_locked() gave no slot.
enum class NoSlot { none, node_full, database_full };

// A new slot for `shape`, first claimed by `database` (InvalidOid: the
// node state's own). Caller holds AddinShmemInitLock; nullptr when the
// node, or the database's share of it, is full.
Slot* new_slot_locked(const Shape& shape, const char* name, Oid database, NoSlot* why = nullptr)
{
    int of_database = 0;
    for (int i = 0; i < shared->n_used; i++)
        of_database += OidIsValid(database) && shared->slots[i].database == database;
    NoSlot no = shared->n_used == max_slots ? NoSlot::node_full
                : of_database >= max_slots_per_database ? NoSlot::database_full
                                                        : NoSlot::none;
    if (why != nullptr)
        *why = no;
    if (no != NoSlot::none)
        return nullptr;
    Slot* slot = &shared->slots[shared->n_used++];
    slot->shape = shape;
    slot->database = database;
    strlcpy(slot->name, name, sizeof slot->name);
    resume_unmarked(*slot);
    return slot;
}

// Attaches to (or creates) the shared struct. Caller holds AddinShmemInitLock.
void attach_locked()
{
    bool found;
    void* raw = ShmemInitStruct(shared_name, shared_size, &found);
    auto* aligned = reinterpret_cast<Shared*>(TYPEALIGN(alignof(Shared), raw));
    // `magic` is written last: a struct without it was never initialised
    // whole (an attach that failed part way, say reading the state file out
    // of memory, in a backend that attached lazily) and is initialised again
    // here. Nobody used it meanwhile: `shared` is set only by an attach.
    if (!found || aligned->magic != shared_magic) {
        memset(raw, 0, shared_size);
        aligned->tranche = LWLockNewTrancheId();
        LWLockInitialize(&aligned->state_lock, aligned->tranche);
        NodeState st;
        const HwmRead got = hwm_read(&st);
        if (got == HwmRead::corrupt)
            ereport(WARNING, (errmsg("shardid high-water mark file \"%s\" is unreadable", hwm_path),
                              errdetail("ID generation is refused until it is fixed, since IDs issued before the "
                                        "restart could otherwise be issued again."),
                              errhint("If the server clock is known to be past every ID ever issued, remove the "
                                      "file and restart the server.")));
        aligned->hwm_corrupt = got == HwmRead::corrupt;
        aligned->restart_floor_ms.store(st.mark_ms);
        aligned->lease_until_ms.store(st.mark_ms);
        aligned->retired_ms.store(st.retired_ms);
        aligned->generator_floor = st.generator_floor;
        aligned->run_floor = st.run_floor;
        shared = aligned;
        // Layouts with marks of their own resume exactly where those say;
        // marks whose tick is over are retired instead, so a restart frees
        // their slots.
        const int64 now_ms = wall_clock().now_ms();
        for (int i = 0; i < st.n_marks; i++) {
            const LayoutMark& m = st.marks[i];
            Slot* slot = mark_end_ms(m.shape, m.word) <= now_ms ? nullptr
                                                                : new_slot_locked(m.shape, m.name, InvalidOid);
            if (slot == nullptr) {
                retire(m.shape, m.word);
                continue;
            }
            slot->state.last.store(m.word, std::memory_order_relaxed);
            slot->persisted.store(m.word, std::memory_order_relaxed);
        }
        aligned->magic = shared_magic;
    }
    LWLockRegisterTranche(aligned->tranche, "shardid");
    shared = aligned;
}

void attach()
{
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    attach_locked();
    LWLockRelease(AddinShmemInitLock);
}

void attach_if_needed()
{
    if (shared == nullptr)
        attach();
}

void request_hook()
{
    if (prev_shmem_request_hook)
        prev_shmem_request_hook();
    RequestAddinShmemSpace(shared_size);
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

// A coarse layout's own mark: every issued word at most `persisted`,
// written a sixteenth of a tick's sequences ahead (at most to the end of
// the tick), renewed early without making generators wait.
void cover_word(Slot& slot, const Layout& layout, uint64_t word)
{
    const uint64_t lease = std::max<uint64_t>(1, (layout.sequence_max() + 1) / 16);
    uint64_t p = slot.persisted.load(std::memory_order_acquire);
    if (word <= p && p - word > lease / 2)
        return;
    if (word <= p) {
        if (!LWLockConditionalAcquire(&shared->state_lock, LW_EXCLUSIVE))
            return;
    } else {
        LWLockAcquire(&shared->state_lock, LW_EXCLUSIVE);
    }
    p = slot.persisted.load(std::memory_order_acquire);
    const uint64_t tick_end = layout.pack(layout.packed_tick(word), layout.sequence_max());
    const uint64_t want = std::min(tick_end, word + lease);
    if ((word > p || p - word <= lease / 2) && want > p) {
        NodeState st = persisted_state();
        bool listed = false;
        for (int i = 0; i < st.n_marks && !listed; i++)
            if (st.marks[i].shape == slot.shape) {
                st.marks[i].word = want;
                listed = true;
            }
        if (!listed && st.n_marks < NodeState::max_marks)
            st.marks[st.n_marks++] = mark_of(slot, want);
        else if (!listed)
            st.retired_ms = std::max<int64>(st.retired_ms, mark_end_ms(slot.shape, want));
        const XLogRecPtr end = persist(st);
        slot.mark_lsn.store(end, std::memory_order_release);
        slot.persisted.store(want, std::memory_order_release);
    }
    LWLockRelease(&shared->state_lock);
}

}  // namespace

void shmem_init()
{
    if (!process_shared_preload_libraries_in_progress)
        return;
    prev_shmem_request_hook = shmem_request_hook;
    shmem_request_hook = request_hook;
    prev_shmem_startup_hook = shmem_startup_hook;
    shmem_startup_hook = startup_hook;
}

SlotState* slot_for(const Layout& layout)
{
    const Shape shape = Shape::of(layout);
    for (int i = 0; i < n_cached; i++)
        if (cache[i].shape == shape)
            return cache[i].state;

    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    if (shared == nullptr)
        attach_locked();
    Slot* slot = nullptr;
    for (int i = 0; i < shared->n_used && slot == nullptr; i++)
        if (shared->slots[i].shape == shape)
            slot = &shared->slots[i];
    NoSlot why = NoSlot::none;
    if (slot == nullptr)
        slot = new_slot_locked(shape, layout.name, MyDatabaseId, &why);
    LWLockRelease(AddinShmemInitLock);

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

DecimalState* decimal_state(Oid database)
{
    // An entry of this database, or a free one; when there is none, the
    // entries of databases that were dropped are freed (looked up outside
    // the LWLock: a catalog lookup may wait for a heavyweight lock). A
    // dropped database has no backend left to use its entry.
    Oid gone[max_decimal_databases];
    int n_gone = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
        if (shared == nullptr)
            attach_locked();
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
        LWLockRelease(AddinShmemInitLock);
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

int64 counter_floor(NodeCounter which)
{
    attach_if_needed();
    LWLockAcquire(&shared->state_lock, LW_SHARED);
    const int64 floor = which == NodeCounter::generator ? shared->generator_floor : shared->run_floor;
    LWLockRelease(&shared->state_lock);
    return floor;
}

bool claim_counter(NodeCounter which, int64 value)
{
    attach_if_needed();
    raise_if_corrupt();
    LWLockAcquire(&shared->state_lock, LW_EXCLUSIVE);
    int64& floor = which == NodeCounter::generator ? shared->generator_floor : shared->run_floor;
    const bool fresh = value > floor;
    XLogRecPtr end = InvalidXLogRecPtr;
    if (fresh) {
        NodeState st = persisted_state();
        (which == NodeCounter::generator ? st.generator_floor : st.run_floor) = value;
        end = persist(st);
        floor = value;
    }
    LWLockRelease(&shared->state_lock);
    // The value goes into IDs only once the record of its floor is safe,
    // like any ID's covering record (a standby promoted later knows it).
    if (fresh)
        confirm_lsn(end);
    return fresh;
}

void cover_tick(int64 tick_ms)
{
    const int64 until = shared->lease_until_ms.load(std::memory_order_acquire);
    if (tick_ms + lease_ms / 2 < until)
        return;
    raise_if_corrupt();
    // Renew half way through the lease, by whoever gets the lock first, so
    // generators do not wait for the write; wait only when not covered.
    if (tick_ms < until) {
        if (!LWLockConditionalAcquire(&shared->state_lock, LW_EXCLUSIVE))
            return;
    } else {
        LWLockAcquire(&shared->state_lock, LW_EXCLUSIVE);
    }
    const int64 old_until = shared->lease_until_ms.load(std::memory_order_acquire);
    if (tick_ms + lease_ms / 2 >= old_until) {
        NodeState st = persisted_state();
        st.mark_ms = tick_ms + lease_ms;
        const XLogRecPtr end = persist(st);
        // Publish the record that covers the new mark, keeping the previous
        // one for the ticks before the old mark.
        shared->lease_version.fetch_add(1, std::memory_order_acq_rel);
        shared->prev_until_ms.store(old_until, std::memory_order_relaxed);
        shared->prev_lsn.store(shared->cur_lsn.load(std::memory_order_relaxed), std::memory_order_relaxed);
        shared->cur_lsn.store(end, std::memory_order_relaxed);
        shared->lease_version.fetch_add(1, std::memory_order_acq_rel);
        shared->lease_until_ms.store(st.mark_ms, std::memory_order_release);
    }
    LWLockRelease(&shared->state_lock);
}

void replay_node_state(const NodeState& st)
{
    attach_if_needed();
    // Slots for the layouts with marks of their own first: slot allocation
    // and the state lock are never held together.
    Slot* marked[NodeState::max_marks] = {};
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    for (int i = 0; i < st.n_marks; i++) {
        const Shape shape = st.marks[i].shape;
        for (int j = 0; j < shared->n_used && marked[i] == nullptr; j++)
            if (shared->slots[j].shape == shape)
                marked[i] = &shared->slots[j];
        if (marked[i] == nullptr && (marked[i] = new_slot_locked(shape, st.marks[i].name, InvalidOid)) != nullptr)
            marked[i]->state.last.store(0);  // resumes at its own mark, set below
    }
    LWLockRelease(AddinShmemInitLock);

    LWLockAcquire(&shared->state_lock, LW_EXCLUSIVE);
    if (st.mark_ms > shared->lease_until_ms.load())
        shared->lease_until_ms.store(st.mark_ms);
    if (st.mark_ms > shared->restart_floor_ms.load())
        shared->restart_floor_ms.store(st.mark_ms);
    raise_to(shared->retired_ms, int64_t(st.retired_ms));
    shared->generator_floor = std::max(shared->generator_floor, st.generator_floor);
    shared->run_floor = std::max(shared->run_floor, st.run_floor);
    for (int i = 0; i < st.n_marks; i++) {
        if (marked[i] == nullptr) {
            // No slot left for it here: its whole tick counts as used.
            retire(st.marks[i].shape, st.marks[i].word);
            continue;
        }
        raise_last(marked[i]->state, st.marks[i].word);
        if (st.marks[i].word > marked[i]->persisted.load())
            marked[i]->persisted.store(st.marks[i].word);
    }
    // Every other slot resumes above what its shape may have issued: the
    // restart floor for fine layouts, the retired floor for coarse ones
    // (only ever raised).
    const int64 floor = shared->restart_floor_ms.load();
    for (int i = 0; i < shared->n_used; i++) {
        Slot& slot = shared->slots[i];
        if (std::find(marked, marked + st.n_marks, &slot) != marked + st.n_marks)
            continue;
        const Layout layout = slot.shape.layout(slot.name);
        const int64_t tick = layout.tick_of(floor);
        if (is_coarse(layout.unit_ms))
            resume_after(layout, slot.state, shared->retired_ms.load());
        else if (tick >= 0)
            raise_last(slot.state, layout.pack(uint64_t(tick), layout.sequence_max()));
    }
    hwm_write(persisted_state());
    LWLockRelease(&shared->state_lock);
}

namespace {

// The end of a WAL record that covers an ID of `slot` in the tick starting
// at tick_ms: a coarse layout's own mark record, or for other layouts the
// record of the time mark the ID's tick is below.
XLogRecPtr covering_lsn(const Slot& slot, const Layout& layout, int64 tick_ms)
{
    if (is_coarse(layout.unit_ms))
        return slot.mark_lsn.load(std::memory_order_acquire);
    for (;;) {
        const uint64_t v1 = shared->lease_version.load(std::memory_order_acquire);
        const int64 prev_until = shared->prev_until_ms.load(std::memory_order_relaxed);
        const uint64_t prev = shared->prev_lsn.load(std::memory_order_relaxed);
        const uint64_t cur = shared->cur_lsn.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (v1 % 2 == 0 && shared->lease_version.load(std::memory_order_relaxed) == v1)
            return tick_ms < prev_until ? prev : cur;
    }
}

// Is `lsn` confirmed by the synchronous standbys at the caller's level of
// synchronous_commit (or are none defined, so that a commit would not wait
// either)?
bool sync_confirmed(XLogRecPtr lsn)
{
    const int mode = synchronous_commit == SYNCHRONOUS_COMMIT_REMOTE_WRITE   ? SYNC_REP_WAIT_WRITE
                     : synchronous_commit == SYNCHRONOUS_COMMIT_REMOTE_APPLY ? SYNC_REP_WAIT_APPLY
                                                                             : SYNC_REP_WAIT_FLUSH;
    LWLockAcquire(SyncRepLock, LW_SHARED);
#ifdef SYNC_STANDBY_DEFINED
    const bool defined = (WalSndCtl->sync_standbys_status & SYNC_STANDBY_DEFINED) != 0;
#else
    const bool defined = WalSndCtl->sync_standbys_defined;
#endif
    const bool confirmed = !defined || WalSndCtl->lsn[mode] >= lsn;
    LWLockRelease(SyncRepLock);
    return confirmed;
}

// Flushes WAL up to `need` and, with synchronous replication, waits until
// the synchronous standbys confirm it (see confirm_covered()).
void confirm_lsn(XLogRecPtr need)
{
    if (need <= shared->confirmed_lsn.load(std::memory_order_acquire))
        return;  // the steady state: long flushed and replicated
    // The record that covers this ID is recent: flush it, and with
    // synchronous replication wait until the synchronous standbys confirm
    // it, as a commit would (interruptibly; SyncRepWaitForLSN() gives up on a
    // cancel with a WARNING, and then no ID is handed out).
    XLogFlush(need);
    if (!SyncRepRequested())
        return;  // synchronous_commit = local or off: as for a commit, the flush is all
    SyncRepWaitForLSN(need, false);
    if (!sync_confirmed(need))
        ereport(ERROR, (errcode(ERRCODE_QUERY_CANCELED),
                        errmsg("canceled waiting for the synchronous standbys to confirm shardid's node state"),
                        errdetail("No ID was handed out: the WAL record that covers it is not confirmed by the "
                                  "synchronous standbys, so a standby promoted now could issue it again.")));
    raise_to(shared->confirmed_lsn, uint64_t(need));
}

}  // namespace

void confirm_covered(SlotState& state, const Layout& layout, int64 tick_ms)
{
    confirm_lsn(covering_lsn(reinterpret_cast<const Slot&>(state), layout, tick_ms));
}

void cover_issued(SlotState* state, const Layout& layout, uint64_t word, int64_t tick_ms)
{
    cover_tick(tick_ms);
    if (is_coarse(layout.unit_ms))
        cover_word(*reinterpret_cast<Slot*>(state), layout, word);
    if (wal_logging())
        confirm_covered(*state, layout, tick_ms);
}

}  // namespace shardid::pg

// One row per layout slot in use on this node.
extern "C" Datum shardid_status(PG_FUNCTION_ARGS)
{
    using namespace shardid;
    using namespace shardid::pg;
    InitMaterializedSRF(fcinfo, 0);
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    attach_if_needed();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    const int n = shared->n_used;
    LWLockRelease(AddinShmemInitLock);

    const int64 now_ms = wall_clock().now_ms();
    const int64 mark_ms = shared->lease_until_ms.load();
    const Datum mark = TimestampTzGetDatum(timestamptz_of_unix_ms(mark_ms));
    const int64 floor_ms = shared->restart_floor_ms.load();
    const Datum floor = TimestampTzGetDatum(timestamptz_of_unix_ms(floor_ms));
    for (int i = 0; i < n; i++) {
        const Slot& slot = shared->slots[i];
        const Layout layout = slot.shape.layout(slot.name);
        const uint64_t last = slot.state.last.load(std::memory_order_acquire);
        const int64 last_tick_ms = layout.ms_of_tick(int64(layout.packed_tick(last)));
        const bool issued = last != 0;
        Datum values[11] = {CStringGetTextDatum(slot.name),
                            issued ? TimestampTzGetDatum(timestamptz_of_unix_ms(last_tick_ms)) : (Datum)0,
                            Int64GetDatum(int64(layout.packed_sequence(last))),
                            Int64GetDatum(issued && last_tick_ms > now_ms ? last_tick_ms - now_ms : 0),
                            Int64GetDatum(int64(slot.state.waits.load())),
                            Int64GetDatum(int64(slot.state.ahead.load())),
                            Int64GetDatum(int64(slot.state.behind.load())),
                            mark,
                            floor,
                            BoolGetDatum(shared->hwm_corrupt),
                            BoolGetDatum(wal_logging())};
        bool nulls[11] = {false, !issued, !issued, false, false, false, false,
                          mark_ms == 0, floor_ms == 0, false, false};
        // An older install (1.1) asks for the first ten columns only:
        // tuplestore_putvalues() reads as many as its descriptor has.
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum)0;
}
