// The holder's steps against etcd (src/pg/coord_holder.hpp): keep the lease, claim the id, read the previous
// holder's mark, record the window, take counter values for backends, and give the claim back. The rules:
// src/core/coord.hpp.
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string>
#include <unistd.h>

#include "core/text.hpp"
#include "pg/coord_holder.hpp"
#include "pg/settings.hpp"
#include "pg/shared.hpp"

extern "C" {
#include "access/xlog.h"
#include "postmaster/postmaster.h"
}

namespace shardid::pg {

namespace {

std::string iso_now()
{
    const time_t t = time(nullptr);
    tm utc;
    gmtime_r(&t, &utc);
    char buf[32];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buf;
}

coord::Holder this_node()
{
    coord::Holder me;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    me.host = host;
    me.port = PostPortNumber;
    me.system_identifier = std::to_string(GetSystemIdentifier());
    me.since = iso_now();
    return me;
}

}  // namespace

void Holder::lose_claim(const std::string& why)
{
    CoordShared& c = coord_shared();
    if (held_ >= 0 || claimed_ >= 0) {
        c.held.store(-1, std::memory_order_release);
        c.generation.fetch_add(1, std::memory_order_acq_rel);
        ConditionVariableBroadcast(&c.changed);
        ereport(LOG, (errmsg("shardid coordinator: gave up node id %d: %s", claimed_, why.c_str())));
    }
    held_ = claimed_ = -1;
    counters_raised_ = false;
}

// Grants or renews the lease; false when there is no live one.
bool Holder::keep_lease()
{
    std::string why;
    const int64_t sent = fence_clock_ms();
    if (lease_.empty()) {
        etcd::Grant g;
        if (!client_.grant(etcd_lease_ttl_s, &g, &why)) {
            failed("could not get a lease", why);
            return false;
        }
        answered();
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
            failed("could not renew lease " + lease_, why);
        } else if (!alive) {
            answered();
            const std::string old = lease_;
            lease_.clear();
            lose_claim("lease " + old + " expired in etcd");
            return false;
        } else {
            answered();
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

// Creates the node key of `id` under this node's lease; false (and why
// reported) when it cannot, or another holds it.
bool Holder::take_id(int id)
{
    std::string why;
    const coord::Holder me = this_node();
    const std::string key = coord::node_key(prefix_, id);
    etcd::Txn t;
    if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::create, key, 0, ""}},
                                      {{true, key, coord::holder_value(me), lease_}}, {{false, key, "", ""}}),
                     &t, &why)) {
        failed("could not claim node id " + std::to_string(id), why);
        return false;
    }
    answered();
    if (t.succeeded || (t.kvs.size() == 1 && t.kvs[0].lease == lease_))
        return true;
    waiting_ = t.kvs.size() == 1 && coord::same_node(t.kvs[0].value, me);
    refused_ = !waiting_;
    if (t.kvs.size() == 1 && !coord::is_holder(t.kvs[0].value))
        error(Condition::corrupt_key, "the key \"" + key + "\" holds \"" + printable(t.kvs[0].value, 40) +
                                          "\", which shardid never writes: node id " + std::to_string(id) +
                                          " is not used until it is fixed");
    else if (waiting_)
        error(Condition::refused, "node id " + std::to_string(id) +
                                      " is still held by this node's previous lease (after a crash or a fast "
                                      "restart): waiting until etcd expires it");
    else
        error(Condition::refused,
              "node id " + std::to_string(id) + " is held by another node: " +
                  (t.kvs.empty() ? std::string("(its key vanished)") : coord::describe_holder(t.kvs[0].value)));
    return false;
}

void Holder::claim()
{
    std::string why;
    if (claimed_ < 0) {
        int id = want_id_;
        if (id < 0) {
            std::vector<etcd::KeyValue> kvs;
            if (!client_.range(prefix_ + "/node/", coord::prefix_end(prefix_ + "/node"), &kvs, &why)) {
                failed("could not list the node ids held", why);
                return;
            }
            answered();
            std::vector<std::pair<std::string, std::string>> held;
            for (const etcd::KeyValue& kv : kvs)
                held.emplace_back(kv.key, kv.lease);
            id = coord::choose_id(prefix_, held, lease_, last_id_, etcd_node_id_min, etcd_node_id_max);
            if (id < 0) {
                refused_ = true;
                error(Condition::refused, "every node id from " + std::to_string(etcd_node_id_min) + " to " +
                                              std::to_string(etcd_node_id_max) + " is held by another node");
                return;
            }
        }
        if (!take_id(id))
            return;
        claimed_ = last_id_ = id;
        ereport(LOG, (errmsg("shardid coordinator: claimed node id %d with lease %s", id, lease_.c_str())));
    }
    refused_ = waiting_ = false;
    if (!read_mark())
        return;
    // Every slot continues above the previous holder's mark, before any ID
    // is issued under the claim. Not when the mark is this node's own: its
    // slots are above it already, and a layout with long ticks (a minute)
    // would otherwise wait for its next tick after a lease lost and won back.
    if (!own_mark_)
        raise_claim_floor(floor_ms_);
    recorded_ms_ = floor_ms_;
    const int64_t end = coord::window_target(wall_clock().now_ms(), fence_ms_ - fence_clock_ms(), lease_ttl_ms_, -1,
                                             floor_ms_, recorded_ms_);
    if (!record_window(claimed_, end))
        return;
    ended(Condition::refused);
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
    publish_state();
    ConditionVariableBroadcast(&c.changed);
    ereport(LOG, (errmsg("shardid coordinator: issuing IDs with node id %d above %lld%s", held_, (long long)floor_ms_,
                         own_mark_ ? " (its own mark: no other node held it since)" : "")));
}

// The mark of the id claimed: IDs start above it. False (and the id is not
// used) when it cannot be read or is not a number.
bool Holder::read_mark()
{
    std::string why;
    const std::string key = coord::mark_key(prefix_, claimed_);
    std::vector<etcd::KeyValue> kvs;
    if (!client_.range(key, "", &kvs, &why)) {
        failed("could not read \"" + key + "\"", why);
        return false;
    }
    answered();
    int64_t mark = 0;
    if (!kvs.empty() && !coord::parse_count(kvs[0].value, &mark)) {
        refused_ = true;
        error(Condition::corrupt_key, "the key \"" + key + "\" holds \"" + printable(kvs[0].value, 40) +
                                          "\", which is not a time in milliseconds: node id " +
                                          std::to_string(claimed_) + " is not used until it is fixed");
        return false;
    }
    // A mark lowered by hand, or lost with etcd's data, never lowers what
    // this node has seen.
    floor_ms_ = std::max(mark, seen_marks_[claimed_]);
    // The mark is a window this node wrote (confirmed, or its answer lost):
    // no other node issued under the id since (a holder records a window
    // above the mark before its first ID, and a clean stop lowers it to no
    // less than its last tick, above the mark); its slots hold its IDs.
    const std::vector<int64_t>& own = own_marks_[claimed_];
    own_mark_ = !kvs.empty() && std::find(own.begin(), own.end(), mark) != own.end();
    // The negative control of test/nemesis only: the marks are not used, as
    // if etcd had none, so that the run's checker must find IDs below a
    // previous holder's. Set in the server's environment, never a setting.
    static const bool ignore_marks = getenv("SHARDID_TESTING_IGNORE_ETCD_MARK") != nullptr;
    if (ignore_marks) {
        ereport(WARNING, (errmsg("shardid coordinator: SHARDID_TESTING_IGNORE_ETCD_MARK is set: the mark of node id %d "
                                 "is ignored, and IDs may sort below the previous holder's",
                                 claimed_)));
        floor_ms_ = 0;
    }
    return true;
}

// Records `end` as the window's end of `id` in etcd, only while this
// node's lease holds the id; false (and the claim given up, when the lease
// no longer holds it) otherwise.
bool Holder::record_window(int id, int64_t end)
{
    const std::string node = coord::node_key(prefix_, id), mark = coord::mark_key(prefix_, id);
    std::string why;
    etcd::Txn t;
    std::vector<int64_t>& own = own_marks_[id];
    if (own.size() >= 16)
        own.erase(own.begin() + 1);  // the confirmed one stays first
    own.push_back(end);
    if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::lease, node, 0, lease_}},
                                      {{true, mark, std::to_string(end), ""}}, {}),
                     &t, &why)) {
        failed("could not record the window of node id " + std::to_string(id), why);
        return false;
    }
    answered();
    if (!t.succeeded) {
        lose_claim("the key \"" + node + "\" is no longer held by lease " + lease_);
        return false;
    }
    own.assign(1, end);
    return true;
}

void Holder::renew_window()
{
    CoordShared& c = coord_shared();
    const int64_t need = c.need_ms.load();
    const int64_t now = wall_clock().now_ms();
    const int64_t fence_left = fence_ms_ - fence_clock_ms();
    if (!coord::window_due(now, fence_left, recorded_ms_, need))
        return;
    const int64_t end = coord::window_target(now, fence_left, lease_ttl_ms_, need, floor_ms_, recorded_ms_);
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

// A counter's key: its value and revision (0: absent); false when it
// cannot be read, or holds what shardid never writes (then reported).
static bool read_counter(etcd::Client& client, const std::string& key, int64_t* value, int64_t* revision,
                         std::string* why, bool* corrupt)
{
    std::vector<etcd::KeyValue> kvs;
    *corrupt = false;
    if (!client.range(key, "", &kvs, why))
        return false;
    *value = *revision = 0;
    if (kvs.empty())
        return true;
    *revision = kvs[0].mod_revision;
    if (coord::parse_count(kvs[0].value, value))
        return true;
    *corrupt = true;
    *why = "the key \"" + key + "\" holds \"" + printable(kvs[0].value, 40) + "\", which is not a count";
    return false;
}

// The call-number key of the prefix, for a backend that asked (see the etcd
// source's take_counter()): the fingerprint etcd holds, or the one asked for
// when etcd holds none yet. Read once: it never changes unless edited by
// hand (then restart the nodes).
void Holder::serve_call_key()
{
    CoordShared& c = coord_shared();
    const int64_t want = c.call_key_want.load();
    if (want == 0 || c.call_key_cluster.load() != 0)
        return;
    const std::string key = coord::call_key_key(prefix_);
    std::string why;
    int64_t value = 0, revision = 0;
    bool corrupt = false;
    if (!read_counter(client_, key, &value, &revision, &why, &corrupt)) {
        if (corrupt)
            error(Condition::corrupt_key, why + ": no call-number run is taken until it is fixed");
        else
            failed("could not read \"" + key + "\"", why);
        return;
    }
    answered();
    if (revision == 0) {
        etcd::Txn t;
        if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::create, key, 0, ""}},
                                          {{true, key, std::to_string(want), ""}}, {}),
                         &t, &why)) {
            failed("could not record the call-number key in \"" + key + "\"", why);
            return;
        }
        answered();
        if (!t.succeeded)
            return;  // another node recorded one meanwhile: read it next round
        value = want;
    }
    c.call_key_cluster.store(value);
    c.call_key_want.store(0);
    ConditionVariableBroadcast(&c.changed);
}

// The value and revision (0: absent) of the key of counter field k, in
// *key; false when it cannot be read, reported, and a value shardid never
// writes reported as a key edited by hand, with `until` said of it.
bool Holder::counter_key_value(int k, const std::string& until, std::string* key, int64_t* current, int64_t* revision,
                               bool* corrupt)
{
    std::string why;
    *key = coord::counter_key(prefix_, node_state_fields[k].keyword);
    if (read_counter(client_, *key, current, revision, &why, corrupt)) {
        answered();
        return true;
    }
    if (*corrupt)
        error(Condition::corrupt_key, why + ": " + until);
    else
        failed("could not read \"" + *key + "\"", why);
    return false;
}

void Holder::serve_counters()
{
    serve_call_key();
    CoordShared& c = coord_shared();
    for (int k = 0; k < node_state_field_count; k++) {
        if (node_state_fields[k].kind != NodeStateFieldKind::counter_floor)
            continue;
        const NodeCounter which = NodeCounter(k);
        if (c.counter_want[k].load() == 0 || c.counter_ready[k].load() >= 0)
            continue;
        std::string key, why;
        int64_t current = 0, revision = 0;
        bool corrupt = false;
        if (!counter_key_value(k, std::string("no ") + node_counter_name(which) + " is taken until it is fixed", &key,
                               &current, &revision, &corrupt)) {
            corrupt_ |= corrupt;
            continue;
        }
        corrupt_ = false;
        ended(Condition::corrupt_key);
        const int64_t next = std::max(current, counter_floor(which)) + 1;
        etcd::Txn t;
        if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::mod, key, revision, ""}},
                                          {{true, key, std::to_string(next), ""}}, {}),
                         &t, &why)) {
            failed("could not take a value from \"" + key + "\"", why);
            continue;
        }
        if (!t.succeeded)
            continue;  // another node took one meanwhile: again, next round
        c.counter_ready[k].store(next);
        c.counter_want[k].store(0);
        ConditionVariableBroadcast(&c.changed);
    }
}

// Raises every counter in etcd to at least this node's own floor, once per
// claim: an etcd that lost its data (or a prefix deleted by hand) must not
// hand another node a value this node holds or has used.
bool Holder::raise_counters()
{
    bool all = true, corrupt_any = false;
    for (int k = 0; k < node_state_field_count; k++) {
        if (node_state_fields[k].kind != NodeStateFieldKind::counter_floor)
            continue;
        const int64_t floor = counter_floor(NodeCounter(k));
        if (floor < 0)
            continue;
        std::string key, why;
        int64_t current = 0, revision = 0;
        bool corrupt = false;
        if (!counter_key_value(k, "it is not raised to this node's floor until it is fixed", &key, &current, &revision,
                               &corrupt)) {
            corrupt_any |= corrupt;
            all = false;
            continue;
        }
        if (current >= floor)
            continue;
        const etcd::Compare::Target target = revision == 0 ? etcd::Compare::Target::create : etcd::Compare::Target::mod;
        etcd::Txn t;
        if (!client_.txn(etcd::encode_txn({{target, key, revision, ""}}, {{true, key, std::to_string(floor), ""}}, {}),
                         &t, &why)) {
            failed("could not raise \"" + key + "\"", why);
            all = false;
            continue;
        }
        answered();
        if (!t.succeeded) {
            all = false;  // changed meanwhile: read again next round
            continue;
        }
        ereport(LOG, (errmsg("shardid coordinator: raised \"%s\" from %lld to this node's floor %lld", key.c_str(),
                             (long long)current, (long long)floor)));
    }
    corrupt_ = corrupt_any;
    if (!corrupt_any)
        ended(Condition::corrupt_key);
    return all;
}

void Holder::release()
{
    CoordShared& c = coord_shared();
    const bool was_held = held_ >= 0;
    c.held.store(-1, std::memory_order_release);
    c.generation.fetch_add(1, std::memory_order_seq_cst);
    if (lease_.empty())
        return;
    // Courtesies, not needed for safety: a shutdown waits 0.5 s per request.
    client_.set_timeout_ms(std::min(coord::release_timeout_ms, client_.timeout_ms()));
    std::string why;
    if (was_held) {
        // A clean stop lowers the mark to what was issued (never below the
        // mark this claim started above), so the next holder does not lead
        // its clock by the window. Every ID returned under the claim is in
        // the slots now: a generation that steps a slot after this read sees
        // the new generation and returns nothing (the fences pair with the
        // one in the etcd source's confirm()).
        std::atomic_thread_fence(std::memory_order_seq_cst);
        const int64_t issued = std::max(floor_ms_, highest_issued_tick_ms());
        if (issued < recorded_ms_ && record_window(claimed_, issued))
            ereport(LOG, (errmsg("shardid coordinator: lowered the mark of node id %d to %lld, the last tick issued",
                                 claimed_, (long long)issued)));
    }
    // Revoking deletes the node key at once: the id is free for another
    // node, which starts above the mark this one recorded.
    if (!client_.revoke(lease_, &why))
        ereport(LOG, (errmsg("shardid coordinator: could not revoke lease %s: %s", lease_.c_str(), why.c_str())));
    else if (claimed_ >= 0)
        ereport(LOG, (errmsg("shardid coordinator: released node id %d", claimed_)));
}

void Holder::step()
{
    serve_counters();
    if (!keep_lease())
        return;
    if (held_ < 0)
        claim();
    if (held_ >= 0) {
        renew_window();
        if (held_ >= 0 && !counters_raised_)
            counters_raised_ = raise_counters();
    }
}

}  // namespace shardid::pg
