// The coordinator keeps what it holds confirmed (src/pg/coord/coord_values.cpp
// claims and releases): with every renewal of the lease, the shard keys
// under it are read back; a coarse layout's bound moves ahead of its IDs.
#include <algorithm>
#include <string>

#include "core/coord/shard_claim.hpp"
#include "core/text.hpp"
#include "pg/coord/coord_holder.hpp"
#include "pg/base/settings.hpp"
#include "pg/source/shard_claims.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

// With every renewal of the lease, one request (LeaseTimeToLive with its
// keys) for both directions:
// - the shard keys this node holds must still be attached to its lease. A
//   key deleted or rewritten by hand is no longer this node's claim: its
//   value stops at once (no ID with it from here on; its generators wait,
//   and the coordinator claims it again if nobody else has). Another node
//   that claims the value meanwhile waits for this node's window as
//   recorded when it read the claim, at least a lease TTL past that read;
//   this node renews, and so notices, every fifth of one
//   (coord::keepalive_every_ms()).
// - a shard key attached to the lease whose value this node no longer
//   wants (given up at a fence, forgotten after an etcd outage that the
//   lease outlived) is deleted: no other node waits for a value nobody
//   uses. Its mark stays unreleased, so the next holder still waits for
//   this node's window.
void Holder::confirm_values()
{
    ShardClaims* t = shard_claims();
    if (t == nullptr)
        return;
    std::vector<std::string> keys;
    bool alive = false;
    std::string why;
    if (!client_.lease_keys(lease_, &keys, &alive, &why)) {
        failed("could not read the keys of lease " + lease_, why);
        return;
    }
    answered();
    if (!alive)
        return;  // the next renewal finds the lease gone and stops everything
    std::sort(keys.begin(), keys.end());
    std::vector<std::string> wanted;  // the shard keys this node holds or claims
    for (int i = 0; i < t->size; i++) {
        ShardClaim& e = t->entries[i];
        const uint64_t key = e.key.load(std::memory_order_acquire);
        const auto state = ClaimState(e.state.load(std::memory_order_acquire));
        if (key == 0 || state == ClaimState::free || state == ClaimState::busy || state == ClaimState::refused ||
            state == ClaimState::ahead)
            continue;
        const Slot& slot = shared->slots[claim_slot(key)];
        const std::string ckey = coord::shard_key(prefix_, coord::space_name(slot.shape), claim_value(key));
        wanted.push_back(ckey);
        if (state == ClaimState::wanted || state == ClaimState::releasing ||
            std::binary_search(keys.begin(), keys.end(), ckey))
            continue;
        stop_value(i, "the key \"" + ckey + "\" is no longer held by lease " + lease_ +
                          " (deleted or rewritten by hand): IDs with " + describe(slot, claim_value(key)) + " stopped");
    }
    std::sort(wanted.begin(), wanted.end());
    const std::string shards = prefix_ + "/shard/";
    for (const std::string& k : keys) {
        if (k.compare(0, shards.size(), shards) != 0 || std::binary_search(wanted.begin(), wanted.end(), k))
            continue;
        etcd::Txn d;
        if (!client_.txn(
                etcd::encode_txn({{etcd::Compare::Target::lease, k, 0, lease_}}, {{false, k, "", "", true}}, {}), &d,
                &why)) {
            failed("could not delete \"" + k + "\", a claim this node no longer uses", why);
            return;
        }
        answered();
        if (d.succeeded)
            ereport(LOG, (errmsg("shardid coordinator: deleted \"%s\": a claim of lease %s whose value this node no "
                                 "longer uses",
                                 k.c_str(), lease_.c_str())));
    }
    give_way();
}

// A value held as an explicit shard that another node wants back as its
// own id (its shardwant/ key: it claimed that node id meanwhile, and its
// defaults need the value) is given back. One read of those keys per
// renewal, only while explicit values are held.
void Holder::give_way()
{
    ShardClaims* t = shard_claims();
    bool any = false;
    for (int i = 0; i < t->size && !any; i++) {
        const ShardClaim& e = t->entries[i];
        any = e.key.load() != 0 && e.state.load() == int(ClaimState::held) && !e.own_id.load();
    }
    if (!any)
        return;
    std::vector<etcd::KeyValue> kvs;
    std::string why;
    if (!client_.range(prefix_ + "/shardwant/", coord::prefix_end(prefix_ + "/shardwant"), &kvs, &why)) {
        failed("could not list the shard values other nodes want back", why);
        return;
    }
    answered();
    std::vector<std::string> wanted;
    for (const etcd::KeyValue& kv : kvs)
        if (kv.lease != lease_)
            wanted.push_back(kv.key);
    if (wanted.empty())
        return;
    std::sort(wanted.begin(), wanted.end());
    for (int i = 0; i < t->size; i++) {
        ShardClaim& e = t->entries[i];
        const uint64_t key = e.key.load();
        if (key == 0 || e.state.load() != int(ClaimState::held) || e.own_id.load())
            continue;
        const Slot& slot = shared->slots[claim_slot(key)];
        const std::string wkey = coord::shard_want_key(prefix_, coord::space_name(slot.shape), claim_value(key));
        if (!std::binary_search(wanted.begin(), wanted.end(), wkey))
            continue;
        ereport(LOG, (errmsg("shardid coordinator: giving %s back: the node holding node id %lld wants it as its "
                             "own value",
                             describe(slot, claim_value(key)).c_str(), (long long)claim_value(key))));
        release_shard(i);
    }
}

// A value whose key is no longer this node's: no ID with it from here on
// (its generators wait, and it is claimed again if nobody else has).
void Holder::stop_value(int i, const std::string& note)
{
    ShardClaim& e = shard_claims()->entries[i];
    e.state.store(int(ClaimState::wanted), std::memory_order_seq_cst);
    e.generation.fetch_add(1, std::memory_order_seq_cst);
    set_note(e, note);
    error(Condition::corrupt_key, note);
    ereport(WARNING, (errmsg("shardid coordinator: %s", note.c_str())));
}

// A coarse layout's bound (coord::keeps_bound()) moves ahead of the words
// its generators reach, before they reach it (coord::bound_due()), only
// under this node's claim: a key no longer this lease's stops the value.
void Holder::move_bound(int i)
{
    ShardClaim& e = shard_claims()->entries[i];
    const uint64_t key = e.key.load();
    const Slot& slot = shared->slots[claim_slot(key)];
    const uint64_t bound = e.bound.load();
    const uint64_t need = std::max(e.bound_need.load(), slot.state.last.load(std::memory_order_seq_cst));
    const int64_t now = wall_clock().now_ms();
    if (!coord::bound_due(slot.shape, bound, need, now, max_clock_lead_ms))
        return;
    const uint64_t next = coord::bound_target(slot.shape, need, now, max_clock_lead_ms);
    if (next <= bound)
        return;
    const Layout layout = slot.shape.layout(slot.name);
    const int64_t value = claim_value(key);
    const std::string space = coord::space_name(slot.shape);
    const std::string ckey = coord::shard_key(prefix_, space, value),
                      mkey = coord::shard_mark_key(prefix_, space, value);
    const int64_t floor =
        std::max({e.floor_ms.load(), slot_last_ms(slot), layout.ms_of_tick(int64_t(layout.packed_tick(next)))});
    const coord::ShardMark mark{floor, claim_token_, claimed_, false, e.raised.load(), next};
    std::string why;
    etcd::Txn t;
    if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::lease, ckey, 0, lease_}},
                                      {{true, mkey, coord::shard_mark_value(mark), ""}}, {}),
                     &t, &why)) {
        failed("could not move the bound of " + describe(slot, value), why);
        return;
    }
    answered();
    if (!t.succeeded) {
        stop_value(i, "the key \"" + ckey + "\" is no longer held by lease " + lease_ +
                          " (deleted or rewritten by hand): IDs with " + describe(slot, value) + " stopped");
        return;
    }
    e.bound.store(next, std::memory_order_seq_cst);
    ConditionVariableBroadcast(&coord_shared().changed);
}

}  // namespace shardid::pg
