// etcd's history under the prefix (src/core/coord/coord.hpp, "History"):
// read before any claim, made when missing; and what this node publishes
// under a new one (the words of its layouts), so that what etcd forgot is
// remembered by the nodes that issued the IDs.
#include <algorithm>
#include <map>
#include <string>

#include "core/coord/shard_claim.hpp"
#include "core/text.hpp"
#include "pg/coord/coord_holder.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

int64_t Holder::settle_wait_ms() const
{
    return history_revision_ == 0 ? 0 : std::max<int64_t>(0, history_.settled_ms - wall_clock().now_ms());
}

// The history under the prefix, read once per claim of the node id (and
// after any claim that compared it failed): made when missing, with the
// time it settles. False (and nothing claimed) until it is known.
bool Holder::ensure_history()
{
    if (history_revision_ != 0)
        return true;
    const std::string key = coord::history_key(prefix_);
    std::string why;
    for (int attempt = 0; attempt < 2; attempt++) {
        std::vector<etcd::KeyValue> kvs;
        if (!client_.range(key, "", &kvs, &why)) {
            failed("could not read \"" + key + "\"", why);
            return false;
        }
        answered();
        if (kvs.empty()) {
            // A new prefix, or etcd lost its data: nodes that issued under
            // what it forgot may go on until their fence. Claims of what has
            // no mark wait until this settles.
            const coord::History made{new_token(), wall_clock().now_ms() + coord::settle_ms(lease_ttl_ms_)};
            etcd::Txn t;
            if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::create, key, 0, ""}},
                                              {{true, key, coord::history_value(made), ""}}, {}),
                             &t, &why)) {
                failed("could not write \"" + key + "\"", why);
                return false;
            }
            answered();
            if (t.succeeded)
                ereport(LOG, (errmsg("shardid coordinator: \"%s\" was missing (a new prefix, or etcd lost its "
                                     "data): claims of what has no mark wait %.1f s, until every node that may "
                                     "still issue under what etcd forgot has stopped",
                                     key.c_str(), double(coord::settle_ms(lease_ttl_ms_)) / 1000)));
            continue;  // read it back, whoever made it
        }
        coord::History h;
        std::string implausible;
        if (!coord::parse_history(kvs[0].value, &h) ||
            !coord::history_plausible(h.settled_ms, wall_clock().now_ms(), max_clock_lead_ms, &implausible)) {
            refused_ = true;
            error(Condition::corrupt_key,
                  "the key \"" + key + "\" holds \"" + printable(kvs[0].value, 60) + "\", which " +
                      (implausible.empty() ? std::string("is not a history shardid writes")
                                           : "no node could have written: " + implausible) +
                      ": nothing is claimed until it is fixed (delete it: the next claim writes it again, and "
                      "waits for every node to stop)");
            return false;
        }
        history_ = h;
        history_revision_ = kvs[0].mod_revision;
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
