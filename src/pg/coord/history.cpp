// etcd's history under the prefix (src/core/coord/coord.hpp, "History"):
// read before any claim, made when missing; and what this node publishes
// under a new one (the words of its layouts), so that what etcd forgot is
// remembered by the nodes that issued the IDs.
#include <algorithm>
#include <map>
#include <string>

#include "core/coord/shard_claim.hpp"
#include "core/text.hpp"
#include "pg/coord/holder.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

// The history under the prefix, read before any claim (and after a claim
// that compared it failed), and while it settles, every round: made when
// missing, with <prefix>/settling under a lease of a lease TTL and its
// margin (coord::settle_ms()), so that the wait runs on etcd's clock, not
// on any node's (a node 60 s ahead made every other node wait 64 s when
// the wait was its clock's). False (and nothing claimed) until it is known.
bool Holder::ensure_history()
{
    if (history_revision_ != 0 && !settling_now_)
        return true;
    const std::string key = coord::history_key(prefix_), skey = coord::settling_key(prefix_);
    std::string why;
    for (int attempt = 0; attempt < 2; attempt++) {
        etcd::Txn r;
        if (!client_.txn(etcd::encode_txn({}, {{false, key, "", ""}, {false, skey, "", ""}}, {}), &r, &why)) {
            failed("could not read \"" + key + "\"", why);
            return false;
        }
        answered();
        const etcd::KeyValue* found = nullptr;
        const etcd::KeyValue* settling = nullptr;
        for (const etcd::KeyValue& kv : r.kvs)
            (kv.key == key ? found : settling) = &kv;
        if (found == nullptr) {
            // A new prefix, or etcd lost its data: nodes that issued under
            // what it forgot may go on until their fence. Claims of what has
            // no mark wait until etcd expires the settling key's lease.
            const int64_t settle = coord::settle_ms(lease_ttl_ms_);
            etcd::Grant g;
            if (!client_.grant((settle + 999) / 1000, &g, &why)) {
                failed("could not get a lease for \"" + skey + "\"", why);
                return false;
            }
            const coord::History made{new_token(), wall_clock().now_ms() + settle};
            etcd::Txn t;
            if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::create, key, 0, ""}},
                                              {{true, key, coord::history_value(made), ""},
                                               {true, skey, coord::history_value(made), g.id}},
                                              {}),
                             &t, &why)) {
                failed("could not write \"" + key + "\"", why);
                return false;
            }
            answered();
            if (t.succeeded)
                ereport(LOG, (errmsg("shardid coordinator: \"%s\" was missing (a new prefix, or etcd lost its "
                                     "data): claims of what has no mark wait %.1f s (etcd expires \"%s\"), until "
                                     "every node that may still issue under what etcd forgot has stopped",
                                     key.c_str(), double(settle) / 1000, skey.c_str())));
            continue;  // read it back, whoever made it
        }
        coord::History h;
        std::string implausible;
        if (!coord::parse_history(found->value, &h) ||
            !coord::history_plausible(h.settled_ms, wall_clock().now_ms(), max_clock_lead_ms, &implausible) ||
            (settling != nullptr && settling->lease.empty())) {
            refused_ = true;
            error(Condition::corrupt_key,
                  settling != nullptr && settling->lease.empty()
                      ? "the key \"" + skey +
                            "\" has no lease, and shardid writes it only under one: nothing is "
                            "claimed until it is removed"
                      : "the key \"" + key + "\" holds \"" + printable(found->value, 60) + "\", which " +
                            (implausible.empty() ? std::string("is not a history shardid writes")
                                                 : "no node could have written: " + implausible) +
                            ": nothing is claimed until it is fixed (delete it: the next claim writes it again, and "
                            "waits for every node to stop)");
            return false;
        }
        history_ = h;
        history_revision_ = found->mod_revision;
        // Generators wait through the settling (bounded: a lease TTL and its
        // margin from when this node first saw it).
        CoordShared& c = coord_shared();
        if (settling != nullptr && !settling_now_)
            c.settling_until_ms.store(fence_clock_ms() + coord::settle_ms(lease_ttl_ms_) + 1000);
        else if (settling == nullptr)
            c.settling_until_ms.store(0);
        settling_now_ = settling != nullptr;
        settling_revision_ = settling != nullptr ? settling->mod_revision : 0;
        if (counters_history_ == 0)
            counters_history_ = h.token;  // this life's counter values are all taken under it
        if (republished_ != h.token)
            republish();
        return true;
    }
    return false;
}

// Under a history this node has not published under yet (a new one after
// etcd lost its data, or its first in this life), it raises each claim
// space's retired word to the word of its layout there: every ID this node
// issued with any value of the space lies below it (the node's state, which
// its WAL and state file keep, holds those words; the counters' floors are
// raised at each claim). A value whose mark etcd forgot then continues
// above what every node that published issued, within the history's
// settling, before any claim of it issues.
void Holder::republish()
{
    std::vector<etcd::KeyValue> kvs;
    std::string why;
    const std::string from = prefix_ + "/shardretired/";
    if (!client_.range(from, coord::prefix_end(prefix_ + "/shardretired"), &kvs, &why)) {
        failed("could not read the retired words", why);
        return;
    }
    answered();
    std::map<std::string, std::pair<uint64_t, int64_t>> have;  // key -> (word, mod revision)
    for (const etcd::KeyValue& kv : kvs) {
        uint64_t w = 0;
        if (coord::parse_retired(kv.value, &w))
            have[kv.key] = {w, kv.mod_revision};
        else
            have[kv.key] = {UINT64_MAX, kv.mod_revision};  // refused where it is read; not raised here
    }
    std::vector<etcd::Compare> compare{
        {etcd::Compare::Target::mod, coord::history_key(prefix_), history_revision_, ""}};
    std::vector<etcd::Op> puts;
    const int n = shared->n_used.load(std::memory_order_acquire);
    for (int s = 0; s < n; s++) {
        const Slot& slot = shared->slots[s];
        const uint64_t word = slot.state.last.load(std::memory_order_seq_cst);
        if (word == 0)
            continue;
        const std::string key = coord::shard_retired_key(prefix_, coord::space_name(slot.shape));
        const auto it = have.find(key);
        if (it != have.end() && it->second.first >= word)
            continue;
        compare.push_back({etcd::Compare::Target::mod, key, it == have.end() ? 0 : it->second.second, ""});
        puts.push_back({true, key, std::to_string(word), ""});
    }
    if (!puts.empty()) {
        etcd::Txn t;
        if (!client_.txn(etcd::encode_txn(compare, puts, {}), &t, &why)) {
            failed("could not publish this node's words in the retired words", why);
            return;
        }
        answered();
        if (!t.succeeded)
            return;  // moved meanwhile: again at the next claim
        ereport(LOG, (errmsg("shardid coordinator: published the words of %zu layouts in their retired words",
                             puts.size())));
    }
    republished_ = history_.token;
}

}  // namespace shardid::pg
