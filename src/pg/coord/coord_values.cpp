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
        release_shares_locked(&t, &e);
    }
    SpinLockRelease(&t.mutex);
}

}  // namespace

void set_note(ShardClaim& e, const std::string& note)
{
    ShardClaims& t = *shard_claims();
    SpinLockAcquire(&t.mutex);
    strlcpy(e.note, note.c_str(), sizeof e.note);
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
        case ClaimState::ahead:
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
        case ClaimState::held: {
            // Idle: no ID for shard_idle_release, and no backend that could
            // still be waiting for its next tick with it (hold_claim()).
            const Slot& slot = shared->slots[claim_slot(e.key.load())];
            if (!e.own_id.load() && in_budget &&
                wall_clock().now_ms() - e.used_ms.load() > idle_ms + std::max<int64_t>(slot.shape.unit_ms, 0))
                release_shard(i, true);
            else if (e.bound.load() != UINT64_MAX && (in_budget || e.bound_need.load() > e.bound.load()))
                move_bound(i);
            break;
        }
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
                      mkey = coord::shard_mark_key(prefix_, space, value),
                      rkey = coord::shard_retired_key(prefix_, space);
    // A node that wants a value as its own id (its node id, which another
    // node holds as an explicit shard) says so under its lease
    // (shardwant/S/V): the holder gives it back, and no node takes it as an
    // explicit shard meanwhile (the claim below compares the key too).
    const bool own_want = e.own_id.load() && value == claimed_;
    const std::string wkey = coord::shard_want_key(prefix_, space, value);
    std::string why;
    etcd::Txn r;
    const std::vector<etcd::Op> reads{
        {false, ckey, "", ""}, {false, mkey, "", ""}, {false, rkey, "", ""}, {false, wkey, "", ""}};
    if (!client_.txn(etcd::encode_txn({}, reads, {}), &r, &why)) {
        failed("could not read the claim of " + what, why);
        return;
    }
    answered();
    etcd::KeyValue holder, mark, want, retired;
    bool has_holder = false, has_mark = false, has_want = false, has_retired = false;
    for (const etcd::KeyValue& kv : r.kvs) {
        if (kv.key == ckey)
            holder = kv, has_holder = true;
        else if (kv.key == mkey)
            mark = kv, has_mark = true;
        else if (kv.key == wkey)
            want = kv, has_want = true;
        else if (kv.key == rkey)
            retired = kv, has_retired = true;
    }
    if (has_want && want.lease != lease_ && !has_holder) {
        const std::string note = "The node at " + coord::describe_holder(want.value) + " (node id " +
                                 std::to_string(value) + ", whose own value it is)";
        if (e.state.load() != int(ClaimState::busy))
            ereport(LOG, (errmsg("shardid coordinator: %s is reserved: %s", what.c_str(), note.c_str())));
        set_note(e, note);
        e.state.store(int(ClaimState::busy), std::memory_order_release);
        return;
    }
    const auto refuse = [&](const std::string& note) {
        if (e.state.load() != int(ClaimState::refused))
            ereport(LOG, (errmsg("shardid coordinator: %s is not used: %s", what.c_str(), note.c_str())));
        set_note(e, note);
        e.state.store(int(ClaimState::refused), std::memory_order_release);
    };
    uint64_t retired_word = 0;
    if (has_retired && !coord::parse_retired(retired.value, &retired_word)) {
        refuse("the key \"" + rkey + "\" holds \"" + printable(retired.value, 60) +
               "\", which is not a word shardid writes; remove it once no node issues this layout's shards");
        return;
    }
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
            if (own_want && !(has_want && want.lease == lease_)) {
                // This node's own id, held by another node as an explicit
                // shard: ask for it back.
                etcd::Txn w;
                if (!client_.txn(etcd::encode_txn({}, {{true, wkey, coord::holder_value(this_node()), lease_}}, {}), &w,
                                 &why)) {
                    failed("could not ask for " + what + " back", why);
                    return;
                }
                answered();
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
    // A bound only where the layout keeps one, within the floor like the word.
    if (has_mark && m.bound != 0 &&
        (!coord::keeps_bound(slot.shape) || layout.tick_of(m.floor_ms) < 0 ||
         layout.packed_tick(m.bound) > uint64_t(layout.tick_of(m.floor_ms)))) {
        refuse("the key \"" + mkey + "\" holds \"" + printable(mark.value, 60) +
               "\", whose bound lies beyond its floor or in a layout that keeps none: not a mark shardid writes");
        return;
    }
    // Every mark, this node's own or not, lies within what a holder could
    // have written.
    std::string implausible;
    if (has_mark &&
        !coord::mark_plausible(m.floor_ms, wall_clock().now_ms(), max_clock_lead_ms, lease_ttl_ms_, &implausible)) {
        refuse("the key \"" + mkey + "\" holds a mark no holder could have written: " + implausible);
        return;
    }
    // This node's own mark only by its token: one of this life's claims,
    // which etcd confirmed (an answer lost, or the node id changed under
    // the lease). A mark that merely names the node id this node holds may
    // be a previous life's, another holder's of the id, or written by hand.
    if (!has_mark && retired_word != 0 &&
        !coord::mark_plausible(layout.ms_of_tick(int64_t(layout.packed_tick(retired_word))), wall_clock().now_ms(),
                               max_clock_lead_ms, lease_ttl_ms_, &implausible)) {
        refuse("the key \"" + rkey + "\" holds a word no holder could have written: " + implausible);
        return;
    }
    const bool own = has_mark && confirmed(m.token);
    if (!has_mark) {
        // Never held, or its mark was folded into the space's retired word
        // when its last holder gave it back for idleness.
        target = retired_word;
    } else if (own) {
        target = m.word;
        floor = m.floor_ms;
    } else if (has_mark && !m.released && m.bound != 0) {
        // Its holder issued no word above the bound, and can record no
        // other now (it writes bounds only under its claim, which is gone,
        // and the claim below fails if the mark moved since it was read):
        // continue above it at once, in its tick.
        floor = m.floor_ms;
        target = std::max(m.word, m.bound);
    } else if (has_mark) {
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
        // its tick (a coarse layout need not wait for its next tick): the
        // word is its slot's at the release, above every ID it issued, in
        // whatever tick its floor lies; otherwise above the floor's tick.
        const int64_t tick = layout.tick_of(floor);
        if (m.released && m.word != 0)
            target = m.word;
        else if (floor > 0 && tick >= 0)
            target = layout.pack(uint64_t(tick), layout.sequence_max());
    }
    // No raise beyond shardid.max_clock_lead: the slot would go on in the
    // target's tick however far ahead of the clock (retried: the clock may
    // catch up with a holder whose clock ran ahead).
    const int64_t now = wall_clock().now_ms();
    if (target != 0 && layout.ms_of_tick(int64_t(layout.packed_tick(target))) - now > max_clock_lead_ms) {
        const std::string note = "the previous holder's IDs lie " +
                                 std::to_string((layout.ms_of_tick(int64_t(layout.packed_tick(target))) - now) / 1000) +
                                 " s ahead of this node's clock; shardid.max_clock_lead is " +
                                 std::to_string(max_clock_lead_ms / 1000) + " s";
        if (e.state.load() != int(ClaimState::ahead))
            ereport(LOG, (errmsg("shardid coordinator: %s is not used yet: %s", what.c_str(), note.c_str())));
        set_note(e, note);
        e.state.store(int(ClaimState::ahead), std::memory_order_release);
        return;
    }
    // The mark this claim writes covers every ID this node issued with the
    // value so far too (its slot), whatever node id it held then; a coarse
    // layout's, a bound above the next words (its floor reaches the bound's
    // tick). Its floor reaches the word it carries too, as every reader
    // checks: a retired word another node folded in may lie ahead of this
    // node's slot (a mark with its word beyond its floor was refused as
    // edited by hand, by every node, until its holder gave it back).
    const uint64_t bound =
        coord::keeps_bound(slot.shape)
            ? coord::bound_target(slot.shape, std::max(target, slot.state.last.load()), now, max_clock_lead_ms)
            : 0;
    const int64_t bound_ms = bound != 0 ? layout.ms_of_tick(int64_t(layout.packed_tick(bound))) : 0;
    const int64_t target_ms = target != 0 ? layout.ms_of_tick(int64_t(layout.packed_tick(target))) : 0;
    const coord::ShardMark mine{
        std::max({floor, slot_last_ms(slot), bound_ms, target_ms}), claim_token_, claimed_, false, target, bound};
    etcd::Txn c;
    std::vector<etcd::Compare> compare =
        has_holder
            ? std::vector<etcd::Compare>{{etcd::Compare::Target::lease, ckey, 0, lease_}}
            : std::vector<etcd::Compare>{{etcd::Compare::Target::create, ckey, 0, ""},
                                         {etcd::Compare::Target::mod, mkey, has_mark ? mark.mod_revision : 0, ""}};
    if (!has_want)
        compare.push_back({etcd::Compare::Target::create, wkey, 0, ""});
    // A mark claimed, given back and folded in since the read moved the
    // retired word: read again.
    if (!has_holder)
        compare.push_back({etcd::Compare::Target::mod, rkey, has_retired ? retired.mod_revision : 0, ""});
    std::vector<etcd::Op> puts{{true, ckey, coord::holder_value(this_node()), lease_},
                               {true, mkey, coord::shard_mark_value(mine), ""}};
    if (has_want && want.lease == lease_)
        puts.push_back({false, wkey, "", "", true});  // this node's own ask, answered
    if (!client_.txn(etcd::encode_txn(compare, puts, {}), &c, &why)) {
        failed("could not claim " + what, why);
        return;
    }
    answered();
    if (!c.succeeded)
        return;  // taken meanwhile, or its mark moved: read again next round
    if (target != 0)
        raise_last(const_cast<SlotState&>(slot.state), target);
    e.raised.store(target);
    e.bound_need.store(0);
    e.bound.store(coord::keeps_bound(slot.shape) ? bound : UINT64_MAX, std::memory_order_seq_cst);
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

bool Holder::release_shard(int i, bool retire)
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
    // Given back for idleness: the mark is deleted and its word folded into
    // the space's retired word (one try; a retired word moved meanwhile by
    // another node leaves a released mark, as a release by hand does).
    if (retire) {
        const std::string rkey = coord::shard_retired_key(prefix_, space);
        std::vector<etcd::KeyValue> kvs;
        uint64_t retired = 0;
        if (!client_.range(rkey, "", &kvs, &why)) {
            failed("could not read \"" + rkey + "\"", why);
            return false;
        }
        answered();
        if (kvs.empty() || coord::parse_retired(kvs[0].value, &retired)) {
            if (!client_.txn(
                    etcd::encode_txn({{etcd::Compare::Target::lease, ckey, 0, lease_},
                                      {etcd::Compare::Target::mod, rkey, kvs.empty() ? 0 : kvs[0].mod_revision, ""}},
                                     {{true, rkey, std::to_string(std::max(retired, word)), ""},
                                      {false, mkey, "", "", true},
                                      {false, ckey, "", "", true}},
                                     {}),
                    &t, &why)) {
                failed("could not release " + describe(slot, value), why);
                return false;
            }
            answered();
            if (t.succeeded) {
                free_entry(e);
                ConditionVariableBroadcast(&coord_shared().changed);
                return true;
            }
        }
    }
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
