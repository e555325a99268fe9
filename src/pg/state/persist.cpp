// The persistence protocol of the node state: before an ID is returned,
// durable marks cover it (the node's time mark, a coarse layout's own mark;
// when and how far they move: src/core/state/time_mark.hpp), in WAL first and then in
// the state file (src/pg/state/state_file.hpp), and the WAL record is flushed and
// confirmed by the synchronous standbys; counter floors (DecimalId generator
// ids, call-number run ids) the same way (src/pg/state/counter_floors.cpp);
// redo raises the state. Shared struct and locking rules:
// src/pg/state/shared.hpp.
#include <algorithm>
#include <atomic>

#include "pg/state/shmem.hpp"

#include "core/clock.hpp"
#include "core/state/time_mark.hpp"
#include "pg/base/pg.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/lineage.hpp"
#include "pg/state/shared.hpp"
#include "pg/state/state_file.hpp"
#include "pg/state/wal.hpp"

extern "C" {
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "replication/syncrep.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
}

namespace shardid::pg {

namespace {

// A slot's persisted mark, as the state file holds it.
LayoutMark mark_of(const Slot& slot, uint64_t word)
{
    LayoutMark m;
    strlcpy(m.name, slot.name, sizeof m.name);
    m.shape = slot.shape;
    m.word = word;
    return m;
}

// A coarse layout's own mark: every issued word at most `persisted`
// (lease::word_renewal() says when it moves, lease::word_target() where).
// True when it took the lock (a write, or a wait for another's).
bool cover_word(Slot& slot, const Layout& layout, uint64_t word)
{
    const lease::Renewal renewal = lease::word_renewal(layout, word, slot.persisted.load(std::memory_order_acquire));
    if (renewal == lease::Renewal::none)
        return false;
    if (renewal == lease::Renewal::early) {
        if (!LWLockConditionalAcquire(&shared->state_lock, LW_EXCLUSIVE))
            return false;
    } else {
        LWLockAcquire(&shared->state_lock, LW_EXCLUSIVE);
    }
    const uint64_t p = slot.persisted.load(std::memory_order_acquire);
    const uint64_t want = lease::word_target(layout, word);
    if (lease::word_renewal(layout, word, p) != lease::Renewal::none && want > p) {
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
            st.retired_ms = std::max<int64>(st.retired_ms, lease::word_end_ms(layout, want));
        const XLogRecPtr end = persist(st);
        slot.mark_lsn.store(end, std::memory_order_release);
        slot.persisted.store(want, std::memory_order_release);
    }
    LWLockRelease(&shared->state_lock);
    return true;
}

// The node's time mark: every issued tick starts before lease_until_ms
// (lease::time_renewal() says when it moves, lease::time_target() where).
// True when it took the lock (a write, or a wait for another's).
bool cover_tick(int64 tick_ms)
{
    const int64 until = shared->lease_until_ms.load(std::memory_order_acquire);
    const lease::Renewal renewal = lease::time_renewal(tick_ms, until);
    if (renewal == lease::Renewal::none)
        return false;
    raise_if_corrupt();
    // Renewed early by whoever gets the lock first, so generators do not
    // wait for the write; a generator waits only when its tick is not covered.
    if (renewal == lease::Renewal::early) {
        if (!LWLockConditionalAcquire(&shared->state_lock, LW_EXCLUSIVE))
            return false;
    } else {
        LWLockAcquire(&shared->state_lock, LW_EXCLUSIVE);
    }
    const int64 old_until = shared->lease_until_ms.load(std::memory_order_acquire);
    if (lease::time_renewal(tick_ms, old_until) != lease::Renewal::none) {
        NodeState st = persisted_state();
        st.mark_ms = lease::time_target(tick_ms);
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
    return true;
}

}  // namespace

// Makes a new node state durable: in WAL first (when it is WAL-logged, so
// that standbys replay it), then in the state file. Caller holds
// state_lock and publishes the new values in memory afterwards. Returns the
// end of the WAL record (0: not WAL-logged): IDs the new state covers are
// handed out only once that is flushed and confirmed (confirm_covered()).
XLogRecPtr persist(const NodeState& st)
{
    // The release token and the claim floor are this data directory's own
    // (a standby's are its own, from its own claims and clean stops): WAL
    // carries 0 for them, which redo ignores.
    NodeState logged = st;
    for (const NodeStateField& f : node_state_fields)
        if (node_state_field_own(f.kind))
            logged.*f.member = 0;
    const XLogRecPtr end = wal_logging() ? wal_log_state(logged) : InvalidXLogRecPtr;
    state_file_write(st);
    return end;
}

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
    for (int i = 0; i < node_state_field_count; i++)
        if (node_state_fields[i].kind == NodeStateFieldKind::counter_floor)
            st.*node_state_fields[i].member = shared->counter_floors[i];
    for (int i = 0, n = shared->n_used.load(std::memory_order_acquire); i < n; i++) {
        Slot& slot = shared->slots[i];
        const uint64_t word = slot.persisted.load(std::memory_order_acquire);
        if (word == 0)
            continue;
        if (lease::word_end_ms(slot.shape, word) <= now_ms || st.n_marks == NodeState::max_marks) {
            retire(slot.shape, word);
            slot.persisted.store(0, std::memory_order_release);
            continue;
        }
        st.marks[st.n_marks++] = mark_of(slot, word);
    }
    st.retired_ms = shared->retired_ms.load();
    st.release_token = shared->release_token.load();
    st.claim_floor_ms = shared->claim_floor_ms.load();
    st.fleet_ttl_ms = shared->fleet_ttl_ms.load();
    st.call_eras = shared->call_eras;
    st.history = shared->history.load();
    st.history_began_ms = shared->history_began_ms;
    st.awaiting = shared->awaiting.load();
    st.adopted = shared->adopted;
    return st;
}

void replay_node_state(const NodeState& st, bool adopted)
{
    attach_if_needed();
    // Slots for the layouts with marks of their own first: slot allocation
    // and the state lock are never held together.
    Slot* marked[NodeState::max_marks] = {};
    LWLockAcquire(&shared->slots_lock, LW_EXCLUSIVE);
    for (int i = 0; i < st.n_marks; i++) {
        const Shape shape = st.marks[i].shape;
        for (int j = 0, n = shared->n_used.load(std::memory_order_acquire); j < n && marked[i] == nullptr; j++)
            if (shared->slots[j].shape == shape)
                marked[i] = &shared->slots[j];
        if (marked[i] == nullptr && (marked[i] = new_slot_locked(shape, st.marks[i].name, InvalidOid)) != nullptr)
            marked[i]->state.last.store(0);  // resumes at its own mark, set below
    }
    LWLockRelease(&shared->slots_lock);

    LWLockAcquire(&shared->state_lock, LW_EXCLUSIVE);
    if (st.mark_ms > shared->lease_until_ms.load())
        shared->lease_until_ms.store(st.mark_ms);
    if (st.mark_ms > shared->restart_floor_ms.load())
        shared->restart_floor_ms.store(st.mark_ms);
    raise_to(shared->retired_ms, int64_t(st.retired_ms));
    set_counter_floors(st, true);
    // Eras are only appended and their counters only go up: the primary's
    // record holds every era this one has, each at least as far (a promoted
    // standby must not hand out a run id again).
    for (int i = 0; i < st.call_eras.n; i++) {
        const CallEra& e = st.call_eras.list[i];
        if (i < shared->call_eras.n && shared->call_eras.list[i].era == e.era && shared->call_eras.list[i].key == e.key)
            shared->call_eras.list[i].low = std::max(shared->call_eras.list[i].low, e.low);
        else if (i >= shared->call_eras.n)
            shared->call_eras.append(e.era, e.key, e.low);
    }
    // Redo: the primary's history is the standby's (a standby issues
    // nothing of its own), with every history it adopted. Adopted: the
    // state's histories are recorded beside this node's own.
    if (adopted)
        adopt_histories_locked(st);
    else
        replay_histories(st);
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
    for (int i = 0, n = shared->n_used.load(std::memory_order_acquire); i < n; i++) {
        Slot& slot = shared->slots[i];
        if (std::find(marked, marked + st.n_marks, &slot) != marked + st.n_marks)
            continue;
        const Layout layout = slot.shape.layout(slot.name);
        const int64_t tick = layout.tick_of(floor);
        if (lease::is_coarse(layout.unit_ms))
            resume_after(layout, slot.state, shared->retired_ms.load());
        else if (tick >= 0)
            raise_last(slot.state, layout.pack(uint64_t(tick), layout.sequence_max()));
    }
    // An adoption is WAL-logged (standbys adopt it too) and used once safe.
    const NodeState now = persisted_state();
    const XLogRecPtr end = adopted ? persist(now) : InvalidXLogRecPtr;
    if (!adopted)
        state_file_write(now);
    LWLockRelease(&shared->state_lock);
    if (adopted)
        confirm_lsn(end);
}

namespace {

// The end of a WAL record that covers an ID of `slot` in the tick starting
// at tick_ms: a coarse layout's own mark record, or for other layouts the
// record of the time mark the ID's tick is below.
XLogRecPtr covering_lsn(const Slot& slot, const Layout& layout, int64 tick_ms)
{
    if (lease::is_coarse(layout.unit_ms))
        return slot.mark_lsn.load(std::memory_order_acquire);
    for (;;) {
        const uint64_t v1 = shared->lease_version.load(std::memory_order_acquire);
        const int64 prev_until = shared->prev_until_ms.load(std::memory_order_relaxed);
        const uint64_t prev = shared->prev_lsn.load(std::memory_order_relaxed);
        const uint64_t cur = shared->cur_lsn.load(std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_acquire);
        if (v1 % 2 == 0 && shared->lease_version.load(std::memory_order_relaxed) == v1)
            return lease::covering_record(tick_ms, prev_until) == lease::Covering::previous ? prev : cur;
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
// the synchronous standbys confirm it (see confirm_covered()). True when it
// flushed or waited. In this file, so that every ID's confirm_covered()
// inlines its steady state (a load and a compare); confirm_lsn() is the
// same for the counter floors.
bool confirm_wal(XLogRecPtr need)
{
    if (need <= shared->confirmed_lsn.load(std::memory_order_acquire))
        return false;  // the steady state: long flushed and replicated
    // The record that covers this ID is recent: flush it, and with
    // synchronous replication wait until the synchronous standbys confirm
    // it, as a commit would (interruptibly; SyncRepWaitForLSN() gives up on a
    // cancel with a WARNING, and then no ID is handed out).
    XLogFlush(need);
    if (!SyncRepRequested())
        return true;  // synchronous_commit = local or off: as for a commit, the flush is all
    SyncRepWaitForLSN(need, false);
    if (!sync_confirmed(need))
        ereport(ERROR, (errcode(ERRCODE_QUERY_CANCELED),
                        errmsg("canceled waiting for the synchronous standbys to confirm shardid's node state"),
                        errdetail("No ID was handed out: the WAL record that covers it is not confirmed by the "
                                  "synchronous standbys, so a standby promoted now could issue it again.")));
    raise_to(shared->confirmed_lsn, uint64_t(need));
    return true;
}

}  // namespace

bool confirm_lsn(XLogRecPtr need) { return confirm_wal(need); }

bool confirm_covered(SlotState& state, const Layout& layout, int64 tick_ms)
{
    return confirm_wal(covering_lsn(reinterpret_cast<const Slot&>(state), layout, tick_ms));
}

bool cover_issued(SlotState* state, const Layout& layout, uint64_t word, int64_t tick_ms)
{
    bool slow = cover_tick(tick_ms);
    if (lease::is_coarse(layout.unit_ms))
        slow |= cover_word(*reinterpret_cast<Slot*>(state), layout, word);
    if (wal_logging())
        slow |= confirm_covered(*state, layout, tick_ms);
    return slow;
}

// A clean stop brings the node's time mark down to what was issued. The mark
// runs ahead of the IDs (lease::time_target()), so that generators rarely
// wait for a write; a restart resumes above it, so without this every
// restart would date IDs up to that lead ahead of the clock, as a clock that
// stepped back does. At the postmaster's exit after a clean shutdown no
// process that could issue an ID is left, and the slots hold the highest ID
// each shape issued: every issued tick starts before the highest slot tick's
// start + 1 ms (highest_issued_tick_ms(), as a clean release in etcd). The floors the node started above (restart, etcd claim)
// stay covered. Not on a standby (its mark is its primary's, from WAL), not
// when the postmaster exits after a crash (non-zero), never raised. After an
// immediate shutdown crash recovery replays the WAL-logged marks, which
// raise the floor again.
namespace {
void settle_mark_at_exit(int code, Datum)
{
    if (code != 0 || IsUnderPostmaster || !IsPostmasterEnvironment || shared == nullptr || shared->state_unreadable ||
        RecoveryInProgress())
        return;
    const int64 issued = highest_issued_tick_ms();
    const int64 mark =
        std::max({shared->restart_floor_ms.load(), shared->claim_floor_ms.load(), issued > 0 ? issued + 1 : 0});
    // The coordinator's clean release (src/pg/etcd/worker/window.cpp) left a new
    // token to record: the state written now covers every ID of the claim.
    const bool token = shared->release_token.load() != shared->release_token_at_start;
    if (mark >= shared->lease_until_ms.load() && !token)
        return;
    const int64 was = shared->lease_until_ms.load();
    PG_TRY();
    {
        if (mark < was)
            shared->lease_until_ms.store(mark);
        state_file_write(persisted_state());
        if (mark < was)
            ereport(LOG, (errmsg("shardid lowered the node's time mark by %lld ms to the last issued tick at shutdown",
                                 (long long)(was - mark)),
                          errdetail("A restart resumes at the wall clock instead of %lld ms ahead of it.",
                                    (long long)(was - mark))));
    }
    PG_CATCH();
    {
        // The mark stays where it was: a restart resumes above it, as before.
        EmitErrorReport();
        FlushErrorState();
    }
    PG_END_TRY();
}
}  // namespace

// before_shmem_exit: the postmaster detaches shared memory in its on_shmem_exit
// callbacks, and on_proc_exit ones run after those.
void settle_mark_at_clean_exit() { before_shmem_exit(settle_mark_at_exit, 0); }

}  // namespace shardid::pg
