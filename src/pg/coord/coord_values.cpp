// The coordinator's side of shard value claims (src/pg/source/shard_claims.hpp; the
// rules: src/core/coord/shard_claim.hpp): claim in etcd the values generators
// wait for, above every ID a previous holder issued; publish them; give
// back those idle for shardid.shard_idle_release and those a
// shardid_release_shard() asks for; forget them all with the node id.
#include <algorithm>
#include <climits>
#include <string>

#include "core/coord/shard_claim.hpp"
#include "core/text.hpp"
#include "pg/coord/coord_holder.hpp"
#include "pg/base/settings.hpp"
#include "pg/source/shard_claims.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

namespace {

// At most this long serving values in one round: the lease's renewal
// comes first.
constexpr int64_t serve_budget_ms = 200;
// A busy or refused value is asked for again this often.
constexpr int64_t retry_every_ms = 100;
// A value released by hand is not claimed again by this node before this,
// so that a node waiting for it can take it.
constexpr int64_t handover_pause_ms = 1000;

void set_note(ShardClaim& e, const std::string& note)
{
    ShardClaims& t = *shard_claims();
    SpinLockAcquire(&t.mutex);
    strlcpy(e.note, note.c_str(), sizeof e.note);
    SpinLockRelease(&t.mutex);
}

// Back to free: nobody waits for it and this node does not hold it.
void free_entry(ShardClaim& e)
{
    ShardClaims& t = *shard_claims();
    SpinLockAcquire(&t.mutex);
    if (e.state.load() != int(ClaimState::free)) {
        e.note[0] = '\0';
        e.own_id.store(false);
        e.generation.fetch_add(1, std::memory_order_seq_cst);
        e.state.store(int(ClaimState::free), std::memory_order_seq_cst);
        t.in_use.fetch_sub(1);
    }
    SpinLockRelease(&t.mutex);
}

// The start (Unix ms) of the last tick the slot issued in, or was raised
// to (0: none).
int64_t slot_last_ms(const Slot& slot)
{
    const uint64_t last = slot.state.last.load(std::memory_order_seq_cst);
    if (last == 0)
        return 0;
    const Layout layout = slot.shape.layout(slot.name);
    return layout.ms_of_tick(int64_t(layout.packed_tick(last)));
}

std::string describe(const Slot& slot, int64_t value)
{
    return "shard " + std::to_string(value) + " of layout " + slot.name;
}

}  // namespace

void Holder::serve_values()
{
    ShardClaims* t = shard_claims();
    if (t == nullptr || taking_over_)
        return;
    if (values_.size() != size_t(t->size))
        values_.assign(size_t(t->size), ValueWork{});
    const int64_t start = fence_clock_ms();
    const int64_t forgotten_ms = int64_t(etcd_wait_ms) + 1000;
    const int64_t idle_ms = int64_t(shard_idle_release_s) * 1000;
    for (int i = 0; i < t->size && held_ >= 0; i++) {
        ShardClaim& e = t->entries[i];
        if (e.key.load(std::memory_order_acquire) == 0)
            continue;
        ValueWork& w = values_[size_t(i)];
        const int64_t now = fence_clock_ms();
        const bool in_budget = now - start < serve_budget_ms;
        const bool forgotten = now - e.wanted_ms.load() > forgotten_ms;
        switch (ClaimState(e.state.load(std::memory_order_acquire))) {
        case ClaimState::free: break;
        case ClaimState::wanted:
            if (forgotten)
                free_entry(e);
            else if (in_budget && now >= w.not_before_ms)
                claim_shard(i);
            break;
        case ClaimState::busy:
        case ClaimState::refused:
            if (forgotten)
                free_entry(e);
            else if (in_budget && now >= w.next_try_ms) {
                w.next_try_ms = now + retry_every_ms;
                claim_shard(i);
            }
            break;
        case ClaimState::taking_over:
            if (now >= w.publish_after_ms) {
                e.generation.fetch_add(1, std::memory_order_acq_rel);
                e.state.store(int(ClaimState::held), std::memory_order_release);
                ConditionVariableBroadcast(&coord_shared().changed);
            }
            break;
        case ClaimState::held:
            if (!e.own_id.load() && in_budget && wall_clock().now_ms() - e.used_ms.load() > idle_ms)
                release_shard(i);
            break;
        case ClaimState::releasing:
            if (in_budget && release_shard(i))
                w.not_before_ms = now + handover_pause_ms;
            break;
        }
    }
}

void Holder::claim_shard(int i)
{
    ShardClaim& e = shard_claims()->entries[i];
    const uint64_t key = e.key.load();
    const Slot& slot = shared->slots[claim_slot(key)];
    const Layout layout = slot.shape.layout(slot.name);
    const int64_t value = claim_value(key);
    const std::string space = coord::space_name(slot.shape), what = describe(slot, value);
    const std::string ckey = coord::shard_key(prefix_, space, value),
                      mkey = coord::shard_mark_key(prefix_, space, value);
    std::string why;
    etcd::Txn r;
    if (!client_.txn(etcd::encode_txn({}, {{false, ckey, "", ""}, {false, mkey, "", ""}}, {}), &r, &why)) {
        failed("could not read the claim of " + what, why);
        return;
    }
    answered();
    etcd::KeyValue holder, mark;
    bool has_holder = false, has_mark = false;
    for (const etcd::KeyValue& kv : r.kvs) {
        if (kv.key == ckey)
            holder = kv, has_holder = true;
        else if (kv.key == mkey)
            mark = kv, has_mark = true;
    }
    const auto refuse = [&](const std::string& note) {
        if (e.state.load() != int(ClaimState::refused))
            ereport(LOG, (errmsg("shardid coordinator: %s is not used: %s", what.c_str(), note.c_str())));
        set_note(e, note);
        e.state.store(int(ClaimState::refused), std::memory_order_release);
    };
    coord::ShardMark m;
    if (has_mark && !coord::parse_shard_mark(mark.value, INT_MAX, &m)) {
        refuse("the key \"" + mkey + "\" holds \"" + printable(mark.value, 60) +
               "\", which is not a mark shardid writes; remove it once no node issues this shard");
        return;
    }
    const auto confirmed = [&](uint64_t token) {
        return token != 0 &&
               std::find(confirmed_tokens_.begin(), confirmed_tokens_.end(), token) != confirmed_tokens_.end();
    };
    if (has_holder) {
        if (holder.lease != lease_) {
            // Another node's (or a key edited by hand: it never expires).
            const std::string note =
                holder.lease.empty()
                    ? "the key \"" + ckey +
                          "\" has no lease, and shardid writes claims only under "
                          "one; remove it once no node issues this shard"
                    : "The node at " + coord::describe_holder(holder.value) +
                          (has_mark && !m.released ? " (node id " + std::to_string(m.holder) + ")" : std::string());
            if (holder.lease.empty()) {
                refuse(note);
                return;
            }
            if (e.state.load() != int(ClaimState::busy))
                ereport(LOG,
                        (errmsg("shardid coordinator: %s is held by another node: %s", what.c_str(), note.c_str())));
            set_note(e, note);
            e.state.store(int(ClaimState::busy), std::memory_order_release);
            return;
        }
    }
    // What the slot must continue above, as the layout's word (0: nothing):
    // every ID any previous holder issued with the value lies below it.
    // The mark this claim writes carries it, so that a claim of this node
    // whose raise did not survive (its answer lost, the lease lost before
    // the first ID, a clean restart before one) raises again: a mark of
    // this node's own raises above its own word, never assumes it did.
    int64_t floor = 0, wait = 0;
    uint64_t target = 0;
    // The word a mark carries must lie within the floor it was written
    // with (anything else no holder writes).
    if (has_mark && m.word != 0 &&
        (layout.tick_of(m.floor_ms) < 0 || layout.packed_tick(m.word) > uint64_t(layout.tick_of(m.floor_ms)))) {
        refuse("the key \"" + mkey + "\" holds \"" + printable(mark.value, 60) +
               "\", whose word lies beyond its floor: not a mark shardid writes");
        return;
    }
    // This node's own mark: this lease's own key (an answer lost, or the
    // node id changed under the lease); a token of this life's claims; or
    // written under the node id this node holds, when nobody else held that
    // id since this node's own last claim or clean stop.
    bool own = has_holder || (has_mark && (confirmed(m.token) || (m.holder == claimed_ && own_mark_)));
    if (own) {
        target = has_mark ? m.word : 0;
        floor = has_mark ? m.floor_ms : 0;
    } else if (has_mark) {
        std::string implausible;
        if (!coord::mark_plausible(m.floor_ms, wall_clock().now_ms(), max_clock_lead_ms, lease_ttl_ms_, &implausible)) {
            refuse("the key \"" + mkey + "\" holds a mark no holder could have written: " + implausible);
            return;
        }
        int64_t node_mark = -1;
        if (!m.released && m.holder == claimed_) {
            // Under the id this node holds: its claim raised every slot
            // above the id's mark and waited out the previous holder's
            // fence; the mark in etcd is this node's window now.
            node_mark = floor_ms_;
        } else if (!m.released) {
            // Its holder did not release it: its node mark bounds its IDs.
            const std::string nkey = coord::mark_key(prefix_, m.holder);
            std::vector<etcd::KeyValue> kvs;
            if (!client_.range(nkey, "", &kvs, &why)) {
                failed("could not read \"" + nkey + "\"", why);
                return;
            }
            answered();
            coord::Mark nm;
            if (!kvs.empty()) {
                if (!coord::parse_mark(kvs[0].value, &nm) ||
                    (!confirmed(nm.token) &&
                     !coord::mark_plausible(nm.end_ms, wall_clock().now_ms(), max_clock_lead_ms,
                                            std::max(lease_ttl_ms_, nm.ttl_ms), &implausible))) {
                    refuse("the key \"" + nkey + "\", the mark of the node that held it, holds \"" +
                           printable(kvs[0].value, 60) + "\", which shardid never writes");
                    return;
                }
                node_mark = nm.end_ms;
                const bool own_node =
                    confirmed(nm.token) || (nm.released && nm.token != 0 && nm.token == restart_token_);
                wait = coord::takeover_wait_ms(true, nm, own_node, lease_ttl_ms_);
            }
        }
        if (!coord::shard_floor(m, node_mark, &floor)) {
            refuse("the key \"" + mkey + "\" says node id " + std::to_string(m.holder) +
                   " held it, whose mark is gone: nothing bounds the IDs it issued; remove the key once that "
                   "node's IDs are past");
            return;
        }
        // After a clean release, above the previous holder's word itself, in
        // the same tick (a coarse layout need not wait for its next tick);
        // otherwise above the floor's tick.
        const int64_t tick = layout.tick_of(floor);
        if (m.released && m.word != 0 && int64_t(layout.packed_tick(m.word)) == tick)
            target = m.word;
        else if (floor > 0 && tick >= 0)
            target = layout.pack(uint64_t(tick), layout.sequence_max());
    }
    // The mark this claim writes covers every ID this node issued with the
    // value so far too (its slot), whatever node id it held then.
    const coord::ShardMark mine{std::max(floor, slot_last_ms(slot)), claim_token_, claimed_, false, target};
    etcd::Txn c;
    const std::vector<etcd::Compare> compare =
        has_holder
            ? std::vector<etcd::Compare>{{etcd::Compare::Target::lease, ckey, 0, lease_}}
            : std::vector<etcd::Compare>{{etcd::Compare::Target::create, ckey, 0, ""},
                                         {etcd::Compare::Target::mod, mkey, has_mark ? mark.mod_revision : 0, ""}};
    if (!client_.txn(etcd::encode_txn(compare,
                                      {{true, ckey, coord::holder_value(this_node()), lease_},
                                       {true, mkey, coord::shard_mark_value(mine), ""}},
                                      {}),
                     &c, &why)) {
        failed("could not claim " + what, why);
        return;
    }
    answered();
    if (!c.succeeded)
        return;  // taken meanwhile, or its mark moved: read again next round
    if (target != 0)
        raise_last(const_cast<SlotState&>(slot.state), target);
    e.floor_ms.store(floor);
    e.since_ms.store(wall_clock().now_ms());
    e.used_ms.store(wall_clock().now_ms());
    set_note(e, "");
    if (wait > 0) {
        values_[size_t(i)].publish_after_ms = fence_clock_ms() + wait;
        e.state.store(int(ClaimState::taking_over), std::memory_order_release);
        ereport(LOG, (errmsg("shardid coordinator: %s was not released by its previous holder: waiting %.1f s for "
                             "its fence before the first ID",
                             what.c_str(), double(wait) / 1000)));
        return;
    }
    e.generation.fetch_add(1, std::memory_order_acq_rel);
    e.state.store(int(ClaimState::held), std::memory_order_release);
    ConditionVariableBroadcast(&coord_shared().changed);
}

bool Holder::release_shard(int i)
{
    ShardClaim& e = shard_claims()->entries[i];
    const uint64_t key = e.key.load();
    const Slot& slot = shared->slots[claim_slot(key)];
    const int64_t value = claim_value(key);
    // No ID with the value from here on: a generation that steps the slot
    // after the read below sees the new generation and returns nothing (the
    // fences pair with the one in the etcd source's confirm()).
    e.state.store(int(ClaimState::releasing), std::memory_order_seq_cst);
    e.generation.fetch_add(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::string space = coord::space_name(slot.shape);
    const std::string ckey = coord::shard_key(prefix_, space, value),
                      mkey = coord::shard_mark_key(prefix_, space, value);
    const uint64_t word = slot.state.last.load(std::memory_order_seq_cst);
    const coord::ShardMark last{std::max(e.floor_ms.load(), slot_last_ms(slot)), claim_token_, claimed_, true, word};
    std::string why;
    etcd::Txn t;
    if (!client_.txn(etcd::encode_txn({{etcd::Compare::Target::lease, ckey, 0, lease_}},
                                      {{true, mkey, coord::shard_mark_value(last), ""}, {false, ckey, "", "", true}},
                                      {}),
                     &t, &why)) {
        failed("could not release " + describe(slot, value), why);
        return false;
    }
    answered();
    free_entry(e);
    ConditionVariableBroadcast(&coord_shared().changed);
    return true;
}

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
        if (key == 0 || state == ClaimState::free || state == ClaimState::busy || state == ClaimState::refused)
            continue;
        const Slot& slot = shared->slots[claim_slot(key)];
        const std::string ckey = coord::shard_key(prefix_, coord::space_name(slot.shape), claim_value(key));
        wanted.push_back(ckey);
        if (state == ClaimState::wanted || state == ClaimState::releasing ||
            std::binary_search(keys.begin(), keys.end(), ckey))
            continue;
        e.state.store(int(ClaimState::wanted), std::memory_order_seq_cst);
        e.generation.fetch_add(1, std::memory_order_seq_cst);
        const std::string note = "the key \"" + ckey + "\" is no longer held by lease " + lease_ +
                                 " (deleted or rewritten by hand): IDs with " + describe(slot, claim_value(key)) +
                                 " stopped";
        set_note(e, note);
        error(Condition::corrupt_key, note);
        ereport(WARNING, (errmsg("shardid coordinator: %s", note.c_str())));
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
}

void Holder::lose_values()
{
    ShardClaims* t = shard_claims();
    if (t == nullptr)
        return;
    for (int i = 0; i < t->size; i++) {
        ShardClaim& e = t->entries[i];
        const auto state = ClaimState(e.state.load());
        if (state == ClaimState::held || state == ClaimState::taking_over || state == ClaimState::releasing) {
            e.generation.fetch_add(1, std::memory_order_seq_cst);
            e.state.store(int(ClaimState::wanted), std::memory_order_seq_cst);
        }
    }
}

}  // namespace shardid::pg
