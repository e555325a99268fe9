// The claim of this node's id in etcd (src/pg/etcd/worker/node_claim.hpp):
// the node key created under the lease, the previous holder's mark read,
// its fence waited out, the counters raised, and the id published to
// generators (the window above what is issued, and the release:
// src/pg/etcd/worker/window.cpp). The rules: src/core/etcd/rules.hpp.
#include <algorithm>
#include <string>

#include "core/text.hpp"
#include "pg/etcd/worker/node_claim.hpp"
#include "pg/base/fence_clock.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/timeconv.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/state/shared.hpp"

extern "C" {
#include "storage/condition_variable.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
}

namespace shardid::pg {

void NodeIdClaim::lose(const std::string& why)
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
}

// Creates the node key of `id` under this node's lease; false (and why
// reported) when it cannot, or another holds it.
bool NodeIdClaim::take_id(int id)
{
    std::string why;
    const etcd::HolderRecord me = this_node();
    const std::string key = etcd::node_key(prefix_, id);
    etcd::Txn t;
    // ... under the history read before it (a claim never spans a loss of
    // etcd's data: etcd::History).
    if (!session_.txn({{etcd::Compare::Target::create, key, 0, ""},
                       {etcd::Compare::Target::mod, etcd::history_key(prefix_), history_.revision(), ""}},
                      {{true, key, etcd::holder_value(me), session_.lease()}},
                      {{false, key, "", ""}, {false, etcd::history_key(prefix_), "", ""}}, &t, &why)) {
        session_.failed("could not claim node id " + std::to_string(id), why);
        return false;
    }
    session_.answered();
    // The failure branch reads the node key and the history: the history
    // moved (or went) since it was read: read it again, then claim.
    etcd::KeyValue node;
    bool has_node = false, history_same = false;
    for (const etcd::KeyValue& kv : t.kvs) {
        if (kv.key == key)
            node = kv, has_node = true;
        else
            history_same = kv.mod_revision == history_.revision();
    }
    if (!t.succeeded && !history_same) {
        history_.reread();
        return false;
    }
    t.kvs.clear();
    if (has_node)
        t.kvs.push_back(node);
    if (t.succeeded || (t.kvs.size() == 1 && t.kvs[0].lease == session_.lease())) {
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
        session_.error(Condition::corrupt_key, "the key \"" + key + "\" holds \"" + printable(t.kvs[0].value, 40) +
                                                   "\", which shardid never writes: node id " + std::to_string(id) +
                                                   " is not used until it is fixed");
    else if (t.kvs.size() == 1 && !leased)
        session_.error(Condition::corrupt_key,
                       "the key \"" + key + "\" has no lease, and shardid writes node keys only under one: node id " +
                           std::to_string(id) + " is not used until the key is removed");
    else if (waiting_)
        session_.error(Condition::refused, "node id " + std::to_string(id) +
                                               " is still held by this node's previous lease (after a crash or a fast "
                                               "restart): waiting until etcd expires it");
    else
        session_.error(Condition::refused,
                       "node id " + std::to_string(id) + " is held by another node: " +
                           (t.kvs.empty() ? std::string("(its key vanished)") : etcd::describe_holder(t.kvs[0].value)));
    return false;
}

void NodeIdClaim::claim()
{
    std::string why;
    if (claimed_ < 0 && !history_.ensure())
        return;
    if (claimed_ < 0) {
        int id = session_.settings().want_id;
        if (id < 0) {
            std::vector<etcd::KeyValue> kvs;
            if (!session_.client().range(prefix_ + "/node/", etcd::prefix_end(prefix_ + "/node"), &kvs, &why)) {
                session_.failed("could not list the node ids held", why);
                return;
            }
            session_.answered();
            std::vector<std::pair<std::string, std::string>> held;
            for (const etcd::KeyValue& kv : kvs)
                held.emplace_back(kv.key, kv.lease);
            id = etcd::choose_id(prefix_, held, session_.lease(), last_id_, session_.settings().node_id_min,
                                 session_.settings().node_id_max);
            if (id < 0) {
                refused_ = true;
                session_.error(Condition::refused,
                               "every node id from " + std::to_string(session_.settings().node_id_min) + " to " +
                                   std::to_string(session_.settings().node_id_max) + " is held by another node");
                return;
            }
        }
        if (!take_id(id))
            return;
        claimed_ = last_id_ = id;
        ereport(LOG, (errmsg("shardid coordinator: claimed node id %d with lease %s: %s", id, session_.lease().c_str(),
                             session_.settings().node_id_from.c_str())));
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
        end = etcd::window_target(wall_clock().now_ms(), session_.fence_ms() - fence_clock_ms(),
                                  session_.lease_ttl_ms(), -1, floor_ms_, recorded_ms_);
        // The window carries this claim's token: from here on the mark
        // names this claim (a second copy of this data directory no longer
        // finds the release token it holds).
        if (!record_window(claimed_, end, claim_token_))
            return;
        session_.ended(Condition::refused);
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
        settling_ = settling_ && history_.settling();
        if (fence_clock_ms() < publish_after_ms_ || settling_)
            return;
        end = etcd::window_target(wall_clock().now_ms(), session_.fence_ms() - fence_clock_ms(),
                                  session_.lease_ttl_ms(), -1, floor_ms_, recorded_ms_);
        if (!record_window(claimed_, end, claim_token_))
            return;
        recorded_ms_ = end;
        seen_marks_[claimed_] = std::max(seen_marks_[claimed_], end);
        taking_over_ = settling_ = false;
    }
    // The counters are raised to this node's floors (and, after etcd lost
    // its data, its counter values confirmed or retired) before any ID.
    raise_counters();
    if (!counters_raised_)
        return;
    EtcdShared& c = etcd_shared();
    c.floor_ms.store(floor_ms_);
    c.window_end_ms.store(end, std::memory_order_release);
    c.need_ms.store(-1);
    c.fence_ms.store(session_.fence_ms(), std::memory_order_release);
    held_ = claimed_;
    c.generation.fetch_add(1, std::memory_order_acq_rel);
    c.held.store(held_, std::memory_order_release);
    SpinLockAcquire(&c.mutex);
    c.claimed_at_ms = wall_clock().now_ms();
    c.last_error[0] = '\0';
    SpinLockRelease(&c.mutex);
    events_.publish_state();
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
bool NodeIdClaim::read_mark()
{
    std::string why;
    const std::string key = etcd::mark_key(prefix_, claimed_);
    std::vector<etcd::KeyValue> kvs;
    if (!session_.client().range(key, "", &kvs, &why)) {
        session_.failed("could not read \"" + key + "\"", why);
        return false;
    }
    session_.answered();
    etcd::Mark mark;
    const bool has = !kvs.empty();
    std::string implausible;
    if (has && (!etcd::parse_mark(kvs[0].value, &mark) ||
                (!confirmed(mark.token) &&
                 !etcd::mark_plausible(mark.end_ms, wall_clock().now_ms(), max_clock_lead_ms,
                                       std::max(session_.lease_ttl_ms(), mark.ttl_ms), &implausible)))) {
        refused_ = true;
        session_.error(Condition::corrupt_key,
                       "the key \"" + key + "\" holds \"" + printable(kvs[0].value, 60) + "\", which " +
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
    const bool stale = has && etcd::before_history(kvs[0].mod_revision, history_.created());
    // No mark: nobody claimed the id under this history. Whoever held it
    // under what etcd may have forgotten has stopped once the history
    // settled: no ID before then (etcd::History).
    settling_ = (!has || stale) && history_.settling();
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
    const int64_t wait = etcd::takeover_wait_ms(has, mark, own_mark_, session_.lease_ttl_ms());
    if (wait > 0)
        publish_after_ms_ = std::max(publish_after_ms_, claimed_at_ms_ + wait);
    return true;
}

void NodeIdClaim::raise_counters()
{
    if (claimed_ >= 0 && !counters_raised_)
        counters_raised_ = counters_.raise();
}

}  // namespace shardid::pg
