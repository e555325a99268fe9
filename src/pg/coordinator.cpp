// Node ids, DecimalId generator ids and call-number run ids from etcd: the
// settings, the background worker "shardid coordinator" that holds the
// claim, what generators ask of it, and shardid_coordination(). The rules
// (fencing, marks, counters): src/core/coord.hpp; the etcd client:
// src/core/etcd.hpp.
//
// The worker is the only process that talks to etcd. It runs without a
// database connection; every C++ object it uses lives in run(), which
// never raises an ERROR (in a background worker without an error handler
// one would end the process, which the postmaster restarts a second later).
#include <algorithm>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <unistd.h>

#include "pg/coordinator.hpp"

extern "C" {
#include "access/xlog.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "postmaster/postmaster.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include "core/coord.hpp"
#include "core/etcd.hpp"
#include "core/schemes.hpp"
#include "pg/guard.hpp"
#include "pg/layouts.hpp"
#include "pg/settings.hpp"
#include "pg/shared.hpp"
#include "pg/timeconv.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(shardid_coordination);
PGDLLEXPORT void shardid_coordinator_main(Datum arg);
}

namespace shardid::pg {

int node_id_source = int(NodeIdSource::setting);

namespace {

char* etcd_endpoints = nullptr;
char* etcd_prefix = nullptr;
int etcd_lease_ttl_s = 10;
char* etcd_user = nullptr;
char* etcd_password_file = nullptr;
char* etcd_cacert = nullptr;
char* etcd_cert = nullptr;
char* etcd_key = nullptr;
int etcd_node_id_min = 0;
int etcd_node_id_max = 1023;
int etcd_wait_ms = 10000;

const config_enum_entry source_options[] = {
    {"setting", int(NodeIdSource::setting), false},
    {"etcd", int(NodeIdSource::etcd), false},
    {nullptr, 0, false},
};

bool check_endpoints(char** newval, void**, GucSource)
{
    if (*newval == nullptr || **newval == '\0')
        return true;  // the worker reports a missing list
    try {
        std::vector<std::string> list;
        std::string why;
        if (coord::parse_endpoints(*newval, &list, &why))
            return true;
        GUC_check_errdetail("%s.", why.c_str());
    } catch (...) {
        GUC_check_errdetail("The list could not be read.");
    }
    GUC_check_errhint("List etcd's client URLs separated by commas, such as http://10.0.0.1:2379,http://10.0.0.2:2379.");
    return false;
}

bool check_prefix(char** newval, void**, GucSource)
{
    try {
        std::string why;
        if (*newval != nullptr && coord::valid_prefix(*newval, &why))
            return true;
        GUC_check_errdetail("The prefix is not usable: %s.", why.c_str());
    } catch (...) {
        GUC_check_errdetail("The prefix could not be read.");
    }
    return false;
}

int64_t mono_ms()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

CoordShared& cs() { return shared->coord; }

void wake_worker()
{
    if (Latch* latch = cs().worker_latch.load(std::memory_order_acquire))
        SetLatch(latch);
}

uint32 etcd_wait_event()
{
#if PG_VERSION_NUM >= 170000
    static uint32 event = 0;
    if (event == 0)
        event = WaitEventExtensionNew("ShardidEtcd");
    return event;
#else
    return PG_WAIT_EXTENSION;
#endif
}

// The worker's last error, for a message (copied under the mutex).
void last_error(char* out, size_t size)
{
    CoordShared& c = cs();
    SpinLockAcquire(&c.mutex);
    strlcpy(out, c.last_error[0] ? c.last_error : "none", size);
    SpinLockRelease(&c.mutex);
}

int counter_index(NodeCounter which) { return which == NodeCounter::generator ? 0 : 1; }

}  // namespace

const char* coord_counter_name(NodeCounter which)
{
    return which == NodeCounter::generator ? "DecimalId generator id" : "call-number run id";
}

void coord_init(CoordShared& c)
{
    c.held.store(-1);
    c.generation.store(1);
    c.need_ms.store(-1);
    for (auto& r : c.counter_ready)
        r.store(-1);
    ConditionVariableInit(&c.changed);
    SpinLockInit(&c.mutex);
    strlcpy(c.state, "starting", sizeof c.state);
}

bool coord_check_node_id(int* newval, void**, GucSource source)
{
    (void)newval;
    // In etcd mode the node id is the node's, claimed at server start: a
    // session, role or database value would make IDs under an id nobody claimed.
    if (coord_enabled() && source >= PGC_S_GLOBAL && source != PGC_S_OVERRIDE) {
        GUC_check_errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM);
        GUC_check_errmsg("shardid.node_id cannot be set per session, role or database when shardid.node_id_source is etcd");
        GUC_check_errdetail("The node id is claimed from etcd for the whole node at server start.");
        GUC_check_errhint("Set it in postgresql.conf (-1 claims the lowest free id) and restart the server.");
        return false;
    }
    return true;
}

void coord_define_settings()
{
    DefineCustomIntVariable("shardid.etcd_wait", "How long a generator waits for a claim or a counter from etcd.",
                            "After it, generation fails with SQLSTATE 55000.", &etcd_wait_ms, 10000, 0, 3600000,
                            PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
    // The rest take effect at server start, which PostgreSQL allows only
    // for a library in shared_preload_libraries; loaded later, a node takes
    // its id from shardid.node_id (there is no worker to claim one).
    if (!process_shared_preload_libraries_in_progress)
        return;
    DefineCustomEnumVariable("shardid.node_id_source", "Where this node's id comes from: setting or etcd.",
                             "setting: shardid.node_id as configured. etcd: claimed from etcd at server start, "
                             "with fencing and marks, so that no two nodes use one id.",
                             &node_id_source, int(NodeIdSource::setting), source_options, PGC_POSTMASTER, 0, NULL,
                             NULL, NULL);
    DefineCustomStringVariable("shardid.etcd_endpoints", "etcd client URLs, separated by commas.",
                               "Used when shardid.node_id_source is etcd; tried in turn.", &etcd_endpoints, "",
                               PGC_POSTMASTER, GUC_SUPERUSER_ONLY, check_endpoints, NULL, NULL);
    DefineCustomStringVariable("shardid.etcd_prefix", "The etcd key prefix under which shardid keeps its keys.",
                               "Nodes that share a prefix share node ids and counters.", &etcd_prefix, "/shardid",
                               PGC_POSTMASTER, GUC_SUPERUSER_ONLY, check_prefix, NULL, NULL);
    DefineCustomIntVariable("shardid.etcd_lease_ttl", "TTL of this node's etcd lease.",
                            "The node stops issuing IDs a margin before the lease can expire when it cannot "
                            "renew it; another node can take its id after it expired.",
                            &etcd_lease_ttl_s, 10, 2, 300, PGC_POSTMASTER, GUC_UNIT_S | GUC_SUPERUSER_ONLY, NULL,
                            NULL, NULL);
    DefineCustomStringVariable("shardid.etcd_user", "etcd user name (empty: no authentication).", NULL, &etcd_user,
                               "", PGC_POSTMASTER, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);
    DefineCustomStringVariable("shardid.etcd_password_file", "File holding the etcd user's password.", NULL,
                               &etcd_password_file, "", PGC_POSTMASTER, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);
    DefineCustomStringVariable("shardid.etcd_cacert", "CA certificate file for https etcd endpoints.", NULL,
                               &etcd_cacert, "", PGC_POSTMASTER, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);
    DefineCustomStringVariable("shardid.etcd_cert", "Client certificate file for etcd.", NULL, &etcd_cert, "",
                               PGC_POSTMASTER, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);
    DefineCustomStringVariable("shardid.etcd_key", "Client key file for etcd.", NULL, &etcd_key, "", PGC_POSTMASTER,
                               GUC_SUPERUSER_ONLY, NULL, NULL, NULL);
    DefineCustomIntVariable("shardid.etcd_node_id_min", "Lowest node id claimed when shardid.node_id is -1.", NULL,
                            &etcd_node_id_min, 0, 0, INT_MAX, PGC_POSTMASTER, GUC_SUPERUSER_ONLY, NULL, NULL, NULL);
    DefineCustomIntVariable("shardid.etcd_node_id_max", "Highest node id claimed when shardid.node_id is -1.",
                            "Keep it within the node field of every scheme in use (1023 fits them all).",
                            &etcd_node_id_max, 1023, 0, INT_MAX, PGC_POSTMASTER, GUC_SUPERUSER_ONLY, NULL, NULL,
                            NULL);
}

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

bool coord_node_shard(const Layout& layout, uint64_t* shard, uint64_t* generation, Status* status)
{
    CoordShared& c = cs();
    *generation = c.generation.load(std::memory_order_acquire);
    const int held = c.held.load(std::memory_order_acquire);
    // The fence is checked once, in coord_confirm(), after the ID is made
    // and before it is returned; here only whether there is a claim at all.
    if (held < 0) {
        *status = Status::fail(Error::not_claimed, "this node holds no node id from etcd")
                      .with_detail("Generating %s values needs a node id claimed from etcd "
                                   "(shardid.node_id_source = etcd).",
                                   layout.name)
                      .with_hint("See SELECT * FROM shardid_coordination(); for the claim and the last error.");
        return false;
    }
    if (!check_shard(layout, held, "the node id claimed from etcd", status)) {
        status->with_hint("Set shardid.etcd_node_id_max to at most %llu, or shardid.node_id to such an id, and "
                          "restart the server.",
                          (unsigned long long)layout.shard_max());
        return false;
    }
    *shard = uint64_t(held);
    return true;
}

bool coord_confirm(uint64_t generation, int64_t tick_ms, Status* status)
{
    CoordShared& c = cs();
    if (c.generation.load(std::memory_order_acquire) != generation || c.held.load() < 0 ||
        mono_ms() >= c.fence_ms.load(std::memory_order_acquire)) {
        *status = Status::fail(Error::not_claimed, "this node lost its node id claim in etcd")
                      .with_detail("The lease could not be renewed in time, or the claim changed; no ID was "
                                   "handed out under it.")
                      .with_hint("See SELECT * FROM shardid_coordination(); for the claim and the last error.");
        return false;
    }
    if (tick_ms >= c.window_end_ms.load(std::memory_order_acquire)) {
        raise_to(c.need_ms, int64_t(tick_ms));
        wake_worker();
        *status = Status::fail(Error::not_claimed, "the window recorded in etcd for this node id ends before the ID")
                      .with_detail("IDs are issued only below the mark recorded in etcd, which could not be moved "
                                   "in time.")
                      .with_hint("See SELECT * FROM shardid_coordination(); for the last error.");
        return false;
    }
    return true;
}

void coord_wait(TimestampTz since, const Status& why)
{
    if (TimestampDifferenceExceeds(since, GetCurrentTimestamp(), etcd_wait_ms)) {
        ConditionVariableCancelSleep();
        char err[512];
        last_error(err, sizeof err);
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("%s", why.message),
                        errdetail("%s Waited %d ms (shardid.etcd_wait); the coordinator's last error: %s.", why.detail,
                                  etcd_wait_ms, err),
                        errhint("%s", why.hint)));
    }
    wake_worker();
    ConditionVariableTimedSleep(&cs().changed, 50, etcd_wait_event());
}

int64 coord_take_counter(NodeCounter which)
{
    attach_if_needed();
    CoordShared& c = cs();
    const int k = counter_index(which);
    const TimestampTz since = GetCurrentTimestamp();
    for (;;) {
        const int64 value = c.counter_ready[k].exchange(-1);
        if (value >= 0) {
            ConditionVariableCancelSleep();
            return value;
        }
        if (TimestampDifferenceExceeds(since, GetCurrentTimestamp(), etcd_wait_ms)) {
            ConditionVariableCancelSleep();
            char err[512];
            last_error(err, sizeof err);
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                            errmsg("no %s could be taken from etcd", coord_counter_name(which)),
                            errdetail("Waited %d ms (shardid.etcd_wait); the coordinator's last error: %s.",
                                      etcd_wait_ms, err),
                            errhint("See SELECT * FROM shardid_coordination(); and check that etcd is reachable.")));
        }
        c.counter_want[k].store(1);
        wake_worker();
        ConditionVariableTimedSleep(&c.changed, 50, etcd_wait_event());
    }
}

// ---------------------------------------------------------------------------
// The worker.

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
    int want_id_ = node_id;
    std::string lease_;
    int64_t lease_ttl_ms_ = 0;
    int64_t fence_ms_ = 0;       // monotonic
    int64_t last_sent_ms_ = 0;   // monotonic send time of the last renewal etcd answered
    int claimed_ = -1;           // the node key held in etcd
    int last_id_ = -1;
    bool refused_ = false;       // the last claim was refused (held elsewhere, or its mark unreadable)           // the id claimed last (node_id -1: preferred when free)
    int held_ = -1;              // published: IDs are issued under it
    int64_t floor_ms_ = 0;
    int64_t recorded_ms_ = 0;    // the window end last recorded in etcd
    std::map<int, int64_t> seen_marks_;  // the highest mark seen per id
    std::string logged_error_;
};

void Worker::set_state(const char* state)
{
    CoordShared& c = cs();
    SpinLockAcquire(&c.mutex);
    strlcpy(c.state, state, sizeof c.state);
    strlcpy(c.endpoint, client_.endpoint().c_str(), sizeof c.endpoint);
    c.requests = client_.requests();
    SpinLockRelease(&c.mutex);
}

void Worker::error(const std::string& why)
{
    CoordShared& c = cs();
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
    CoordShared& c = cs();
    c.fence_ms.store(fence_ms_, std::memory_order_release);
    SpinLockAcquire(&c.mutex);
    strlcpy(c.lease_id, lease_.c_str(), sizeof c.lease_id);
    c.lease_ttl_s = lease_ttl_ms_ / 1000;
    c.last_ok_ms = wall_clock().now_ms();
    SpinLockRelease(&c.mutex);
}

void Worker::lose_claim(const std::string& why)
{
    CoordShared& c = cs();
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
    const int64_t sent = mono_ms();
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
    if (mono_ms() >= fence_ms_) {
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
            std::vector<int> taken;
            for (const etcd::KeyValue& kv : kvs) {
                const int n = coord::node_id_of_key(prefix_, kv.key);
                if (n >= 0 && kv.lease == lease_)
                    id = n;  // ours already (an answer lost on the way back)
                if (n >= 0)
                    taken.push_back(n);
            }
            // The id this worker held before, when it is free again; else the lowest free one.
            if (id < 0 && last_id_ >= 0 && std::find(taken.begin(), taken.end(), last_id_) == taken.end())
                id = last_id_;
            if (id < 0)
                id = coord::lowest_free(taken, etcd_node_id_min, etcd_node_id_max);
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
    CoordShared& c = cs();
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
        error("the key \"" + key + "\" holds \"" + coord::printable(kvs[0].value, 40) +
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
    CoordShared& c = cs();
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
    CoordShared& c = cs();
    for (NodeCounter which : {NodeCounter::generator, NodeCounter::run}) {
        const int k = counter_index(which);
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
                error("the key \"" + key + "\" holds \"" + coord::printable(kvs[0].value, 40) + "\", which is not a count: no " +
                      coord_counter_name(which) + " is taken until it is fixed");
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
    CoordShared& c = cs();
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

// Reads the settings into a client configuration; false with a reason.
bool worker_config(etcd::Config* config, std::string* why)
{
    if (!coord::parse_endpoints(etcd_endpoints ? etcd_endpoints : "", &config->endpoints, why)) {
        *why = "shardid.etcd_endpoints is not usable: " + *why;
        return false;
    }
    config->user = etcd_user ? etcd_user : "";
    if (!config->user.empty()) {
        std::ifstream in(etcd_password_file ? etcd_password_file : "");
        if (!in || !std::getline(in, config->password)) {
            *why = std::string("could not read the password file \"") + (etcd_password_file ? etcd_password_file : "") +
                   "\" (shardid.etcd_password_file)";
            return false;
        }
    }
    config->cacert = etcd_cacert ? etcd_cacert : "";
    config->cert = etcd_cert ? etcd_cert : "";
    config->key = etcd_key ? etcd_key : "";
    config->timeout_ms = coord::request_timeout_ms(int64_t(etcd_lease_ttl_s) * 1000);
    return true;
}

void worker_main()
{
    etcd::Config config;
    std::string why;
    try {
        while (!worker_config(&config, &why)) {
            CoordShared& c = cs();
            SpinLockAcquire(&c.mutex);
            strlcpy(c.last_error, why.c_str(), sizeof c.last_error);
            strlcpy(c.state, "misconfigured", sizeof c.state);
            SpinLockRelease(&c.mutex);
            ereport(LOG, (errmsg("shardid coordinator: %s", why.c_str())));
            // Checked again every 10 s (a password file put in place later).
            const int rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10000, PG_WAIT_EXTENSION);
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

void raise_claim_floor(int64_t floor_ms)
{
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    raise_to(shared->claim_floor_ms, floor_ms);
    for (int i = 0, n = shared->n_used.load(std::memory_order_acquire); i < n; i++) {
        Slot& slot = shared->slots[i];
        claim_floor_raise(slot.shape.layout(slot.name), slot.state, floor_ms);
    }
    LWLockRelease(AddinShmemInitLock);
}

}  // namespace shardid::pg

void shardid_coordinator_main(Datum)
{
    using namespace shardid::pg;
    pqsignal(SIGTERM, on_sigterm);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    attach_if_needed();
    cs().worker_latch.store(MyLatch, std::memory_order_release);
    worker_main();
    cs().worker_latch.store(nullptr, std::memory_order_release);
    proc_exit(0);
}

// shardid_coordination(): where the node id comes from and the state of the claim.
extern "C" Datum shardid_coordination(PG_FUNCTION_ARGS)
{
    using namespace shardid;
    using namespace shardid::pg;
    attach_if_needed();
    CoordShared& c = cs();
    Datum values[14];
    bool nulls[14];
    for (bool& n : nulls)
        n = true;
    const bool etcd = coord_enabled();
    values[0] = CStringGetTextDatum(etcd ? "etcd" : "setting");
    nulls[0] = false;
    if (!etcd) {
        values[1] = CStringGetTextDatum(node_id >= 0 ? "configured" : "unset");
        nulls[1] = false;
        if (node_id >= 0) {
            values[2] = Int32GetDatum(node_id);
            nulls[2] = false;
        }
        return return_record(fcinfo, values, nulls);
    }
    char state[32], endpoint[256], err[512], lease[24];
    int64 ttl, claimed_at, last_ok;
    uint64 requests, errors;
    SpinLockAcquire(&c.mutex);
    strlcpy(state, c.state, sizeof state);
    strlcpy(endpoint, c.endpoint, sizeof endpoint);
    strlcpy(err, c.last_error, sizeof err);
    strlcpy(lease, c.lease_id, sizeof lease);
    ttl = c.lease_ttl_s;
    claimed_at = c.claimed_at_ms;
    last_ok = c.last_ok_ms;
    requests = c.requests;
    errors = c.errors;
    SpinLockRelease(&c.mutex);
    const int held = c.held.load();
    const int64 now_wall = wall_clock().now_ms();
    auto ts = [](int64 ms) { return TimestampTzGetDatum(timestamptz_of_unix_ms(ms)); };
    values[1] = CStringGetTextDatum(state);
    nulls[1] = false;
    if (held >= 0) {
        values[2] = Int32GetDatum(held);
        values[3] = ts(claimed_at);
        values[6] = ts(now_wall + (c.fence_ms.load() - mono_ms()));
        values[7] = ts(c.floor_ms.load());
        values[8] = ts(c.window_end_ms.load());
        nulls[2] = nulls[3] = nulls[6] = nulls[7] = nulls[8] = false;
    }
    if (lease[0]) {
        values[4] = CStringGetTextDatum(lease);
        values[5] = Int32GetDatum(int32(ttl));
        nulls[4] = nulls[5] = false;
    }
    if (endpoint[0]) {
        values[9] = CStringGetTextDatum(endpoint);
        nulls[9] = false;
    }
    if (err[0]) {
        values[10] = CStringGetTextDatum(err);
        nulls[10] = false;
    }
    if (last_ok > 0) {
        values[11] = ts(last_ok);
        nulls[11] = false;
    }
    values[12] = Int64GetDatum(int64(requests));
    values[13] = Int64GetDatum(int64(errors));
    nulls[12] = nulls[13] = false;
    return return_record(fcinfo, values, nulls);
}
