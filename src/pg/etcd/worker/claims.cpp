// Claims of shard values in etcd, in batches (src/pg/etcd/worker/values.cpp
// decides which; the rules: src/core/etcd/shard_values.hpp): one read of
// every key of up to batch_max_ values, one transaction that claims all of
// them, above every ID a previous holder issued; and etcd's history under
// the prefix, which every claim reads and compares (src/core/etcd/rules.hpp,
// "History").
#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <unordered_map>

#include "core/etcd/shard_values.hpp"
#include "core/text.hpp"
#include "pg/etcd/worker/values.hpp"
#include "pg/base/settings.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/etcd/shard_claims.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

namespace {

// etcd's words for a transaction with more operations than it allows
// (--max-txn-ops, 128 by default): the batch is halved.
bool too_many_ops(const std::string& why) { return why.find("too many operations") != std::string::npos; }

}  // namespace

namespace {

// A listing of [from, end) in pages, each well under any answer's limit,
// at the revision of its first page.
bool list_pages(etcd::Client& client, const std::string& from, const std::string& end,
                std::unordered_map<std::string, etcd::KeyValue>* out, std::string* why)
{
    std::string at_key = from;
    int64_t at = 0;
    for (;;) {
        etcd::RangePage page;
        if (!client.range_page(etcd::encode_range_page(at_key, end, 1000, at, false), &page, why))
            return false;
        if (at == 0)
            at = page.header.revision;
        if (page.kvs.empty())
            return true;
        // The next page starts after the last key of this one.
        at_key = page.kvs.back().key + std::string(1, '\0');
        for (etcd::KeyValue& kv : page.kvs)
            (*out)[kv.key] = std::move(kv);
        if (!page.more)
            return true;
    }
}

}  // namespace

// Reads what a claim of `batch` (or, when null, of any value of the slot's
// space) needs: one transaction of gets for a batch; pages of the space's
// keys for a whole space (fewer requests when thousands are claimed at once).
bool ShardValues::read_claims(int slot_index, const std::vector<int>* batch, SpaceRead* out)
{
    const Slot& slot = shared->slots[slot_index];
    const std::string space = etcd::space_name(slot.shape);
    const std::string rkey = etcd::shard_retired_key(prefix_, space), hkey = etcd::history_key(prefix_);
    const std::string want_from = prefix_ + "/shardwant/" + space + "/",
                      want_end = prefix_ + "/shardwant/" + space + "0";
    std::string why;
    *out = SpaceRead{};
    std::vector<etcd::Op> reads{
        {false, rkey, "", ""}, {false, hkey, "", ""}, {false, want_from, "", "", false, want_end}};
    if (batch != nullptr)
        for (int i : *batch) {
            const int64_t value = claim_value(shard_claims()->entries[i].key.load());
            reads.push_back({false, etcd::shard_key(prefix_, space, value), "", ""});
            reads.push_back({false, etcd::shard_mark_key(prefix_, space, value), "", ""});
        }
    etcd::Txn r;
    if (!session_.txn({}, reads, {}, &r, &why)) {
        if (too_many_ops(why) && max_ops_ > 8) {
            max_ops_ /= 2;
            return false;
        }
        session_.failed("could not read the claims of layout " + std::string(slot.name), why);
        return false;
    }
    session_.answered();
    for (etcd::KeyValue& kv : r.kvs) {
        if (kv.key.compare(0, want_from.size(), want_from) == 0)
            out->any_want = true;
        out->kvs[kv.key] = std::move(kv);
    }
    if (batch == nullptr) {
        for (const char* kind : {"/shard/", "/shardmark/"}) {
            const std::string from = prefix_ + kind + space + "/", end = prefix_ + kind + space + "0";
            if (!list_pages(session_.client(), from, end, &out->kvs, &why)) {
                session_.failed("could not list \"" + from + "\"", why);
                return false;
            }
            session_.answered();
        }
    }
    const auto h = out->kvs.find(hkey);
    if (h == out->kvs.end() || h->second.mod_revision != history_.revision()) {
        history_.reread();  // etcd's history changed: read it again first
        return false;
    }
    if (const auto it = out->kvs.find(rkey); it != out->kvs.end())
        out->retired = it->second, out->has_retired = true;
    return true;
}

// Claims the values of `batch` (entries the serve loop found due): those
// of a claim space together, in as few transactions as etcd's limit of
// operations allows; thousands at once (a node's declared logical shards)
// from one listing of their space.
void ShardValues::claim_values(std::vector<int>& batch)
{
    ShardClaims* t = shard_claims();
    std::stable_sort(batch.begin(), batch.end(), [&](int a, int b) {
        return claim_slot(t->entries[a].key.load()) < claim_slot(t->entries[b].key.load());
    });
    // Until the lease's next renewal is due (at least 100 ms): it comes first.
    const int64_t start = fence_clock_ms();
    const int64_t budget = std::max<int64_t>(100, session_.last_sent_ms() +
                                                      etcd::keepalive_every_ms(session_.lease_ttl_ms()) - 50 - start);
    for (size_t at = 0; at < batch.size() && node_.held() >= 0 && fence_clock_ms() - start < budget;) {
        const int slot = claim_slot(t->entries[batch[at]].key.load());
        size_t end = at;
        while (end < batch.size() && claim_slot(t->entries[batch[end]].key.load()) == slot)
            end++;
        std::vector<int> group(batch.begin() + long(at), batch.begin() + long(end));
        at = end;
        // A listing of the space stays usable across rounds while this
        // node's own claims are all that changed in it (each added to it);
        // a claim that fails forgets it.
        if (fence_clock_ms() - listing_at_ms_ > 1000 || history_.revision() == 0)
            listing_slot_ = -1;
        bool listed = group.size() > 64 && (listing_slot_ == slot || read_claims(slot, nullptr, &listing_));
        if (listed && listing_slot_ != slot)
            listing_slot_ = slot, listing_at_ms_ = fence_clock_ms();
        for (size_t k = 0; k < group.size() && node_.held() >= 0 && fence_clock_ms() - start < budget;) {
            SpaceRead part;
            const SpaceRead* read = &listing_;
            size_t end = group.size();
            if (!listed) {
                // A transaction of gets: two per value, within etcd's limit.
                end = std::min(group.size(), k + (max_ops_ - 3) / 2);
                std::vector<int> chunk(group.begin() + long(k), group.begin() + long(end));
                if (!read_claims(slot, &chunk, &part))
                    return;
                read = &part;
            }
            const size_t done = commit_claims(group, k, end, *read);
            if (done == 0) {
                // The listing is stale: the rest from reads of their own.
                listing_slot_ = -1;
                listed = false;
                // One of them was taken, or its mark moved, since the read:
                // each alone, read again.
                std::vector<int> one{group[k]};
                if (read_claims(slot, &one, &part))
                    commit_claims(one, 0, 1, part);
                k++;
            } else {
                k += done;
            }
        }
    }
    if (node_.held() >= 0 && fence_clock_ms() - start >= budget) {
        // More to claim: the next round at once, once the lease is seen to.
        if (Latch* latch = etcd_shared().worker_latch.load())
            SetLatch(latch);
    }
}

// Claims values of `group` from `from` on (before `end`: those `read`
// holds), as many as one transaction holds: each decided from `read` as a claim of its own would be, claimed
// together. Returns how many it took from the group (decided, whether
// claimed or not); 0 when the transaction failed (one of them was taken,
// or its mark moved, since the read: the caller tries it alone).
size_t ShardValues::commit_claims(const std::vector<int>& group, size_t from, size_t end, const SpaceRead& read)
{
    ShardClaims* t = shard_claims();
    const uint64_t key0 = t->entries[group[from]].key.load();
    const Slot& slot = shared->slots[claim_slot(key0)];
    const std::string space = etcd::space_name(slot.shape);
    const std::string rkey = etcd::shard_retired_key(prefix_, space), hkey = etcd::history_key(prefix_);
    std::string why;
    const int64_t now = wall_clock().now_ms();
    const int64_t reach = now + std::max<int64_t>(session_.fence_ms() - fence_clock_ms(), 0);
    // The node marks of previous holders that did not release, read once.
    std::map<int, etcd::Mark> node_marks;
    std::map<int, bool> node_mark_bad;
    bool marks_read = false;
    const NodeMarkFn node_mark = [&](int holder, etcd::Mark* out, bool* bad) -> bool {
        if (!marks_read) {
            std::vector<etcd::KeyValue> kvs;
            if (!session_.client().range(prefix_ + "/mark/", etcd::prefix_end(prefix_ + "/mark"), &kvs, &why)) {
                session_.failed("could not read the marks of the node ids", why);
                return false;
            }
            session_.answered();
            for (const etcd::KeyValue& kv : kvs) {
                const int id = etcd::mark_id_of_key(prefix_, kv.key);
                etcd::Mark m;
                std::string implausible;
                if (id < 0)
                    continue;
                if (!etcd::parse_mark(kv.value, &m) ||
                    (!node_.confirmed(m.token) &&
                     !etcd::mark_plausible(m.end_ms, now, max_clock_lead_ms,
                                           std::max(session_.lease_ttl_ms(), m.ttl_ms), &implausible)))
                    node_mark_bad[id] = true;
                else
                    node_marks[id] = m;
            }
            marks_read = true;
        }
        *bad = node_mark_bad.count(holder) != 0;
        const auto it = node_marks.find(holder);
        if (it != node_marks.end())
            *out = it->second;
        else
            *out = etcd::Mark{}, out->end_ms = -1;  // none: its holder's IDs cannot be bounded
        return true;
    };
    // The space's compares, once: the history and the retired word did not
    // move since the read, and (when none was there) nobody asks for any
    // value of the space back.
    std::vector<etcd::Compare> compare{
        {etcd::Compare::Target::mod, hkey, history_.revision(), ""},
        {etcd::Compare::Target::mod, rkey, read.has_retired ? read.retired.mod_revision : 0, ""}};
    if (!read.any_want)
        compare.push_back({etcd::Compare::Target::create, prefix_ + "/shardwant/" + space + "/", 0, "",
                           prefix_ + "/shardwant/" + space + "0"});
    std::vector<etcd::Op> puts;
    std::vector<Plan> plans;
    const std::string me = etcd::holder_value(this_node());
    size_t k = from;
    for (; k < end; k++) {
        const int i = group[k];
        ShardClaim& e = t->entries[i];
        const uint64_t key = e.key.load();
        if (key == 0 || claim_slot(key) != claim_slot(key0))
            continue;
        const int64_t value = claim_value(key);
        const std::string ckey = etcd::shard_key(prefix_, space, value),
                          mkey = etcd::shard_mark_key(prefix_, space, value),
                          wkey = etcd::shard_want_key(prefix_, space, value);
        ValueRead v;
        const auto get = [&](const std::string& k2, etcd::KeyValue* kv) {
            const auto it = read.kvs.find(k2);
            if (it == read.kvs.end())
                return false;
            *kv = it->second;
            return true;
        };
        v.has_holder = get(ckey, &v.holder);
        v.has_mark = get(mkey, &v.mark);
        v.has_want = read.any_want && get(wkey, &v.want);
        // Room for this value's compares and requests (at most 3 each), and
        // the witness's compare and put (Session::txn()).
        if (compare.size() + 4 > max_ops_ || puts.size() + 4 > max_ops_)
            break;
        Plan p;
        p.index = i;
        p.ckey = ckey;
        if (!decide_claim(i, v, read.has_retired ? &read.retired : nullptr, now, reach, node_mark, &p))
            continue;
        // What the claim compares: nobody holds it (or this lease does), its
        // mark did not move since the read, nobody asks for it back.
        if (v.has_holder) {
            compare.push_back({etcd::Compare::Target::lease, ckey, 0, session_.lease()});
        } else {
            compare.push_back({etcd::Compare::Target::create, ckey, 0, ""});
            compare.push_back({etcd::Compare::Target::mod, mkey, v.has_mark ? v.mark.mod_revision : 0, ""});
        }
        if (read.any_want && !v.has_want)
            compare.push_back({etcd::Compare::Target::create, wkey, 0, ""});
        const etcd::ShardMark mine{p.mark_floor, node_.claim_token(), node_.claimed(), false, p.target, p.bound};
        puts.push_back({true, ckey, me, session_.lease()});
        puts.push_back({true, mkey, etcd::shard_mark_value(mine), ""});
        if (v.has_want && v.want.lease == session_.lease())
            puts.push_back({false, wkey, "", "", true});  // this node's own ask, answered
        plans.push_back(std::move(p));
    }
    const size_t taken = std::max<size_t>(k - from, 1);
    if (plans.empty())
        return taken;
    etcd::Txn c;
    if (!session_.txn(compare, puts, {}, &c, &why)) {
        if (too_many_ops(why) && max_ops_ > 8)
            max_ops_ /= 2;
        else
            session_.failed("could not claim " + std::to_string(plans.size()) + " shard values of layout " + slot.name,
                            why);
        return taken;  // tried again next round
    }
    session_.answered();
    if (!c.succeeded) {
        history_.reread();  // the history may have moved too: read it again
        return 0;
    }
    for (const Plan& p : plans)
        claimed(p, slot, c.header.revision, plans.size());
    if (&read == &listing_) {
        // This node's writes, as etcd now holds them.
        for (const etcd::Op& op : puts) {
            if (op.del) {
                listing_.kvs.erase(op.key);
                continue;
            }
            etcd::KeyValue& kv = listing_.kvs[op.key];
            kv.key = op.key;
            kv.value = op.value;
            kv.lease = op.lease;
            kv.mod_revision = c.header.revision;
            if (kv.create_revision == 0)
                kv.create_revision = c.header.revision;
        }
    }
    ConditionVariableBroadcast(&etcd_shared().changed);
    return taken;
}

// A claim etcd took: the slot continues above its target, and the value
// is published (or waits out a previous holder's fence, or the history).
void ShardValues::claimed(const Plan& p, const Slot& slot, int64_t revision, size_t together)
{
    ShardClaim& e = shard_claims()->entries[p.index];
    if (p.target != 0)
        raise_last(const_cast<SlotState&>(slot.state), p.target);
    e.raised.store(p.target);
    e.bound_need.store(0);
    e.bound.store(etcd::keeps_bound(slot.shape) ? p.bound : UINT64_MAX, std::memory_order_seq_cst);
    e.floor_ms.store(p.floor);
    e.since_ms.store(wall_clock().now_ms());
    e.used_ms.store(wall_clock().now_ms());
    set_note(e, "");
    held_keys_.put(p.ckey, p.index, revision);
    if (p.wait > 0) {
        work_[size_t(p.index)].publish_after_ms = fence_clock_ms() + p.wait;
        e.state.store(int(ClaimState::taking_over), std::memory_order_release);
        if (together == 1)
            ereport(LOG, (errmsg("shardid coordinator: %s was not released by its previous holder: waiting %.1f s "
                                 "for its fence before the first ID",
                                 describe(slot, claim_value(e.key.load())).c_str(), double(p.wait) / 1000)));
        return;
    }
    bump_generation(shard_claims(), e);
    e.state.store(int(ClaimState::held), std::memory_order_release);
}

}  // namespace shardid::pg
