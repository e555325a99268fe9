// The background worker "shardid coordinator": the only process that
// talks to etcd (through src/etcd/client.hpp). It holds this node's lease,
// claims the node id, records the window's mark, takes counter values for
// backends, and publishes all of it in shared memory
// (src/pg/coord_shared.hpp) for generators (src/pg/coord_claim.cpp). The
// rules (fencing, marks, counters) are src/core/coord.hpp.
//
// It runs without a database connection; every C++ object it uses lives in
// run(), which never raises an ERROR (in a background worker without an
// error handler one would end the process, which the postmaster restarts a
// second later).
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <map>
#include <string>

#include <unistd.h>

#include "core/coord.hpp"
#include "core/text.hpp"
#include "etcd/client.hpp"
#include "pg/coord_claim.hpp"
#include "pg/coord_worker.hpp"
#include "pg/etcd_settings.hpp"
#include "pg/settings.hpp"
#include "pg/shared.hpp"

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

std::string iso_now()
{
    const time_t t = time(nullptr);
    tm utc;
    gmtime_r(&t, &utc);
    char buf[32];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buf;
}

class Worker {
public:
    explicit Worker(etcd::Config config) : client_(std::move(config)) {}

    void run();

private:
    void step();
    void claim();
    bool read_mark();
    void renew_window();
    bool record_window(int id, int64_t end);
    void serve_counters();
    void lose_claim(const std::string& why);
    void release();
    void error(const std::string& why);
    void set_state(const char* state);
    void publish_lease();
    bool keep_lease();

    etcd::Client client_;
    std::string prefix_ = etcd_prefix;
    int want_id_ = node_id;  // -1: the lowest free id
    std::string lease_;
    int64_t lease_ttl_ms_ = 0;
    int64_t fence_ms_ = 0;      // monotonic
    int64_t last_sent_ms_ = 0;  // monotonic send time of the last renewal etcd answered
    int claimed_ = -1;          // the node key held in etcd
    int last_id_ = -1;          // the id claimed last (node_id -1: preferred when free)
    bool refused_ = false;      // the last claim was refused (held elsewhere, or its mark unreadable)
    int held_ = -1;             // published: IDs are issued under it
    int64_t floor_ms_ = 0;
    int64_t recorded_ms_ = 0;            // the window end last recorded in etcd
    std::map<int, int64_t> seen_marks_;  // the highest mark seen per id
    std::string logged_error_;
};

void Worker::set_state(const char* state)
{
    CoordShared& c = coord_shared();
    SpinLockAcquire(&c.mutex);
    strlcpy(c.state, state, sizeof c.state);
    strlcpy(c.endpoint, client_.endpoint().c_str(), sizeof c.endpoint);
    c.requests = client_.requests();
    SpinLockRelease(&c.mutex);
}

void Worker::error(const std::string& why)
{
    CoordShared& c = coord_shared();
    SpinLockAcquire(&c.mutex);
    strlcpy(c.last_error, why.c_str(), sizeof c.last_error);
    strlcpy(c.endpoint, client_.endpoint().c_str(), sizeof c.endpoint);
    c.requests = client_.requests();
    c.errors++;
    SpinLockRelease(&c.mutex);
    if (why != logged_error_) {  // each new error once, not every retry
        ereport(LOG, (errmsg("shardid coordinator: %s", why.c_str())));
        logged_error_ = why;
    }
}

void Worker::publish_lease()
{
    CoordShared& c = coord_shared();
    c.fence_ms.store(fence_ms_, std::memory_order_release);
    SpinLockAcquire(&c.mutex);
    strlcpy(c.lease_id, lease_.c_str(), sizeof c.lease_id);
    c.lease_ttl_s = lease_ttl_ms_ / 1000;
    c.last_ok_ms = wall_clock().now_ms();
    SpinLockRelease(&c.mutex);
}

void Worker::lose_claim(const std::string& why)
{
    CoordShared& c = coord_shared();
    if (held_ >= 0 || claimed_ >= 0) {
        c.held.store(-1, std::memory_order_release);
        c.generation.fetch_add(1, std::memory_order_acq_rel);
        ConditionVariableBroadcast(&c.changed);
        ereport(LOG, (errmsg("shardid coordinator: gave up node id %d: %s", claimed_, why.c_str())));
    }
    held_ = claimed_ = -1;
    error(why);
}

// Grants or renews the lease; false when there is no live one.
bool Worker::keep_lease()
{
    std::string why;
    const int64_t sent = fence_clock_ms();
    if (lease_.empty()) {
        etcd::Grant g;
        if (!client_.grant(etcd_lease_ttl_s, &g, &why)) {
            error("could not get a lease: " + why);
            return false;
        }
        lease_ = g.id;
        lease_ttl_ms_ = g.ttl_s * 1000;
        fence_ms_ = coord::fence_deadline_ms(sent, lease_ttl_ms_);
        last_sent_ms_ = sent;
        publish_lease();
        return true;
    }
    if (sent - last_sent_ms_ >= coord::keepalive_every_ms(lease_ttl_ms_)) {
        int64_t ttl = 0;
        bool alive = false;
        if (!client_.keepalive(lease_, &ttl, &alive, &why)) {
            error("could not renew lease " + lease_ + ": " + why);
        } else if (!alive) {
            const std::string old = lease_;
            lease_.clear();
            lose_claim("lease " + old + " expired in etcd");
            return false;
        } else {
            fence_ms_ = coord::fence_deadline_ms(sent, lease_ttl_ms_);
            last_sent_ms_ = sent;
            publish_lease();
        }
    }
    if (fence_clock_ms() >= fence_ms_) {
        if (claimed_ >= 0)
            lose_claim("lease " + lease_ + " could not be renewed before its fence: IDs stopped");
        // It may have expired in etcd meanwhile: renew it (etcd says whether
        // it lives) or take a new one.
        return false;
    }
    return true;
}

void Worker::claim()
{
    std::string why;
    if (claimed_ < 0) {
        int id = want_id_;
        if (id < 0) {
            std::vector<etcd::KeyValue> kvs;
            const std::string nodes = prefix_ + "/node/";
            if (!client_.range(nodes, coord::prefix_end(prefix_ + "/node"), &kvs, &why)) {
                error("could not list the node ids held: " + why);
                return;
            }
            std::vector<std::pair<std::string, std::string>> held;
            for (const etcd::KeyValue& kv : kvs)
                held.emplace_back(kv.key, kv.lease);
            id = coord::choose_id(prefix_, held, lease_, last_id_, etcd_node_id_min, etcd_node_id_max);
            if (id < 0) {
                error("every node id from " + std::to_string(etcd_node_id_min) + " to " +
                      std::to_string(etcd_node_id_max) + " is held by another node");
                return;
            }
        }
        coord::Holder me;
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        me.host = host;
        me.port = PostPortNumber;
        me.system_identifier = std::to_string(GetSystemIdentifier());
        me.since = iso_now();
        const std::string key = coord::node_key(prefix_, id);
        etcd::Txn t;
        if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::create, key, 0, ""}},
                                          {{true, key, coord::holder_value(me), lease_}}, {{false, key, "", ""}}),
                         &t, &why)) {
            error("could not claim node id " + std::to_string(id) + ": " + why);
            return;
        }
        if (!t.succeeded && !(t.kvs.size() == 1 && t.kvs[0].lease == lease_)) {
            error("node id " + std::to_string(id) + " is held by another node: " +
                  (t.kvs.empty() ? std::string("(its key vanished)") : coord::describe_holder(t.kvs[0].value)));
            refused_ = true;
            return;
        }
        claimed_ = last_id_ = id;
        ereport(LOG, (errmsg("shardid coordinator: claimed node id %d with lease %s", id, lease_.c_str())));
    }
    refused_ = false;
    if (!read_mark())
        return;
    // Every slot continues above the previous holder's mark, before any ID
    // is issued under the claim.
    raise_claim_floor(floor_ms_);
    recorded_ms_ = floor_ms_;
    const int64_t end = coord::window_target(wall_clock().now_ms(), -1, floor_ms_, recorded_ms_);
    if (!record_window(claimed_, end))
        return;
    recorded_ms_ = end;
    seen_marks_[claimed_] = std::max(seen_marks_[claimed_], end);
    CoordShared& c = coord_shared();
    c.floor_ms.store(floor_ms_);
    c.window_end_ms.store(end, std::memory_order_release);
    c.need_ms.store(-1);
    c.fence_ms.store(fence_ms_, std::memory_order_release);
    held_ = claimed_;
    c.generation.fetch_add(1, std::memory_order_acq_rel);
    c.held.store(held_, std::memory_order_release);
    SpinLockAcquire(&c.mutex);
    c.claimed_at_ms = wall_clock().now_ms();
    c.last_error[0] = '\0';
    SpinLockRelease(&c.mutex);
    logged_error_.clear();
    set_state("held");
    ConditionVariableBroadcast(&c.changed);
    ereport(LOG, (errmsg("shardid coordinator: issuing IDs with node id %d above %lld", held_, (long long)floor_ms_)));
}

// The mark of the id claimed: IDs start above it. False (and the id is not
// used) when it cannot be read or is not a number.
bool Worker::read_mark()
{
    std::string why;
    const std::string key = coord::mark_key(prefix_, claimed_);
    std::vector<etcd::KeyValue> kvs;
    if (!client_.range(key, "", &kvs, &why)) {
        error("could not read \"" + key + "\": " + why);
        return false;
    }
    int64_t mark = 0;
    if (!kvs.empty() && !coord::parse_count(kvs[0].value, &mark)) {
        error("the key \"" + key + "\" holds \"" + printable(kvs[0].value, 40) +
              "\", which is not a time in milliseconds: node id " + std::to_string(claimed_) +
              " is not used until it is fixed");
        refused_ = true;
        return false;
    }
    // A mark lowered by hand never lowers what this node has seen.
    floor_ms_ = std::max(mark, seen_marks_[claimed_]);
    return true;
}

// Records `end` as the window's end of `id` in etcd, only while this
// node's lease holds the id; false (and the claim given up, when the lease
// no longer holds it) otherwise.
bool Worker::record_window(int id, int64_t end)
{
    const std::string node = coord::node_key(prefix_, id), mark = coord::mark_key(prefix_, id);
    std::string why;
    etcd::Txn t;
    if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::lease, node, 0, lease_}},
                                      {{true, mark, std::to_string(end), ""}}, {}),
                     &t, &why)) {
        error("could not record the window of node id " + std::to_string(id) + ": " + why);
        return false;
    }
    if (!t.succeeded) {
        lose_claim("the key \"" + node + "\" is no longer held by lease " + lease_);
        return false;
    }
    return true;
}

void Worker::renew_window()
{
    CoordShared& c = coord_shared();
    const int64_t need = c.need_ms.load();
    const int64_t now = wall_clock().now_ms();
    if (!coord::window_due(now, recorded_ms_, need))
        return;
    const int64_t end = coord::window_target(now, need, floor_ms_, recorded_ms_);
    if (!record_window(held_, end))
        return;
    recorded_ms_ = end;
    seen_marks_[held_] = std::max(seen_marks_[held_], end);
    c.window_end_ms.store(end, std::memory_order_release);
    int64_t expected = need;
    if (need < end)
        c.need_ms.compare_exchange_strong(expected, -1);
    ConditionVariableBroadcast(&c.changed);
}

void Worker::serve_counters()
{
    CoordShared& c = coord_shared();
    for (int k = 0; k < node_state_field_count; k++) {
        if (node_state_fields[k].kind != NodeStateFieldKind::counter_floor)
            continue;
        const NodeCounter which = NodeCounter(k);
        if (c.counter_want[k].load() == 0 || c.counter_ready[k].load() >= 0)
            continue;
        const std::string key = coord::counter_key(prefix_, node_state_fields[int(which)].keyword);
        std::string why;
        std::vector<etcd::KeyValue> kvs;
        if (!client_.range(key, "", &kvs, &why)) {
            error("could not read \"" + key + "\": " + why);
            continue;
        }
        int64_t current = 0, revision = 0;
        if (!kvs.empty()) {
            revision = kvs[0].mod_revision;
            if (!coord::parse_count(kvs[0].value, &current)) {
                error("the key \"" + key + "\" holds \"" + printable(kvs[0].value, 40) +
                      "\", which is not a count: no " + node_counter_name(which) + " is taken until it is fixed");
                continue;
            }
        }
        const int64_t floor = counter_floor(which);
        const int64_t next = std::max(current, floor) + 1;
        etcd::Txn t;
        if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::mod, key, revision, ""}},
                                          {{true, key, std::to_string(next), ""}}, {}),
                         &t, &why)) {
            error("could not take a value from \"" + key + "\": " + why);
            continue;
        }
        if (!t.succeeded)
            continue;  // another node took one meanwhile: again, next round
        c.counter_ready[k].store(next);
        c.counter_want[k].store(0);
        ConditionVariableBroadcast(&c.changed);
    }
}

void Worker::release()
{
    CoordShared& c = coord_shared();
    c.held.store(-1, std::memory_order_release);
    c.generation.fetch_add(1, std::memory_order_acq_rel);
    if (!lease_.empty()) {
        std::string why;
        // Revoking deletes the node key at once: the id is free for another
        // node, which starts above the mark this one recorded.
        if (!client_.revoke(lease_, &why))
            ereport(LOG, (errmsg("shardid coordinator: could not revoke lease %s: %s", lease_.c_str(), why.c_str())));
        else if (claimed_ >= 0)
            ereport(LOG, (errmsg("shardid coordinator: released node id %d", claimed_)));
    }
}

void Worker::step()
{
    serve_counters();
    if (!keep_lease())
        return;
    if (held_ < 0)
        claim();
    if (held_ >= 0)
        renew_window();
}

void Worker::run()
{
    if (client_.endpoint().empty()) {
        error("shardid.etcd_endpoints is empty");
    }
    set_state("standby");
    while (!stop_requested) {
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        if (RecoveryInProgress()) {
            set_state("standby");  // standbys never claim; they claim once promoted
        } else {
            try {
                step();
            } catch (const std::exception& e) {
                error(std::string("unexpected failure: ") + e.what());
            }
            set_state(held_ >= 0 ? "held" : refused_ ? "refused" : "claiming");
        }
        const int rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                                 held_ >= 0 || RecoveryInProgress() ? 100 : 250, PG_WAIT_EXTENSION);
        if (rc & WL_LATCH_SET)
            ResetLatch(MyLatch);
    }
    release();
    set_state("stopped");
}

void worker_main()
{
    etcd::Config config;
    std::string why;
    try {
        while (!etcd_client_config(&config, &why)) {
            CoordShared& c = coord_shared();
            SpinLockAcquire(&c.mutex);
            strlcpy(c.last_error, why.c_str(), sizeof c.last_error);
            strlcpy(c.state, "misconfigured", sizeof c.state);
            SpinLockRelease(&c.mutex);
            ereport(LOG, (errmsg("shardid coordinator: %s", why.c_str())));
            // Checked again every 10 s (a password file put in place later).
            const int rc =
                WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10000, PG_WAIT_EXTENSION);
            if (rc & WL_LATCH_SET)
                ResetLatch(MyLatch);
            if (stop_requested)
                return;
        }
        Worker worker(std::move(config));
        worker.run();
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
