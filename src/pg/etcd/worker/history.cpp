// etcd's history under the prefix (the rules: src/core/etcd/continuity.hpp):
// read before any claim, made when missing or when etcd went back on it,
// raised to the longest lease TTL of the fleet; and what this node
// publishes under a new one (the words of its layouts), so that what etcd
// forgot is remembered by the nodes that issued the IDs.
#include <algorithm>
#include <map>
#include <string>

#include "core/etcd/continuity.hpp"
#include "core/etcd/shard_values.hpp"
#include "core/text.hpp"
#include "pg/etcd/worker/history.hpp"
#include "pg/base/settings.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

// The history under the prefix, read before any claim (and after a claim
// that compared it failed, or a ping that found it changed), and while it
// settles, every round: made when missing (a new prefix, or etcd lost its
// data), deleted and made anew when it is one etcd went back on (a
// restored snapshot: src/pg/etcd/worker/session.cpp tells), raised to the longest
// lease TTL this node knows of; with <prefix>/settling under a lease of
// that TTL and its margin (etcd::settle_ms()), so that the wait runs on
// etcd's clock, not on any node's (a node 60 s ahead made every other node
// wait 64 s when the wait was its clock's). False (and nothing claimed)
// until it is known; what the node holds goes on meanwhile.
bool PrefixHistory::ensure()
{
    if (revision_ != 0 && !settling_)
        return true;
    const std::string key = etcd::history_key(prefix_), skey = etcd::settling_key(prefix_);
    std::string why;
    for (int attempt = 0; attempt < 4; attempt++) {
        etcd::Txn r;
        if (!session_.txn({}, {{false, key, "", ""}, {false, skey, "", ""}}, {}, &r, &why)) {
            session_.failed("could not read \"" + key + "\"", why);
            return false;
        }
        session_.answered();
        const etcd::KeyValue* found = nullptr;
        const etcd::KeyValue* settling = nullptr;
        for (const etcd::KeyValue& kv : r.kvs)
            (kv.key == key ? found : settling) = &kv;
        if (found == nullptr) {
            // A new prefix, or etcd lost its data: nodes that issued under
            // what it forgot may go on until their fence.
            if (!make("\"" + key + "\" was missing (a new prefix, or etcd lost its data)"))
                return false;
            continue;  // read it back, whoever made it
        }
        etcd::History h;
        std::string implausible;
        if (!etcd::parse_history(found->value, &h) ||
            !etcd::history_plausible(h.settled_ms, wall_clock().now_ms(), max_clock_lead_ms, &implausible) ||
            (settling != nullptr && settling->lease.empty())) {
            // Nothing is claimed under it; what this node holds goes on
            // while its keys re-check fine.
            bad_ = true;
            session_.error(
                Condition::corrupt_key,
                settling != nullptr && settling->lease.empty()
                    ? "the key \"" + skey +
                          "\" has no lease, and shardid writes it only under one: nothing new is claimed until "
                          "it is removed (what this node holds goes on)"
                    : "the key \"" + key + "\" holds \"" + printable(found->value, 60) + "\", which " +
                          (implausible.empty() ? std::string("is not a history shardid writes")
                                               : "no node could have written: " + implausible) +
                          ": nothing new is claimed until it is fixed (what this node holds goes on); delete it: "
                          "the next claim writes it again, and waits for every node to stop");
            return false;
        }
        if (left(h.token)) {
            // etcd went back on this history, or back to one this node left
            // (a snapshot restored from before a loss): whatever it holds
            // from before may be older than what nodes did since. Deleted
            // (the settling of its time with it), then made anew above.
            etcd::Txn d;
            if (!session_.txn({{etcd::Compare::Target::mod, key, found->mod_revision, ""}},
                              {{false, key, "", "", true}, {false, skey, "", "", true}}, {}, &d, &why)) {
                session_.failed("could not delete \"" + key + "\", a history etcd went back on", why);
                return false;
            }
            session_.answered();
            if (d.succeeded)
                ereport(LOG, (errmsg("shardid coordinator: deleted \"%s\", the history etcd went back on: it is made "
                                     "anew",
                                     key.c_str())));
            continue;
        }
        // Raised to this node's own TTL; while it settles, to the longest
        // this node knew under the history before (its writer may have
        // known less: a node of that TTL may still issue under what etcd
        // forgot until its fence).
        etcd::History raised;
        const int64_t raise_to_ms =
            settling != nullptr ? std::max(fleet_ttl_ms_, session_.lease_ttl_ms()) : session_.lease_ttl_ms();
        if (etcd::history_extended(h, raise_to_ms, settling != nullptr, wall_clock().now_ms(), &raised)) {
            // The fleet has a node of a longer TTL than its writer knew of:
            // the next history after a loss must settle that long, and a
            // settling in progress must outlast that node's fence too.
            std::vector<etcd::Op> puts{{true, key, etcd::history_value(raised), ""}};
            etcd::Grant g;
            if (settling != nullptr) {
                if (!session_.client().grant((etcd::settle_ms(raised.ttl_ms) + 999) / 1000, &g, &why)) {
                    session_.failed("could not get a lease for \"" + skey + "\"", why);
                    return false;
                }
                puts.push_back({true, skey, etcd::history_value(raised), g.id});
            }
            etcd::Txn t;
            if (!session_.txn({{etcd::Compare::Target::mod, key, found->mod_revision, ""}}, puts, {}, &t, &why)) {
                session_.failed("could not raise the lease TTL \"" + key + "\" records", why);
                return false;
            }
            session_.answered();
            if (t.succeeded)
                ereport(LOG, (errmsg("shardid coordinator: raised the longest lease TTL \"%s\" records from %lld s "
                                     "to %lld s%s",
                                     key.c_str(), (long long)(h.ttl_ms / 1000), (long long)(raised.ttl_ms / 1000),
                                     settling != nullptr ? ", and its settling with it" : "")));
            continue;
        }
        learn_fleet_ttl(h.ttl_ms);
        if (bad_) {
            bad_ = false;
            session_.ended(Condition::corrupt_key);
        }
        if (current_.token != h.token) {
            session_.ended(Condition::went_back);
            leave(current_.token);  // never taken up again
        }
        current_ = h;
        revision_ = found->mod_revision;
        created_ = found->create_revision;
        // Generators wait through the settling (bounded: until it ends, a
        // lease TTL and its margin of the longest TTL at most).
        EtcdShared& c = etcd_shared();
        if (settling != nullptr && (!settling_ || settling->mod_revision != settling_revision_))
            c.settling_until_ms.store(
                fence_clock_ms() +
                std::clamp<int64_t>(h.settled_ms - wall_clock().now_ms(), 0, etcd::settle_ms(fleet_ttl_ms_)) + 1000);
        else if (settling == nullptr)
            c.settling_until_ms.store(0);
        settling_ = settling != nullptr;
        settling_created_ = settling != nullptr ? settling->create_revision : 0;
        settling_revision_ = settling != nullptr ? settling->mod_revision : 0;
        if (republished_ != h.token)
            republish();
        return true;
    }
    return false;
}

// A new history, with <prefix>/settling under a lease of a lease TTL and
// its margin of the longest TTL this node knows the fleet to use: claims of
// what has no mark wait until etcd expires it. False when etcd did not
// take it (reported).
bool PrefixHistory::make(const std::string& why_new)
{
    const std::string key = etcd::history_key(prefix_), skey = etcd::settling_key(prefix_);
    const int64_t settle = etcd::settle_ms(fleet_ttl_ms_);
    std::string why;
    etcd::Grant g;
    if (!session_.client().grant((settle + 999) / 1000, &g, &why)) {
        session_.failed("could not get a lease for \"" + skey + "\"", why);
        return false;
    }
    const etcd::History made{new_token(), wall_clock().now_ms() + settle, fleet_ttl_ms_};
    etcd::Txn t;
    if (!session_.txn({{etcd::Compare::Target::create, key, 0, ""}},
                      {{true, key, etcd::history_value(made), ""}, {true, skey, etcd::history_value(made), g.id}}, {},
                      &t, &why)) {
        session_.failed("could not write \"" + key + "\"", why);
        return false;
    }
    session_.answered();
    if (t.succeeded)
        ereport(LOG,
                (errmsg("shardid coordinator: %s: made a new history; claims of what has no mark, or a mark "
                        "from before it, wait %.1f s (etcd expires \"%s\"), until every node that may still issue "
                        "under what etcd forgot has stopped (the longest lease TTL known under the prefix: %lld s)",
                        why_new.c_str(), double(settle) / 1000, skey.c_str(), (long long)(fleet_ttl_ms_ / 1000))));
    return true;
}

// What a renewal's ping read of the history (null: missing): one that
// changed since it was read (made anew, raised, edited) is read again
// before the next claim.
void PrefixHistory::saw(const etcd::KeyValue* kv)
{
    if (kv == nullptr || kv->mod_revision != revision_)
        revision_ = 0;
}

// The longest lease TTL of the fleet this node knows: the history's (0: a
// new lease: what the node state kept, until a history is read), never
// below its own. Kept in the node state, so that a history made right
// after a restart, before any is read, knows it too.
void PrefixHistory::learn_fleet_ttl(int64_t history_ms)
{
    const int64_t before = fleet_ttl_ms_;
    fleet_ttl_ms_ = history_ms != 0 ? etcd::fleet_ttl_ms(session_.lease_ttl_ms(), 0, history_ms)
                                    : etcd::fleet_ttl_ms(session_.lease_ttl_ms(), shared->fleet_ttl_ms.load(), before);
    shared->fleet_ttl_ms.store(fleet_ttl_ms_);
    if (before != 0 && fleet_ttl_ms_ > before)
        ereport(LOG, (errmsg("shardid coordinator: a node under the prefix uses a lease TTL of %lld s: a history "
                             "made after etcd loses its data settles %.1f s",
                             (long long)(fleet_ttl_ms_ / 1000), double(etcd::settle_ms(fleet_ttl_ms_)) / 1000)));
}

// Under a history this node has not published under yet (a new one after
// etcd lost its data, or its first in this life), it raises each claim
// space's retired word to the word of its layout there: every ID this node
// issued with any value of the space lies below it (the node's state, which
// its WAL and state file keep, holds those words; the counters' floors are
// raised at each claim). A value whose mark etcd forgot then continues
// above what every node that published issued, within the history's
// settling, before any claim of it issues.
void PrefixHistory::republish()
{
    std::vector<etcd::KeyValue> kvs;
    std::string why;
    const std::string from = prefix_ + "/shardretired/";
    if (!session_.client().range(from, etcd::prefix_end(prefix_ + "/shardretired"), &kvs, &why)) {
        session_.failed("could not read the retired words", why);
        return;
    }
    session_.answered();
    std::map<std::string, std::pair<uint64_t, int64_t>> have;  // key -> (word, mod revision)
    for (const etcd::KeyValue& kv : kvs) {
        uint64_t w = 0;
        if (etcd::parse_retired(kv.value, &w))
            have[kv.key] = {w, kv.mod_revision};
        else
            have[kv.key] = {UINT64_MAX, kv.mod_revision};  // refused where it is read; not raised here
    }
    std::vector<etcd::Compare> compare{{etcd::Compare::Target::mod, etcd::history_key(prefix_), revision_, ""}};
    std::vector<etcd::Op> puts;
    const int n = shared->n_used.load(std::memory_order_acquire);
    for (int s = 0; s < n; s++) {
        const Slot& slot = shared->slots[s];
        const uint64_t word = slot.state.last.load(std::memory_order_seq_cst);
        if (word == 0)
            continue;
        const std::string key = etcd::shard_retired_key(prefix_, etcd::space_name(slot.shape));
        const auto it = have.find(key);
        if (it != have.end() && it->second.first >= word)
            continue;
        compare.push_back({etcd::Compare::Target::mod, key, it == have.end() ? 0 : it->second.second, ""});
        puts.push_back({true, key, std::to_string(word), ""});
    }
    if (!puts.empty()) {
        etcd::Txn t;
        if (!session_.txn(compare, puts, {}, &t, &why)) {
            session_.failed("could not publish this node's words in the retired words", why);
            return;
        }
        session_.answered();
        if (!t.succeeded)
            return;  // moved meanwhile: again at the next claim
        ereport(LOG, (errmsg("shardid coordinator: published the words of %zu layouts in their retired words",
                             puts.size())));
    }
    republished_ = current_.token;
}

void PrefixHistory::leave(uint64_t token)
{
    if (token == 0 || left(token))
        return;
    if (n_left_ == max_left) {  // the oldest goes
        std::copy(left_ + 1, left_ + max_left, left_);
        n_left_--;
    }
    left_[n_left_++] = token;
}

bool PrefixHistory::left(uint64_t token) const { return std::find(left_, left_ + n_left_, token) != left_ + n_left_; }

}  // namespace shardid::pg
