// The background worker "shardid coordinator": the only process that
// talks to etcd (through src/etcd/client.hpp). It holds this node's lease,
// claims the node id, records the window's mark, takes counter values for
// backends, and publishes all of it in shared memory
// (src/pg/state/coord_shared.hpp) for generators (src/pg/source/coord_claim.cpp). The
// rules (fencing, marks, counters) are src/core/coord/coord.hpp.
//
// It runs without a database connection; every C++ object it uses lives in
// run(), which never raises an ERROR (in a background worker without an
// error handler one would end the process, which the postmaster restarts a
// second later).
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <string>

#include "core/coord/coord.hpp"
#include "core/text.hpp"
#include "etcd/client.hpp"
#include "pg/source/coord_claim.hpp"
#include "pg/coord/coord_holder.hpp"
#include "pg/coord/coord_worker.hpp"
#include "pg/base/etcd_settings.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/shared.hpp"

extern "C" {
#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "utils/guc.h"
}

extern "C" {
PGDLLEXPORT void shardid_coordinator_main(Datum arg);
}

namespace shardid::pg {

void coord_register_worker()
{
    if (!process_shared_preload_libraries_in_progress || !coord_enabled())
        return;
    BackgroundWorker worker;
    memset(&worker, 0, sizeof worker);
    snprintf(worker.bgw_name, BGW_MAXLEN, "shardid coordinator");
    snprintf(worker.bgw_type, BGW_MAXLEN, "shardid coordinator");
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
    worker.bgw_start_time = BgWorkerStart_ConsistentState;
    worker.bgw_restart_time = 1;
    snprintf(worker.bgw_library_name, BGW_MAXLEN, "shardid");
    snprintf(worker.bgw_function_name, BGW_MAXLEN, "shardid_coordinator_main");
    RegisterBackgroundWorker(&worker);
}

namespace {

volatile sig_atomic_t stop_requested = false;

void on_sigterm(SIGNAL_ARGS)
{
    const int save_errno = errno;
    stop_requested = true;
    SetLatch(MyLatch);
    errno = save_errno;
}

const char* const condition_words[] = {"etcd unreachable", "etcd refused this node's credentials",
                                       "the node id refused", "a key edited by hand"};
static_assert(std::size(condition_words) == size_t(Condition::count), "a word for every condition");

}  // namespace

void Holder::error(Condition kind, const std::string& why)
{
    CoordShared& c = coord_shared();
    SpinLockAcquire(&c.mutex);
    strlcpy(c.last_error, why.c_str(), sizeof c.last_error);
    strlcpy(c.endpoint, client_.endpoint().c_str(), sizeof c.endpoint);
    c.requests = client_.requests();
    c.errors++;
    SpinLockRelease(&c.mutex);
    // A line when the condition starts, not one every retry.
    if (episodes_[int(kind)].fail(wall_clock().now_ms()))
        ereport(LOG, (errmsg("shardid coordinator: %s", why.c_str())));
}

void Holder::failed(const std::string& what, const std::string& why)
{
    const Condition kind =
        client_.last_failure() == etcd::Failure::unauthorized ? Condition::unauthorized : Condition::unreachable;
    error(kind, what + ": " + why);
}

void Holder::ended(Condition kind)
{
    coord::Episode& e = episodes_[int(kind)];
    if (!e.ok(wall_clock().now_ms()))
        return;
    const int64_t more = e.unreported();
    ereport(LOG,
            (errmsg("shardid coordinator: %s for %.1f s, %lld request%s failed%s", condition_words[int(kind)],
                    double(e.lasted_ms()) / 1000, (long long)e.failures(), e.failures() == 1 ? "" : "s",
                    more ? psprintf(" (and %lld shorter episodes before, without lines of their own)", (long long)more)
                         : "")));
}

void Holder::answered()
{
    ended(Condition::unreachable);
    ended(Condition::unauthorized);
}

void Holder::publish_lease()
{
    CoordShared& c = coord_shared();
    c.fence_ms.store(fence_ms_, std::memory_order_release);
    SpinLockAcquire(&c.mutex);
    strlcpy(c.lease_id, lease_.c_str(), sizeof c.lease_id);
    c.lease_ttl_s = lease_ttl_ms_ / 1000;
    c.last_ok_ms = wall_clock().now_ms();
    SpinLockRelease(&c.mutex);
}

// The state shardid_coordination() shows (docs/coordination.md, "States").
void Holder::publish_state()
{
    const char* state;
    if (RecoveryInProgress())
        state = "standby";  // standbys never claim; they claim once promoted
    else if (taking_over_)
        state = "taking over";
    else if (held_ >= 0)
        state = coord::renewal_late(fence_ms_ - fence_clock_ms(), lease_ttl_ms_) ? "expiring"
                : corrupt_                                                       ? "refused"
                                                                                 : "held";
    else if (episodes_[int(Condition::unauthorized)].active())
        state = "unauthorized";
    else if (waiting_)
        state = "waiting";
    else if (refused_)
        state = "refused";
    else
        state = "claiming";
    CoordShared& c = coord_shared();
    SpinLockAcquire(&c.mutex);
    strlcpy(c.state, state, sizeof c.state);
    strlcpy(c.endpoint, client_.endpoint().c_str(), sizeof c.endpoint);
    c.requests = client_.requests();
    SpinLockRelease(&c.mutex);
}

void Holder::run()
{
    prefix_ = etcd_prefix;
    want_id_ = node_id;
    restart_token_ = uint64_t(shared->release_token.load());
    while (!stop_requested) {
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        if (!RecoveryInProgress()) {
            try {
                step();
            } catch (const std::exception& e) {
                error(Condition::unreachable, std::string("unexpected failure: ") + e.what());
            }
        }
        publish_state();
        const int rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                                 held_ >= 0 || RecoveryInProgress() ? 100 : 250, PG_WAIT_EXTENSION);
        if (rc & WL_LATCH_SET)
            ResetLatch(MyLatch);
    }
    release();
    SpinLockAcquire(&coord_shared().mutex);
    strlcpy(coord_shared().state, "stopped", sizeof coord_shared().state);
    SpinLockRelease(&coord_shared().mutex);
}

namespace {

// Every setting the claim needs, checked as given: a value that is not
// usable is refused, never replaced by a default (two clusters meant to be
// apart would share ids). False with the setting, the value and what to do.
bool usable_settings(etcd::Config* config, std::string* why)
{
    std::string reason;
    if (refused_reason() != nullptr) {
        *why = std::string(refused_reason()) + " (PostgreSQL kept the default)";
        return false;
    }
    if (!etcd_numbers(why))
        return false;
    const char* prefix = etcd_prefix ? etcd_prefix : "";
    if (!coord::valid_prefix(prefix, &reason)) {
        *why = "shardid.etcd_prefix = '" + printable(prefix) + "' is not usable: " + reason;
        return false;
    }
    if (etcd_lease_ttl_s < coord::min_lease_ttl_s || etcd_lease_ttl_s > coord::max_lease_ttl_s) {
        *why = "shardid.etcd_lease_ttl = " + std::to_string(etcd_lease_ttl_s) + "s is out of range: it must be " +
               std::to_string(coord::min_lease_ttl_s) + " s to " + std::to_string(coord::max_lease_ttl_s) + " s";
        return false;
    }
    if (etcd_node_id_min > etcd_node_id_max) {
        *why = "shardid.etcd_node_id_min = " + std::to_string(etcd_node_id_min) +
               " is above shardid.etcd_node_id_max = " + std::to_string(etcd_node_id_max) + ": no id could be claimed";
        return false;
    }
    return etcd_client_config(config, why);
}

void worker_main()
{
    etcd::Config config;
    std::string why;
    try {
        CoordShared& c = coord_shared();
        bool logged = false;
        while (!usable_settings(&config, &why)) {
            SpinLockAcquire(&c.mutex);
            strlcpy(c.last_error, why.c_str(), sizeof c.last_error);
            strlcpy(c.state, "misconfigured", sizeof c.state);
            SpinLockRelease(&c.mutex);
            c.misconfigured.store(true, std::memory_order_release);
            ConditionVariableBroadcast(&c.changed);
            if (!logged)
                ereport(LOG,
                        (errmsg("shardid coordinator: %s; no node id is claimed until it is corrected", why.c_str())));
            logged = true;
            // Checked again every 10 s (a password file put in place later).
            const int rc =
                WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10000, PG_WAIT_EXTENSION);
            if (rc & WL_LATCH_SET)
                ResetLatch(MyLatch);
            if (stop_requested)
                return;
        }
        c.misconfigured.store(false, std::memory_order_release);
        // A password over http:// can be read on the way: said at start.
        if (!config.user.empty())
            for (const std::string& e : config.endpoints)
                if (e.compare(0, 7, "http://") == 0) {
                    c.password_in_clear.store(true);
                    ereport(WARNING, (errmsg("shardid coordinator: the etcd password is sent over http:// to %s, "
                                             "readable on the way",
                                             e.c_str()),
                                      errhint("Use https:// endpoints (shardid.etcd_cacert names the CA).")));
                    break;
                }
        // A request in flight is abandoned when the stop comes.
        config.stop = &stop_requested;
        Holder holder(std::move(config));
        holder.run();
    } catch (const std::exception& e) {
        ereport(LOG, (errmsg("shardid coordinator: unexpected failure: %s", e.what())));
    }
}

}  // namespace

}  // namespace shardid::pg

void shardid_coordinator_main(Datum)
{
    using namespace shardid::pg;
    pqsignal(SIGTERM, on_sigterm);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    attach_if_needed();
    coord_shared().worker_latch.store(MyLatch, std::memory_order_release);
    worker_main();
    coord_shared().worker_latch.store(nullptr, std::memory_order_release);
    proc_exit(0);
}
