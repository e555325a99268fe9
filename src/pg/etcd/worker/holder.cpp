// The holder's steps against etcd (src/pg/etcd/worker/holder.hpp): keep the lease, claim the id, read the previous
// holder's mark, wait out its fence, record the window, and give the claim back (the counters:
// src/pg/etcd/worker/etcd_counters.cpp). The rules: src/core/etcd/rules.hpp.
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string>
#include <unistd.h>

#include "core/text.hpp"
#include "pg/etcd/worker/holder.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/timeconv.hpp"
#include "pg/base/wait_event.hpp"
#include "pg/state/shared.hpp"

extern "C" {
#include "access/xlog.h"
#include "utils/timestamp.h"
#include "port.h"
#include "postmaster/interrupt.h"
#include "utils/guc.h"
#include "postmaster/postmaster.h"
}

namespace shardid::pg {

namespace {

uint32 worker_event = 0;  // the worker's wait event between steps

std::string iso_now()
{
    const time_t t = time(nullptr);
    tm utc;
    gmtime_r(&t, &utc);
    char buf[32];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buf;
}

}  // namespace

etcd::HolderRecord this_node()
{
    etcd::HolderRecord me;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    me.host = host;
    me.port = PostPortNumber;
    me.system_identifier = std::to_string(GetSystemIdentifier());
    me.since = iso_now();
    return me;
}

uint64_t new_token()
{
    uint64_t t = 0;
    while (t == 0)
        if (!pg_strong_random(&t, sizeof t))
            t = uint64_t(fence_clock_ms()) * 0x9e3779b97f4a7c15ull ^ uint64_t(getpid());
    return t & uint64_t(INT64_MAX);  // kept in the node state as a non-negative int64
}

void Holder::lose_claim(const std::string& why)
{
    EtcdShared& c = etcd_shared();
    if (held_ >= 0 || claimed_ >= 0) {
        c.held.store(-1, std::memory_order_release);
        c.generation.fetch_add(1, std::memory_order_acq_rel);
        ConditionVariableBroadcast(&c.changed);
        ereport(LOG, (errmsg("shardid coordinator: gave up node id %d: %s", claimed_, why.c_str())));
    }
    held_ = claimed_ = -1;
    counters_raised_ = false;
    taking_over_ = settling_ = false;
    history_revision_ = 0;  // read again before the next claim: etcd may have lost it
    lose_values();
}

// Grants or renews the lease; false when there is no live one.
bool Holder::keep_lease()
{
    std::string why;
    const int64_t sent = fence_clock_ms();
    if (lease_.empty()) {
        etcd::Grant g;
        if (!client_.grant(settings_.lease_ttl_s, &g, &why)) {
            failed("could not get a lease", why);
            return false;
        }
        answered();
        // Fenced at the TTL asked for at most: a grant of more (a broken or
        // hostile gateway) must not keep this node issuing after etcd may
        // have expired the lease.
        const int64_t ttl_s = etcd::fenced_ttl_s(settings_.lease_ttl_s, g.ttl_s);
        if (g.ttl_s > settings_.lease_ttl_s)
            ereport(LOG, (errmsg("shardid coordinator: etcd granted lease %s a TTL of %lld s for %d s asked; the "
                                 "node fences with %d s",
                                 g.id.c_str(), (long long)g.ttl_s, settings_.lease_ttl_s, settings_.lease_ttl_s)));
        if (!observe(g.header))
            return false;  // etcd went back, or another cluster answers: the history first
        lease_ = g.id;
        new_witness();
        lease_ttl_ms_ = ttl_s * 1000;
        learn_fleet_ttl(0);
        fence_ms_ = etcd::fence_deadline_ms(sent, lease_ttl_ms_);
        last_sent_ms_ = sent;
        // Nothing is held under a new lease yet: its keys are all written
        // after the grant, and re-checked from its revision on.
        held_keys_.reset(g.header.cluster_id, g.header.revision);
        renewal_fence_ms_ = fence_ms_;
        confirmed_until(fence_ms_);
        publish_lease();
        return true;
    }
    if (sent - last_sent_ms_ >= etcd::keepalive_every_ms(lease_ttl_ms_)) {
        int64_t ttl = 0;
        bool alive = false;
        if (!client_.keepalive(lease_, &ttl, &alive, &why)) {
            failed("could not renew lease " + lease_, why);
        } else if (!alive) {
            answered();
            // Expired, or gone with a history that went back: the witness
            // tells (asked again next round when etcd does not answer).
            lease_vanished();
            return false;
        } else {
            answered();
            if (etcd::renewal_late(fence_ms_ - fence_clock_ms(), lease_ttl_ms_))
                note_late_renewal();
            fence_ms_ = etcd::fence_deadline_ms(sent, lease_ttl_ms_);
            last_sent_ms_ = sent;
            publish_lease();
            renewed_ = true;
            renewal_fence_ms_ = fence_ms_;  // what the check after it confirms values up to
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

// Creates the node key of `id` under this node's lease; false (and why
// reported) when it cannot, or another holds it.
bool Holder::take_id(int id)
{
    std::string why;
    const etcd::HolderRecord me = this_node();
    const std::string key = etcd::node_key(prefix_, id);
    etcd::Txn t;
    // ... under the history read before it (a claim never spans a loss of
    // etcd's data: etcd::History).
    if (!txn({{etcd::Compare::Target::create, key, 0, ""},
              {etcd::Compare::Target::mod, etcd::history_key(prefix_), history_revision_, ""}},
             {{true, key, etcd::holder_value(me), lease_}},
             {{false, key, "", ""}, {false, etcd::history_key(prefix_), "", ""}}, &t, &why)) {
        failed("could not claim node id " + std::to_string(id), why);
        return false;
    }
    answered();
    // The failure branch reads the node key and the history: the history
    // moved (or went) since it was read: read it again, then claim.
    etcd::KeyValue node;
    bool has_node = false, history_same = false;
    for (const etcd::KeyValue& kv : t.kvs) {
        if (kv.key == key)
            node = kv, has_node = true;
        else
            history_same = kv.mod_revision == history_revision_;
    }
    if (!t.succeeded && !history_same) {
        history_revision_ = 0;
        return false;
    }
    t.kvs.clear();
    if (has_node)
        t.kvs.push_back(node);
    if (t.succeeded || (t.kvs.size() == 1 && t.kvs[0].lease == lease_)) {
        claimed_at_ms_ = fence_clock_ms();
        publish_after_ms_ = 0;
        claim_raised_ = false;
        claim_token_ = new_token();
        return true;
    }
    // Only a key under a lease can be this node's own from before a restart:
    // shardid writes none without one, and one without would never expire.
    const bool leased = t.kvs.size() == 1 && !t.kvs[0].lease.empty();
    waiting_ = leased && etcd::same_node(t.kvs[0].value, me);
    refused_ = !waiting_;
    if (t.kvs.size() == 1 && !etcd::is_holder(t.kvs[0].value))
        error(Condition::corrupt_key, "the key \"" + key + "\" holds \"" + printable(t.kvs[0].value, 40) +
                                          "\", which shardid never writes: node id " + std::to_string(id) +
                                          " is not used until it is fixed");
    else if (t.kvs.size() == 1 && !leased)
        error(Condition::corrupt_key, "the key \"" + key +
                                          "\" has no lease, and shardid writes node keys only under one: node id " +
                                          std::to_string(id) + " is not used until the key is removed");
    else if (waiting_)
        error(Condition::refused, "node id " + std::to_string(id) +
                                      " is still held by this node's previous lease (after a crash or a fast "
                                      "restart): waiting until etcd expires it");
    else
        error(Condition::refused,
              "node id " + std::to_string(id) + " is held by another node: " +
                  (t.kvs.empty() ? std::string("(its key vanished)") : etcd::describe_holder(t.kvs[0].value)));
    return false;
}

void Holder::claim()
{
    std::string why;
    if (claimed_ < 0 && !ensure_history())
        return;
    if (claimed_ < 0) {
        int id = want_id_;
        if (id < 0) {
            std::vector<etcd::KeyValue> kvs;
            if (!client_.range(prefix_ + "/node/", etcd::prefix_end(prefix_ + "/node"), &kvs, &why)) {
                failed("could not list the node ids held", why);
                return;
            }
            answered();
            std::vector<std::pair<std::string, std::string>> held;
            for (const etcd::KeyValue& kv : kvs)
                held.emplace_back(kv.key, kv.lease);
            id = etcd::choose_id(prefix_, held, lease_, last_id_, settings_.node_id_min, settings_.node_id_max);
            if (id < 0) {
                refused_ = true;
                error(Condition::refused, "every node id from " + std::to_string(settings_.node_id_min) + " to " +
                                              std::to_string(settings_.node_id_max) + " is held by another node");
                return;
            }
        }
        if (!take_id(id))
            return;
        claimed_ = last_id_ = id;
        ereport(LOG, (errmsg("shardid coordinator: claimed node id %d with lease %s: %s", id, lease_.c_str(),
                             settings_.node_id_from.c_str())));
    }
    int64_t end = recorded_ms_;
    if (!taking_over_) {
        refused_ = waiting_ = false;
        if (!read_mark())
            return;
        // Every slot continues above the previous holder's mark, before any
        // ID is issued under the claim. Not when the mark is this node's
        // own: its slots are above it already, and a layout with long ticks
        // (a minute) would otherwise wait for its next tick after a lease
        // lost and won back, or after every restart.
        if (!own_mark_) {
            raise_claim_floor(floor_ms_);
            claim_raised_ = true;
        }
        recorded_ms_ = floor_ms_;
        end = etcd::window_target(wall_clock().now_ms(), fence_ms_ - fence_clock_ms(), lease_ttl_ms_, -1, floor_ms_,
                                  recorded_ms_);
        // The window carries this claim's token: from here on the mark
        // names this claim (a second copy of this data directory no longer
        // finds the release token it holds).
        if (!record_window(claimed_, end, claim_token_))
            return;
        ended(Condition::refused);
        recorded_ms_ = end;
        seen_marks_[claimed_] = std::max(seen_marks_[claimed_], end);
        // The previous holder did not release the id cleanly: it may still
        // be issuing until its fence, however early etcd removed its key.
        // No ID before then (etcd::takeover_wait_ms()).
        if (fence_clock_ms() < publish_after_ms_ || settling_) {
            if (settling_)
                ereport(LOG, (errmsg("shardid coordinator: node id %d has no mark under a new history of etcd's data: "
                                     "no ID until it settles (etcd expires \"%s\"), once every node that may still "
                                     "issue under what etcd forgot has stopped",
                                     claimed_, etcd::settling_key(prefix_).c_str())));
            else
                ereport(LOG, (errmsg("shardid coordinator: node id %d was not released cleanly by its previous "
                                     "holder: waiting %.1f s for its fence before the first ID",
                                     claimed_, double(publish_after_ms_ - fence_clock_ms()) / 1000)));
            taking_over_ = true;
            return;
        }
    } else {
        // Waiting: the mark is not read again (it is this claim's window now,
        // and a window above it each round would run ahead of the clock);
        // once the wait is over, the window moves on above the same floor.
        settling_ = settling_ && settling_now_;
        if (fence_clock_ms() < publish_after_ms_ || settling_)
            return;
        end = etcd::window_target(wall_clock().now_ms(), fence_ms_ - fence_clock_ms(), lease_ttl_ms_, -1, floor_ms_,
                                  recorded_ms_);
        if (!record_window(claimed_, end, claim_token_))
            return;
        recorded_ms_ = end;
        seen_marks_[claimed_] = std::max(seen_marks_[claimed_], end);
        taking_over_ = settling_ = false;
    }
    // The counters are raised to this node's floors (and, after etcd lost
    // its data, its counter values confirmed or retired) before any ID.
    if (!counters_raised_ && !(counters_raised_ = raise_counters()))
        return;
    EtcdShared& c = etcd_shared();
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
    publish_state();
    ConditionVariableBroadcast(&c.changed);
    // The mark as a time (the claim's first under the prefix has none).
    const char* above = floor_ms_ > 0 ? psprintf("above %s", timestamptz_to_str(timestamptz_of_unix_ms(floor_ms_)))
                                      : "with no mark before";
    ereport(LOG, (errmsg("shardid coordinator: issuing IDs with node id %d %s%s", held_, above,
                         claim_raised_ ? "" : " (its own mark: no other node held it since)")));
}

// The mark of the id claimed: IDs start above it. False (and the id is not
// used) when it cannot be read, or holds what no holder could have written
// (then refused, naming the key; read again every round, so the claim
// completes by itself once the key is fixed).
bool Holder::read_mark()
{
    std::string why;
    const std::string key = etcd::mark_key(prefix_, claimed_);
    std::vector<etcd::KeyValue> kvs;
    if (!client_.range(key, "", &kvs, &why)) {
        failed("could not read \"" + key + "\"", why);
        return false;
    }
    answered();
    etcd::Mark mark;
    const bool has = !kvs.empty();
    std::string implausible;
    const auto confirmed = [&](uint64_t token) {
        return token != 0 &&
               std::find(confirmed_tokens_.begin(), confirmed_tokens_.end(), token) != confirmed_tokens_.end();
    };
    if (has &&
        (!etcd::parse_mark(kvs[0].value, &mark) ||
         (!confirmed(mark.token) && !etcd::mark_plausible(mark.end_ms, wall_clock().now_ms(), max_clock_lead_ms,
                                                          std::max(lease_ttl_ms_, mark.ttl_ms), &implausible)))) {
        refused_ = true;
        error(Condition::corrupt_key, "the key \"" + key + "\" holds \"" + printable(kvs[0].value, 60) + "\", which " +
                                          (implausible.empty() ? std::string("is not a mark shardid writes")
                                                               : "no holder could have written: " + implausible) +
                                          ": node id " + std::to_string(claimed_) + " is not used until it is fixed");
        return false;
    }
    // A mark lowered by hand, or lost with etcd's data, never lowers what
    // this node has seen (every mark seen was checked as above).
    floor_ms_ = std::max(mark.end_ms, seen_marks_[claimed_]);
    // A mark from before the history (etcd went back: a restored snapshot
    // holds marks older than what their holders issued since) bounds
    // nothing alone and is nobody's own.
    const bool stale = has && etcd::before_history(kvs[0].mod_revision, history_created_);
    // No mark: nobody claimed the id under this history. Whoever held it
    // under what etcd may have forgotten has stopped once the history
    // settled: no ID before then (etcd::History).
    settling_ = (!has || stale) && settling_now_;
    // Whose mark it is, by its token, never by its value (another holder can
    // write the same value; a window whose answer was lost proves nothing):
    //  - a token of this life's claims that etcd confirmed: every holder
    //    writes a window with its own token before its first ID, so nobody
    //    issued under the id since, and the slots hold this node's IDs;
    //  - the release token this data directory's state recorded at its last
    //    clean stop, in a released mark: that state covered every ID of the
    //    claim and the floor the claim was raised above (its etcd_claim
    //    field: a layout with long ticks that had no slot in that life
    //    still resumes above it), nobody claimed since (a claim writes its
    //    own token first), and the state only grows. A clone or an older backup holds an older
    //    token; of two copies of one stopped directory, the first to claim
    //    writes its claim's token, so the second finds a token not its own.
    own_mark_ =
        has && !stale && (confirmed(mark.token) || (mark.released && mark.token != 0 && mark.token == restart_token_));
    const int64_t wait = etcd::takeover_wait_ms(has, mark, own_mark_, lease_ttl_ms_);
    if (wait > 0)
        publish_after_ms_ = std::max(publish_after_ms_, claimed_at_ms_ + wait);
    return true;
}

void Holder::step()
{
    serve_counters();
    if (!keep_lease())
        return;
    // etcd's history, known before anything is claimed or taken (a
    // transaction that compared it and failed reads it again here). A
    // history that cannot be read, or holds what shardid never writes,
    // stops new claims only: what this node holds goes on while its keys
    // re-check fine.
    const bool history = ensure_history();
    // Under a new history (etcd lost its data, or went back), the counters
    // are raised to this node's floors at once, whether or not it holds a
    // node id (one whose id another node took meanwhile still used its
    // values), before the history settles: no node takes a counter value
    // before then (serve_counters()).
    if (history && counters_history_ != history_.token)
        raise_counters();
    if (history && held_ < 0)
        claim();
    // And once per claim.
    if (history && claimed_ >= 0 && !counters_raised_)
        counters_raised_ = raise_counters();
    if (held_ >= 0)
        renew_window();
    // After each renewal, what the node holds under the lease is checked
    // again (whether or not the node id is held just now: values wait for
    // it, and are issued only while confirmed).
    if (renewed_ && !lease_.empty())
        confirm_values();
    if (held_ >= 0)
        serve_values();
    renewed_ = false;
}

// The worker's loop (src/pg/etcd/worker/start.cpp starts it): a step
// against etcd, the state published, a wait; until SIGTERM.
void Holder::run()
{
    restart_token_ = uint64_t(shared->release_token.load());
    while (!ShutdownRequestPending) {
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
            redeclare();  // shards no longer declared stop at once, whatever etcd does
        }
        if (!RecoveryInProgress()) {
            try {
                step();
            } catch (const std::exception& e) {
                error(Condition::unreachable, std::string("unexpected failure: ") + e.what());
            }
        }
        publish_state();
        const int rc =
            WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                      held_ >= 0 || RecoveryInProgress() ? 100 : 250, wait_event("ShardidCoordinator", &worker_event));
        if (rc & WL_LATCH_SET)
            ResetLatch(MyLatch);
    }
    release();
    SpinLockAcquire(&etcd_shared().mutex);
    strlcpy(etcd_shared().state, "stopped", sizeof etcd_shared().state);
    SpinLockRelease(&etcd_shared().mutex);
}

}  // namespace shardid::pg
