// The Citus fence's background worker ("shardid citus fence", one per
// database of a worker) and its entries in shared memory: started by the
// first generator, statement or call number that needs it, it renews the
// group's confirmation (fence.cpp), the key ring's lease (key_lease.cpp)
// and the spare call-number runs (spare_runs.cpp), each while wanted, and
// ends a minute after the last need.
#include <algorithm>
#include <cerrno>
#include <csignal>

#include "pg/base/shard_declaration.hpp"  // C++ standard headers: before PostgreSQL's
#include "pg/citus/fence.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/statement.hpp"
#include "pg/base/wait_event.hpp"
#include "pg/citus/key_lease.hpp"
#include "pg/citus/spare_runs.hpp"
#include "pg/base/fence_clock.hpp"
#include "pg/state/shared.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_authid_d.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

extern "C" {
PGDLLEXPORT void shardid_citus_fence_main(Datum arg);
}

namespace shardid::pg {

namespace {

constexpr int64_t idle_exit_ms = 60000;     // a worker nobody needed for this long ends
constexpr int64_t restart_after_ms = 1000;  // a need starts a worker at most this often

uint32 fence_event = 0;  // the worker's wait event between renewals

bool worker_alive(int pid) { return pid != 0 && (kill(pid, 0) == 0 || errno != ESRCH); }

// A renewal (renew(), or the key lease's) in a transaction of its own; an
// error is recorded by `failed`, never raised (it would end the worker). No
// C++ object lives across it.
int64_t renew_once(CitusFence* f, int64_t (*renewal)(CitusFence*), void (*failed)(CitusFence*, const char*))
{
    MemoryContext outer = CurrentMemoryContext;
    int64_t next = 1000;
    SetCurrentStatementStartTimestamp();
    StartTransactionCommand();
    PushActiveSnapshot(GetTransactionSnapshot());
    PG_TRY();
    {
        next = renewal(f);
        PopActiveSnapshot();
        CommitTransactionCommand();
    }
    PG_CATCH();
    {
        disable_timeout(STATEMENT_TIMEOUT, false);
        MemoryContextSwitchTo(outer);
        ErrorData* e = CopyErrorData();
        FlushErrorState();
        AbortCurrentTransaction();
        failed(f, e->message);
        FreeErrorData(e);
        next = 500;
    }
    PG_END_TRY();
    MemoryContextSwitchTo(outer);
    return next;
}

CitusFence* find_entry(Oid database)
{
    for (CitusFence& f : citus_shared->fences)
        if (f.database.load(std::memory_order_acquire) == database)
            return &f;
    return nullptr;
}

void worker_exit(int, Datum arg)
{
    auto* f = reinterpret_cast<CitusFence*>(DatumGetPointer(arg));
    SpinLockAcquire(&citus_shared->mutex);
    if (f->worker_pid.load() == MyProcPid) {
        f->worker_latch.store(nullptr);
        f->worker_pid.store(0);
    }
    SpinLockRelease(&citus_shared->mutex);
}

// Whether a waiting generator should wake the worker for a request now:
// not while it waits out another server's lease (it asks again when that
// ends), and at most every 250 ms for the database, however many
// generators wait (each waits in 20 ms steps).
bool wake_worker(CitusFence* f)
{
    char state[sizeof f->state];
    SpinLockAcquire(&f->mutex);
    strlcpy(state, f->state, sizeof state);
    SpinLockRelease(&f->mutex);
    return strcmp(state, "waiting") != 0 &&
           TimestampDifferenceExceeds(f->answered_at.load(), GetCurrentTimestamp(), 250);
}

}  // namespace

CitusFence* citus_fence_of_database()
{
    citus_shared_attach();
    static CitusFence* cached = nullptr;
    if (cached != nullptr && cached->database.load(std::memory_order_acquire) == MyDatabaseId)
        return cached;
    cached = find_entry(MyDatabaseId);
    return cached;
}

void citus_fence_wanted(CitusFence* f)
{
    const int64_t now = fence_clock_ms();
    if (now - f->wanted_ms.load(std::memory_order_relaxed) >= 1000)
        f->wanted_ms.store(now, std::memory_order_relaxed);
}

void citus_keys_wanted(CitusFence* f)
{
    const int64_t now = fence_clock_ms();
    if (now - f->keys_wanted_ms.load(std::memory_order_relaxed) >= 1000)
        f->keys_wanted_ms.store(now, std::memory_order_relaxed);
}

namespace {

// Whether nobody wanted anything of the entry for idle_exit_ms.
bool idle(const CitusFence& e, int64_t now)
{
    return now - e.wanted_ms.load() > idle_exit_ms && now - e.keys_wanted_ms.load() > idle_exit_ms &&
           now - e.runs_wanted_ms.load() > idle_exit_ms;
}

// This database's entry for IDs, keys or spare runs (`wanted` and `asked`:
// the need's), made when missing, its worker started when it is not, asked
// for a renewal of what is needed and woken.
CitusFence* need_entry(std::atomic<int64_t> CitusFence::*wanted, std::atomic<bool> CitusFence::*asked)
{
    citus_shared_attach();
    const int64_t now = fence_clock_ms();
    CitusFence* f = nullptr;
    bool start = false;
    SpinLockAcquire(&citus_shared->mutex);
    f = find_entry(MyDatabaseId);
    if (f == nullptr) {
        // A free entry, or one whose database nobody needed for a while and
        // whose worker is gone (a dropped database, a database that stopped
        // generating): reclaimable.
        for (CitusFence& e : citus_shared->fences) {
            const bool free = e.database.load() == InvalidOid;
            const bool stale = !free && e.worker_pid.load() == 0 && idle(e, now);
            if (free || stale) {
                f = &e;
                break;
            }
        }
        if (f != nullptr) {
            f->fence_ms.store(0);
            f->group.store(-1);
            f->window_end_ms.store(0);
            f->declared.store(0);
            f->declared_refused.store(0);
            f->started_ms.store(0);
            f->answered_at.store(0);
            f->wanted_ms.store(0);
            f->keys_wanted_ms.store(0);
            f->runs_wanted_ms.store(0);
            f->keys_answered_ms.store(0);
            key_lease_forget(f);
            spare_runs_forget(f);
            f->database.store(MyDatabaseId, std::memory_order_release);
        }
    }
    if (f != nullptr) {
        (f->*wanted).store(now);
        (f->*asked).store(true);
        const int pid = f->worker_pid.load();
        if (pid != 0 && !worker_alive(pid)) {
            f->worker_pid.store(0);
            f->worker_latch.store(nullptr);
        }
        start = f->worker_pid.load() == 0 && now - f->started_ms.load() >= restart_after_ms;
        if (start)
            f->started_ms.store(now);
    }
    SpinLockRelease(&citus_shared->mutex);
    if (f == nullptr)
        ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                        errmsg("too many databases of this Citus worker generate IDs or use keys"),
                        errdetail("Each such database needs one of this node's %d Citus fence entries, and all are "
                                  "in use; an entry is freed a minute after its database last generated an ID or "
                                  "used a key.",
                                  max_citus_databases),
                        errhint("Generate or obfuscate in fewer databases of this node at once.")));
    if (start) {
        fence_set_text(f, "starting", nullptr);
        BackgroundWorker worker;
        memset(&worker, 0, sizeof worker);
        snprintf(worker.bgw_name, BGW_MAXLEN, "shardid citus fence");
        snprintf(worker.bgw_type, BGW_MAXLEN, "shardid citus fence");
        worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
        worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
        worker.bgw_restart_time = BGW_NEVER_RESTART;
        snprintf(worker.bgw_library_name, BGW_MAXLEN, "shardid");
        snprintf(worker.bgw_function_name, BGW_MAXLEN, "shardid_citus_fence_main");
        worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
        worker.bgw_notify_pid = 0;
        if (!RegisterDynamicBackgroundWorker(&worker, nullptr))
            ereport(ERROR,
                    (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
                     errmsg("no background worker slot is free for shardid's Citus fence"),
                     errdetail("A Citus worker issues IDs only while a background worker of its database has the "
                               "coordinator's confirmation that this server is its group's primary."),
                     errhint("Raise max_worker_processes in postgresql.conf and restart the server.")));
    } else if (asked != &CitusFence::ids_asked || wake_worker(f)) {
        if (Latch* latch = f->worker_latch.load(std::memory_order_acquire))
            SetLatch(latch);
    }
    return f;
}

}  // namespace

CitusFence* citus_fence_need() { return need_entry(&CitusFence::wanted_ms, &CitusFence::ids_asked); }
CitusFence* citus_keys_need() { return need_entry(&CitusFence::keys_wanted_ms, &CitusFence::keys_asked); }
CitusFence* citus_runs_need() { return need_entry(&CitusFence::runs_wanted_ms, &CitusFence::runs_asked); }

void citus_fence_note(CitusFence* f, FenceText field, const char* why, const char* what)
{
    SpinLockAcquire(&f->keys_mutex);
    const bool changed = strncmp(f->*field, why, sizeof(f->*field) - 1) != 0;
    strlcpy(f->*field, why, sizeof(f->*field));
    SpinLockRelease(&f->keys_mutex);
    if (changed && why[0] != '\0')
        ereport(WARNING, (errmsg("%s", what), errdetail("%s", why)));
}

int64_t citus_renewal_interval_ms() { return std::clamp<int64_t>(citus_fence_ms / 10, 200, 1000); }

int64_t citus_wait_bound_ms() { return 5000 + citus_renewal_interval_ms(); }

namespace {

// A statement's waits for renewals, counted together: a statement that
// waited for the key lease and then for a spare run waited twice the bound
// (10.7 s in fences.sh 4d, PostgreSQL 17, a bound of 5.4 s). Waits of one
// statement less than a bound apart share one bound; a statement's wait
// begun more than a bound after its last (a long INSERT ... SELECT through
// two outages) has a bound of its own.
struct WaitLedger {
    uint64 statement = 0;  // statement_number() of the waits counted
    int64_t waited = 0;    // ms waited in them
    int64_t last = 0;      // fence clock: the last step
};
WaitLedger ledger;

}  // namespace

bool citus_fence_wait_step(CitusFence** f, CitusFence* (*need)(), FenceText field, int64_t* step_at, int64_t bound,
                           int64_t* asked_at, uint32* event, const char* event_name, char why[256])
{
    const int64_t now = fence_clock_ms();
    if (*step_at < 0) {
        if (ledger.statement != statement_number() || now - ledger.last > bound) {
            ledger.statement = statement_number();
            ledger.waited = 0;
        }
    } else {
        ledger.waited += std::max<int64_t>(now - *step_at, 0);
    }
    *step_at = now;
    ledger.last = now;
    if (ledger.waited > bound) {
        why[0] = '\0';
        if (*f != nullptr && (superuser() || has_privs_of_role(GetUserId(), ROLE_PG_MONITOR))) {
            SpinLockAcquire(&(*f)->keys_mutex);
            strlcpy(why, (*f)->*field, 256);
            SpinLockRelease(&(*f)->keys_mutex);
        }
        return false;
    }
    if (*asked_at < 0 || now - *asked_at >= 250) {
        *f = need();
        *asked_at = now;
    }
    (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10, wait_event(event_name, event));
    ResetLatch(MyLatch);
    CHECK_FOR_INTERRUPTS();
    return true;
}

}  // namespace shardid::pg

using namespace shardid::pg;

// The background worker "shardid citus fence" of one database: renews the
// confirmation while generators need it, ends a minute after the last.
extern "C" void shardid_citus_fence_main(Datum arg)
{
    const Oid database = DatumGetObjectId(arg);
    pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    citus_shared_attach();
    CitusFence* f = nullptr;
    SpinLockAcquire(&citus_shared->mutex);
    for (CitusFence& e : citus_shared->fences)
        if (e.database.load() == database)
            f = &e;
    bool mine = f != nullptr && !worker_alive(f->worker_pid.load());
    if (mine) {
        f->worker_pid.store(MyProcPid);
        f->worker_latch.store(MyLatch);
    }
    SpinLockRelease(&citus_shared->mutex);
    if (!mine)
        proc_exit(0);  // another worker has the entry, or it was freed
    before_shmem_exit(worker_exit, PointerGetDatum(f));
    BackgroundWorkerInitializeConnectionByOid(database, InvalidOid, 0);
    SetConfigOption("application_name", "shardid citus fence", PGC_USERSET, PGC_S_SESSION);
    pgstat_report_appname("shardid citus fence");
    // The group's confirmation while generators want it, the key ring's
    // lease while statements want keys, spare call-number runs while
    // backends take them, each when due or asked for.
    int64_t ids_due = 0, keys_due = 0, runs_due = 0;
    while (!ShutdownRequestPending) {
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        int64_t now = fence_clock_ms();
        const bool ids = now - f->wanted_ms.load() <= idle_exit_ms;
        const bool keys = now - f->keys_wanted_ms.load() <= idle_exit_ms;
        const bool runs = now - f->runs_wanted_ms.load() <= idle_exit_ms;
        if (!ids && !keys && !runs)
            break;
        // The key lease and the spare runs first: statements wait for them
        // a few seconds at most, generators for the group's confirmation
        // up to twice the fence.
        // A backend waiting for a run goes before a renewal of the lease
        // that is only due (on a loaded machine a request takes a second
        // or more, and a new connection waited for the lease's renewal
        // before its run came); a statement waiting for its key goes first.
        const bool runs_first = runs && !f->keys_asked.load() && f->runs_asked.exchange(false);
        if (runs_first)
            runs_due = fence_clock_ms() + renew_once(f, spare_runs_fill, spare_runs_failed);
        if (keys && (f->keys_asked.exchange(false) || now >= keys_due))
            keys_due = fence_clock_ms() + renew_once(f, key_lease_renew, key_lease_failed);
        if (!keys)
            key_lease_forget(f);
        if (!runs_first && runs && (f->runs_asked.exchange(false) || now >= runs_due))
            runs_due = fence_clock_ms() + renew_once(f, spare_runs_fill, spare_runs_failed);
        if (ids && (f->ids_asked.exchange(false) || now >= ids_due))
            ids_due = fence_clock_ms() + renew_once(f, fence_renew, fence_renew_failed);
        if (!ids)
            stop_fence(f);
        pgstat_report_activity(STATE_IDLE, nullptr);
        now = fence_clock_ms();
        const int64_t due =
            std::min({ids ? ids_due : INT64_MAX, keys ? keys_due : INT64_MAX, runs ? runs_due : INT64_MAX});
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                        long(std::clamp<int64_t>(due - now, 1, 1000)), wait_event("ShardidCitusFence", &fence_event));
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    }
    // Idle: the entry goes, its fence and lease first (generators and
    // statements ask for new ones).
    SpinLockAcquire(&citus_shared->mutex);
    if (idle(*f, fence_clock_ms()) && f->worker_pid.load() == MyProcPid) {
        stop_fence(f);
        key_lease_forget(f);
        spare_runs_forget(f);
        f->worker_pid.store(0);
        f->worker_latch.store(nullptr);
        f->database.store(InvalidOid, std::memory_order_release);
    }
    SpinLockRelease(&citus_shared->mutex);
    proc_exit(0);
}
