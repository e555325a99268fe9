// The background worker "shardid coordinator": the only process that
// talks to etcd (through src/etcd/client.hpp, over the transport it loads:
// src/etcd/transport.hpp). It holds this node's lease,
// claims the node id, records the window's mark, takes counter values for
// backends, and publishes all of it in shared memory
// (src/pg/etcd/shared.hpp) for generators (src/pg/etcd/id_source.cpp). The
// rules (fencing, marks, counters) are src/core/etcd/rules.hpp.
//
// This file registers and starts it and checks its settings; the holder's
// loop is src/pg/etcd/worker/holder.hpp, which runs the worker's jobs
// (session, history, counters, node id, shard values): calls go one way,
// worker -> holder -> jobs -> session; what a job learns that all must hear
// of goes back to the holder through one interface (HolderEvents).
//
// It runs without a database connection; every C++ object it uses lives in
// Holder::run(), which never raises an ERROR (in a background worker
// without an error handler one would end the process, which the postmaster
// restarts a second later).
#include <algorithm>
#include <cerrno>
#include <dlfcn.h>
#include <csignal>
#include <cstdio>
#include <string>

#include "core/etcd/rules.hpp"
#include "core/text.hpp"
#include "etcd/client.hpp"
#include "etcd/transport.hpp"
#include "pg/state/shmem.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/etcd/worker/holder.hpp"
#include "pg/etcd/worker/config.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/wait_event.hpp"
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

void etcd_register_worker()
{
    if (!process_shared_preload_libraries_in_progress || !etcd_enabled())
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

// SIGTERM (SignalHandlerForShutdownRequest) sets ShutdownRequestPending
// and the latch: the loop ends, and a request in flight is abandoned.
volatile sig_atomic_t& stop_requested = ShutdownRequestPending;
uint32 worker_event = 0;  // the worker's wait event while misconfigured

// The HTTP transport, from shardid_etcd.so beside shardid.so (loaded here
// only: src/etcd/transport.hpp), or nullptr with why. Loaded once; a
// library of another build is refused.
const ShardidEtcdTransport* load_transport(std::string* why)
{
    static const ShardidEtcdTransport* loaded = nullptr;
    if (loaded != nullptr)
        return loaded;
    char path[MAXPGPATH];
    snprintf(path, sizeof path, "%s/shardid_etcd%s", pkglib_path, DLSUFFIX);
    void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const char* error = lib == nullptr ? dlerror() : nullptr;
    auto fn =
        lib == nullptr ? nullptr : reinterpret_cast<ShardidEtcdTransportFn>(dlsym(lib, SHARDID_ETCD_TRANSPORT_SYMBOL));
    const ShardidEtcdTransport* t = fn == nullptr ? nullptr : fn();
    if (t == nullptr || t->abi != SHARDID_ETCD_ABI) {
        *why = std::string("the etcd transport \"") + path + "\" is not usable: " +
               (error != nullptr ? error
                : t == nullptr   ? "it has no " SHARDID_ETCD_TRANSPORT_SYMBOL "()"
                                 : "it is of another shardid build") +
               "; install shardid again (make install puts shardid_etcd" DLSUFFIX " beside shardid" DLSUFFIX ")";
        if (lib != nullptr)
            dlclose(lib);
        return nullptr;
    }
    return loaded = t;
}

// Every setting the claim needs, checked as given: a value that is not
// usable is refused, never replaced by a default (two clusters meant to be
// apart would share ids). False with the setting, the value and what to do.
bool usable_settings(etcd::Config* config, ClaimSettings* claim, std::string* why)
{
    std::string reason;
    if (refused_reason() != nullptr) {
        *why = std::string(refused_reason()) + " (PostgreSQL kept the default)";
        return false;
    }
    if (!etcd_numbers(why))
        return false;
    const char* prefix = etcd_prefix ? etcd_prefix : "";
    if (!etcd::valid_prefix(prefix, &reason)) {
        *why = "shardid.etcd_prefix = '" + printable(prefix) + "' is not usable: " + reason;
        return false;
    }
    if (etcd_node_id_min > etcd_node_id_max) {
        *why = "shardid.etcd_node_id_min = " + std::to_string(etcd_node_id_min) +
               " is above shardid.etcd_node_id_max = " + std::to_string(etcd_node_id_max) + ": no id could be claimed";
        return false;
    }
    char origin[192];
    setting_origin("shardid.node_id", origin, sizeof origin);
    std::string from = node_id < 0
                           ? "the lowest free id from " + std::to_string(etcd_node_id_min) + " to " +
                                 std::to_string(etcd_node_id_max) + ", as shardid.node_id = -1 asks (" + origin + ")"
                           : "id " + std::to_string(node_id) + ", as shardid.node_id asks (" + origin + ")";
    *claim = ClaimSettings{prefix, node_id, etcd_lease_ttl_s, etcd_node_id_min, etcd_node_id_max, std::move(from)};
    if (!etcd_client_config(config, why))
        return false;
    return (config->transport = load_transport(why)) != nullptr;
}

void worker_main()
{
    etcd::Config config;
    ClaimSettings claim;
    std::string why;
    try {
        EtcdShared& c = etcd_shared();
        bool logged = false;
        while (!usable_settings(&config, &claim, &why)) {
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
            const int rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10000,
                                     wait_event("ShardidCoordinator", &worker_event));
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
        const std::string from = "etcd: " + claim.node_id_from;
        SpinLockAcquire(&c.mutex);
        strlcpy(c.node_id_from, from.c_str(), sizeof c.node_id_from);
        SpinLockRelease(&c.mutex);
        Holder holder(std::move(config), std::move(claim));
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
    pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    attach_if_needed();
    etcd_shared().worker_latch.store(MyLatch, std::memory_order_release);
    worker_main();
    etcd_shared().worker_latch.store(nullptr, std::memory_order_release);
    proc_exit(0);
}
