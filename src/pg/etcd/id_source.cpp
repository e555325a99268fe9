// The node id claimed from etcd, as generators see it: the etcd node-id
// source. Generators read the claim the worker published (atomics), wait on
// a condition variable, interruptibly and for at most shardid.etcd_wait,
// while there is none, and ask the worker for counter values.
#include "pg/etcd/etcd.hpp"

#include <algorithm>

extern "C" {
#include "catalog/pg_authid_d.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/timestamp.h"
}

#include "core/schemes.hpp"
#include "pg/source/node_source.hpp"
#include "pg/base/settings.hpp"
#include "pg/etcd/shard_claims.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/state/shared.hpp"
#include "pg/base/wait_event.hpp"

namespace shardid::pg {

namespace {

void wake_worker()
{
    if (Latch* latch = etcd_shared().worker_latch.load(std::memory_order_acquire))
        SetLatch(latch);
}

uint32 etcd_event = 0;  // the wait event of a backend waiting for the coordinator

// What a message says of the worker's last error: the error itself for
// those who may read shardid_coordination() (superusers and pg_monitor),
// else only the coordinator's state and where to look, since the error may
// name an endpoint, a file or a user. Copied under the mutex.
void last_error(char* out, size_t size)
{
    const bool monitor = superuser() || has_privs_of_role(GetUserId(), ROLE_PG_MONITOR);
    EtcdShared& c = etcd_shared();
    char state[sizeof c.state];
    SpinLockAcquire(&c.mutex);
    strlcpy(out, c.last_error[0] ? c.last_error : "none", size);
    strlcpy(state, c.state, sizeof state);
    SpinLockRelease(&c.mutex);
    if (!monitor)
        snprintf(out, size,
                 "shown to superusers and members of pg_monitor by shardid_coordination(), and in the server log "
                 "(the coordinator is \"%s\")",
                 state);
}

// Ends a wait for the worker with `message` once shardid.etcd_wait has
// passed since `since`; otherwise wakes the worker and sleeps a little.
void wait_for_worker(TimestampTz since, const char* message, const char* detail, const char* hint)
{
    // While etcd's history settles (a new prefix, or etcd lost its data),
    // the claim comes once it has: waited for, not refused, and
    // shardid.etcd_wait counts from its end.
    static TimestampTz settling_seen = 0;
    const TimestampTz now = GetCurrentTimestamp();
    if (fence_clock_ms() < etcd_shared().settling_until_ms.load(std::memory_order_acquire))
        settling_seen = now;
    if (TimestampDifferenceExceeds(std::max(since, settling_seen), now, etcd_wait_ms)) {
        ConditionVariableCancelSleep();
        count_claim_refusal();
        count_generation_refusal(GenerationRefusal::waiting);
        char err[512];
        last_error(err, sizeof err);
        // A settling lengthened the wait: by how much, and why.
        char waited[256];
        if (settling_seen > since)
            snprintf(waited, sizeof waited,
                     "Waited %.1f s: etcd's history under the prefix settled meanwhile (a new prefix, or etcd lost "
                     "its data: a lease TTL and its margin, of the longest TTL under the prefix), then %d ms "
                     "(shardid.etcd_wait)",
                     double(now - since) / USECS_PER_SEC, etcd_wait_ms);
        else
            snprintf(waited, sizeof waited, "Waited %d ms (shardid.etcd_wait)", etcd_wait_ms);
        ereport(ERROR,
                (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("%s", message),
                 errdetail("%s%s%s; the coordinator's last error: %s.", detail, detail[0] ? " " : "", waited, err),
                 errhint("%s", hint)));
    }
    wake_worker();
    ConditionVariableTimedSleep(&etcd_shared().changed, 50, wait_event("ShardidEtcd", &etcd_event));
}

constexpr const char* see_coordination = "See SELECT * FROM shardid_coordination(); for the claim and the last error.";

class EtcdSource final : public NodeIdSource {
public:
    constexpr EtcdSource() : NodeIdSource(true) {}
    const char* name() const override { return "etcd"; }

    // Outside guarded(): the claim table's share of a role other than a
    // superuser is bounded (superuser() is cached per role).
    void prepare(bool value) const override
    {
        if (value)
            set_claim_caller(superuser());
    }
    // A wait for the next tick is bounded too (a second at least: a
    // layout's next millisecond, or TraceId's next second, is always
    // waited for).
    int64_t next_tick_wait_ms() const override { return std::max<int64_t>(etcd_wait_ms, 1000); }
    bool reads_fence_clock() const override { return true; }
    void explain(Status* status) const override { name_claim_holders(status); }

    bool hold(SourceTicket* ticket, Status* status) const override
    {
        EtcdShared& c = etcd_shared();
        if (c.misconfigured.load(std::memory_order_acquire)) {
            // Which setting and why stays with the operators (the server
            // log, shardid_coordination()): it may name a file, a user or
            // an endpoint, and every role that generates IDs sees this.
            *status = Status::fail(Error::not_configured, "the etcd settings of this node are not usable")
                          .with_detail("No node id is claimed until they are corrected; the server log and "
                                       "shardid_coordination() (superusers and pg_monitor) say which setting.")
                          .with_hint("Correct the setting in postgresql.conf and restart the server.");
            return false;
        }
        ticket->generation = c.generation.load(std::memory_order_acquire);
        ticket->id = c.held.load(std::memory_order_acquire);
        // The fence is checked once, in confirm(), after the ID is made and
        // before it is returned; here only whether there is a claim at all.
        if (ticket->id < 0) {
            *status = Status::fail(Error::not_claimed, "this node holds no node id from etcd")
                          .with_detail("Generating IDs needs a node id claimed from etcd (shardid.node_id_source = "
                                       "etcd), whatever their shard: the claim's mark keeps them apart.")
                          .with_hint("%s", see_coordination);
            return false;
        }
        return true;
    }

    bool hold_value(SlotState* slot, const Layout& layout, uint64_t value, bool given, SourceTicket* ticket,
                    Status* status) const override
    {
        ticket->unit_ms = layout.unit_ms;
        // A value the node holds is one its coordinator's shardid.shards
        // lists (it claims no other, and stops those a reload takes out):
        // this backend's setting is looked at only for one it does not hold.
        if (held_cached(slot, layout, value, ticket))
            return true;
        if (given && !declared_shard(value, status))
            return false;
        // A value shardid.shards declares is one of the node's logical
        // shards: in the pool, in no role's share (every explicit shard is
        // one when a set is declared: declared_shard() refused the rest).
        const bool declared = given && shards_setting != nullptr && shards_setting[0] != '\0';
        return hold_claim(slot, layout, value, !given, declared, ticket, status);
    }

    bool node_id(const Layout& fit, const SourceTicket& ticket, uint64_t* id, Status* status) const override
    {
        if (!check_shard(fit, ticket.id, "the node id claimed from etcd", status)) {
            status->with_hint("Set shardid.etcd_node_id_max to at most %llu, or shardid.node_id to such an id, "
                              "and restart the server.",
                              (unsigned long long)fit.shard_max());
            return false;
        }
        *id = uint64_t(ticket.id);
        return true;
    }

    bool confirm(const SourceTicket& ticket, int64_t tick_ms, Status* status) const override
    {
        EtcdShared& c = etcd_shared();
        // This ID's step of its slot (the engine's seq_cst compare-and-swap)
        // is ordered before the claim's generation (and the claim table's
        // epoch, confirm_claim()) is read, seq_cst too: a worker that gives
        // the claim up (a new generation, seq_cst) and then reads the slots
        // (to lower the mark at a clean release) sees the step, or this ID
        // sees the new generation and is not returned. (No fence between:
        // on x86 the compare-and-swap is one.)
        // One reading of the fence clock for both fences: the lease's and the
        // values' (the earlier one decides).
        const int64_t fence_now = ticket.fence_read_ms != 0 ? ticket.fence_read_ms : fence_clock_ms();
        if (c.generation.load(std::memory_order_seq_cst) != ticket.generation || c.held.load() < 0 ||
            fence_now >= c.fence_ms.load(std::memory_order_acquire)) {
            *status = Status::fail(Error::not_claimed, "this node lost its node id claim in etcd")
                          .with_detail("The lease could not be renewed in time, or the claim changed; no ID was "
                                       "handed out under it.")
                          .with_hint("%s", see_coordination);
            return false;
        }
        // The shard values this node holds are issued only while a check
        // after a renewal confirmed them (src/pg/etcd/worker/confirm.cpp): one
        // that cannot be made stops them at that renewal's fence.
        if (fence_now >= c.values_until_ms.load(std::memory_order_acquire)) {
            *status = Status::fail(Error::not_claimed, "this node could not re-confirm its shard values in etcd")
                          .with_detail("A node issues IDs only while it has confirmed, after a renewal of its "
                                       "lease, that it still holds the values of their shard fields; no ID was "
                                       "handed out.")
                          .with_hint("%s", see_coordination);
            return false;
        }
        if (tick_ms >= c.window_end_ms.load(std::memory_order_acquire)) {
            raise_to(c.need_ms, int64_t(tick_ms));
            wake_worker();
            *status =
                Status::fail(Error::not_claimed, "the window recorded in etcd for this node id ends before the ID")
                    .with_detail("IDs are issued only below the mark recorded in etcd, which could not be moved "
                                 "in time.")
                    .with_hint("%s", see_coordination);
            return false;
        }
        // The shard field's value is still held (the fence above orders
        // it as the claim's generation).
        if (ticket.claim >= 0) {
            const int64_t used = ticket.unit_ms <= 1000 ? tick_ms : wall_clock().now_ms();
            if (!confirm_claim(ticket, used, ticket.word, status))
                return false;
        }
        return true;
    }

    bool counters_hold(uint64_t* epoch, Status* status) const override
    {
        EtcdShared& c = etcd_shared();
        if (c.misconfigured.load(std::memory_order_acquire)) {
            SourceTicket ticket;
            return hold(&ticket, status);  // says so
        }
        *epoch = c.counters_epoch.load(std::memory_order_acquire);
        const int64_t now = fence_clock_ms();
        if (c.held.load(std::memory_order_acquire) < 0 || now >= c.fence_ms.load(std::memory_order_acquire) ||
            now >= c.values_until_ms.load(std::memory_order_acquire)) {
            *status = Status::fail(Error::not_claimed, "this node holds no claim in etcd")
                          .with_detail("DecimalIds and call numbers are issued with the generator ids and run ids "
                                       "etcd handed this node only while it holds its claim: were etcd to lose its "
                                       "data meanwhile, another node could be handed them.")
                          .with_hint("%s", see_coordination);
            return false;
        }
        return true;
    }

    void wait(TimestampTz since, const Status& why) const override
    {
        wait_for_worker(since, why.message, why.detail, why.hint);
    }

    void waited() const override { ConditionVariableCancelSleep(); }

    // Cluster-wide counters in etcd: no node took these values before, and
    // the worker takes them above this node's floor.
    int64 take_counter(NodeCounter which, int64 key_fingerprint) const override
    {
        attach_if_needed();
        EtcdShared& c = etcd_shared();
        const int k = int(which);
        const TimestampTz since = GetCurrentTimestamp();
        // Only a key the cluster recorded (a superuser's choice) refuses
        // others: without one, each key's call numbers are its own.
        if (key_fingerprint != 0) {
            const int64 cluster = cluster_call_key(0);
            if (cluster != 0 && cluster != key_fingerprint)
                ereport(ERROR,
                        (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                         errmsg("the call-number key of this session is not the cluster's"),
                         errdetail("A superuser recorded the cluster's call-number key (fingerprint %lld) with "
                                   "shardid_set_call_number_key(); shardid.call_number_key names a key with "
                                   "fingerprint %lld. Call numbers made with two keys can be equal.",
                                   (long long)cluster, (long long)key_fingerprint),
                         errhint("Create the cluster's key in this database with the secret it was made with "
                                 "(create_obfuscation_key(name, secret)) and set shardid.call_number_key to it; or, "
                                 "as a superuser, SELECT shardid_set_call_number_key(NULL); to let every key issue "
                                 "call numbers of its own.")));
        }
        const char* message = psprintf("no %s could be taken from etcd", node_counter_name(which));
        const bool run = which == NodeCounter::run;
        for (;;) {
            // A run id taken for another key (another backend's) is not
            // this one's: its era is that key's.
            const int64 key_before = run ? c.run_ready_key.load() : 0;
            const int64 value = c.counter_ready[k].exchange(-1);
            if (value >= 0 && (!run || (key_before == key_fingerprint && c.run_ready_key.load() == key_fingerprint))) {
                ConditionVariableCancelSleep();
                return value;
            }
            if (run && c.run_refused_key.load() == key_fingerprint && c.run_refused.load() != 0) {
                ConditionVariableCancelSleep();
                raise_call_eras_used_up();
            }
            if (run)
                c.run_key_want.store(key_fingerprint);
            c.counter_want[k].store(1);
            wait_for_worker(since, message, "",
                            "See SELECT * FROM shardid_coordination(); and check that etcd is "
                            "reachable.");
        }
    }
};

const EtcdSource source;

}  // namespace

int64 cluster_call_key(int64 set)
{
    attach_if_needed();
    EtcdShared& c = etcd_shared();
    const TimestampTz since = GetCurrentTimestamp();
    if (set != 0)
        c.call_key_set.store(set);
    const uint64 mine = c.call_key_asked.fetch_add(1) + 1;
    while (c.call_key_served.load(std::memory_order_acquire) < mine)
        wait_for_worker(since, "the cluster's call-number key could not be read from etcd", "",
                        "See SELECT * FROM shardid_coordination(); and check that etcd is reachable.");
    ConditionVariableCancelSleep();
    return c.call_key_cluster.load(std::memory_order_acquire);
}

namespace {

EtcdShared* etcd_part = nullptr;

}  // namespace

// Preloaded, attached at start with the node state (never null after it);
// without preloading, by the first caller (shardid_coordination(): node ids
// from etcd are refused then), so that a backend that only generates IDs
// takes nothing more of PostgreSQL's reserve than the node state.
EtcdShared& etcd_shared()
{
    if (etcd_part == nullptr)
        shmem_part_attach(reinterpret_cast<void**>(&etcd_part));
    return *etcd_part;
}

void etcd_init()
{
    // Whatever the node's ids come from: a few kB.
    shmem_part({"shardid etcd claim", sizeof(EtcdShared),
                [](void* part) {
                    auto& c = *static_cast<EtcdShared*>(part);
                    c.held.store(-1);
                    c.generation.store(1);
                    c.need_ms.store(-1);
                    for (auto& r : c.counter_ready)
                        r.store(-1);
                    ConditionVariableInit(&c.changed);
                    SpinLockInit(&c.mutex);
                    strlcpy(c.state, "starting", sizeof c.state);
                },
                reinterpret_cast<void**>(&etcd_part), !process_shared_preload_libraries_in_progress,
                alignof(EtcdShared)});
    shard_claims_init();
    register_etcd_source(source);
    if (!IsBinaryUpgrade)
        etcd_register_worker();
}

}  // namespace shardid::pg
