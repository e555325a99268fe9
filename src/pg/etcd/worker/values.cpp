// The coordinator's side of shard value claims (src/pg/etcd/shard_claims.hpp; the
// rules: src/core/etcd/shard_values.hpp): which values to claim (those
// generators wait for, and those shardid.shards declares; the claims
// themselves: src/pg/etcd/worker/claims.cpp); publish them; give back those
// idle for shardid.shard_idle_release, those a shardid_release_shard()
// asks for and those no longer declared; forget them all with the node id.
#include <algorithm>
#include <climits>
#include <string>

#include "core/etcd/shard_values.hpp"
#include "core/text.hpp"
#include "pg/base/settings.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/base/shard_declaration.hpp"
#include "pg/etcd/worker/values.hpp"
#include "pg/etcd/shard_claims.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

namespace {

// At most this long serving values in one round: the lease's renewal
// comes first.
constexpr int64_t serve_budget_ms = 200;
// A busy or refused value is asked for again this often (one that
// shardid.shards declares, every declared_retry_ms).
constexpr int64_t retry_every_ms = 100;
constexpr int64_t declared_retry_ms = 1000;
// A value released by hand is not claimed again by this node before this,
// so that a node waiting for it can take it.
constexpr int64_t handover_pause_ms = 1000;

// Back to free: nobody waits for it and this node does not hold it.
void free_entry(ShardClaim& e)
{
    ShardClaims& t = *shard_claims();
    SpinLockAcquire(&t.mutex);
    if (e.state.load() != int(ClaimState::free)) {
        claim_note(e)[0] = '\0';
        e.own_id.store(false);
        e.declared.store(false);
        e.undeclared.store(false);
        // The state first, then the generation and the epoch
        // (bump_generation()): a generator that saw the value held under
        // the old epoch sees the new one.
        e.state.store(int(ClaimState::free), std::memory_order_seq_cst);
        bump_generation(shard_claims(), e);
        release_shares_locked(&t, &e);
    }
    SpinLockRelease(&t.mutex);
}

}  // namespace

void set_note(ShardClaim& e, const std::string& note)
{
    ShardClaims& t = *shard_claims();
    SpinLockAcquire(&t.mutex);
    strlcpy(claim_note(e), note.c_str(), claim_note_size);
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

// One round over the table: claims those generators wait for (in
// batches), publishes values whose wait is over, gives back idle ones and
// those asked for, and moves coarse layouts' bounds, within a budget (the
// lease's renewal comes first; the rest is done next round).
void ShardValues::serve()
{
    ShardClaims* t = shard_claims();
    if (t == nullptr || node_.taking_over())
        return;
    if (work_.size() != size_t(t->size))
        work_.assign(size_t(t->size), ValueWork{});
    declare_values();
    const int64_t start = fence_clock_ms();
    const int64_t forgotten_ms = int64_t(etcd_wait_ms) + 1000;
    const int64_t idle_ms = int64_t(shard_idle_release_s) * 1000;
    std::vector<int> to_claim, bounds, undeclared;
    // Never claimed while shardid.shards, as this node last read it, does
    // not list it (a range moved away: backends whose statements began
    // before the reload still ask): refused at once instead.
    const std::vector<etcd::ShardRange>& declaration = shard_declaration().set;
    const auto outside = [&](const ShardClaim& e, uint64_t key) {
        return !e.own_id.load() && !declaration.empty() && !etcd::shard_set_contains(declaration, claim_value(key));
    };
    const auto refuse_undeclared = [&](ShardClaim& e) {
        set_note(e, "shardid.shards does not list it");
        e.state.store(int(ClaimState::undeclared), std::memory_order_release);
        ConditionVariableBroadcast(&etcd_shared().changed);
    };
    for (int i = 0; i < t->size && node_.held() >= 0; i++) {
        ShardClaim& e = t->entries[i];
        const uint64_t key = e.key.load(std::memory_order_acquire);
        if (key == 0)
            continue;
        ValueWork& w = work_[size_t(i)];
        const int64_t now = fence_clock_ms();
        const bool in_budget = now - start < serve_budget_ms;
        // A value shardid.shards declares is kept (and asked for) while it
        // does; the node's own id while the node id is.
        const bool declared = e.declared.load();
        const bool forgotten = !declared && now - e.wanted_ms.load() > forgotten_ms;
        switch (ClaimState(e.state.load(std::memory_order_acquire))) {
        case ClaimState::free: break;
        case ClaimState::wanted:
            if (forgotten)
                free_entry(e);
            else if (outside(e, key))
                refuse_undeclared(e);
            else if (now >= w.not_before_ms)
                to_claim.push_back(i);
            break;
        case ClaimState::undeclared:
            if (forgotten)
                free_entry(e);
            else if (!outside(e, key))
                e.state.store(int(ClaimState::wanted), std::memory_order_release);  // declared again
            break;
        case ClaimState::busy:
        case ClaimState::refused:
        case ClaimState::ahead:
            if (forgotten)
                free_entry(e);
            else if (outside(e, key))
                refuse_undeclared(e);
            else if (now >= w.next_try_ms) {
                // A declared value held elsewhere (a range moving here, its
                // old node not yet done) is asked for every second: a node
                // waiting for thousands must not read them all ten times
                // a second.
                w.next_try_ms = now + (declared ? declared_retry_ms : retry_every_ms);
                to_claim.push_back(i);
            }
            break;
        case ClaimState::taking_over:
            if (now >= w.publish_after_ms) {
                bump_generation(shard_claims(), e);
                e.state.store(int(ClaimState::held), std::memory_order_release);
                ConditionVariableBroadcast(&etcd_shared().changed);
            }
            break;
        case ClaimState::held: {
            // Idle: no ID for shard_idle_release, and no backend that could
            // still be waiting for its next tick with it (hold_claim()).
            const Slot& slot = shared->slots[claim_slot(key)];
            if (e.undeclared.load() && !e.own_id.load())
                undeclared.push_back(i);
            else if (!e.own_id.load() && !declared && in_budget &&
                     wall_clock().now_ms() - e.used_ms.load() > idle_ms + std::max<int64_t>(slot.shape.unit_ms, 0))
                release_shard(i, true);
            else if (e.bound.load() != UINT64_MAX && (in_budget || e.bound_need.load() > e.bound.load()))
                bounds.push_back(i);
            break;
        }
        case ClaimState::releasing:
            // No longer declared (stopped at the reload, redeclare()): given
            // back with the others, cleanly; never claimed again while so.
            if (e.undeclared.load() && !e.own_id.load())
                undeclared.push_back(i);
            else if (in_budget && release_shard(i))
                w.not_before_ms = now + handover_pause_ms;
            break;
        }
    }
    if (node_.held() >= 0 && !bounds.empty())
        move_bounds(bounds);
    if (node_.held() >= 0 && !undeclared.empty())
        release_batch(undeclared);
    if (node_.held() >= 0 && !to_claim.empty())
        claim_values(to_claim);
}

// shardid.shards in etcd mode (docs/coordination.md, "Instagram's model"):
// the values a node declares are its logical shards. Once an explicit
// shard of a claim space is used, every declared value of that space is
// asked for at once (claimed in batches) and kept, not given back for
// idleness; a value no longer declared after a reload (a range moved to
// another node) is given back cleanly, so that the node it moves to
// continues above its IDs.
// A new shardid.shards (a reload; called at once from the worker's loop,
// and from every round): values held no longer declared stop at once, in
// every backend, running statements included (their next ID sees the new
// generation and the entry refused), and go back cleanly in etcd
// (serve()); those still declared stay.
void ShardValues::redeclare()
{
    ShardClaims* t = shard_claims();
    if (t == nullptr)
        return;
    const ShardDeclaration& declaration = shard_declaration();
    if (declared_generation_ == declaration.generation)
        return;
    const std::vector<etcd::ShardRange>& declared = declaration.set;
    const bool first = declared_generation_ == 0;
    declared_generation_ = declaration.generation;
    declared_done_.assign(size_t(max_slots), 0);
    declared_full_ = false;
    int64_t stopped = 0;
    for (int i = 0; i < t->size; i++) {
        ShardClaim& e = t->entries[i];
        const uint64_t key = e.key.load();
        if (key == 0 || e.own_id.load())
            continue;
        const bool in = !declared.empty() && etcd::shard_set_contains(declared, claim_value(key));
        e.declared.store(in);
        e.undeclared.store(!declared.empty() && !in);
        const auto state = ClaimState(e.state.load());
        if (!declared.empty() && !in && (state == ClaimState::held || state == ClaimState::taking_over)) {
            // As release_shard() does: no ID with it from here on.
            e.state.store(int(ClaimState::releasing), std::memory_order_seq_cst);
            bump_generation(shard_claims(), e);
            stopped++;
        }
    }
    if (stopped > 0) {
        ConditionVariableBroadcast(&etcd_shared().changed);
        ereport(LOG, (errmsg("shardid coordinator: shardid.shards = '%s' no longer lists %lld shard values this node "
                             "held: they are no longer used, and are given back",
                             shards_setting ? shards_setting : "", (long long)stopped)));
    } else if (!first) {
        ereport(LOG, (errmsg("shardid coordinator: shardid.shards = '%s' read", shards_setting ? shards_setting : "")));
    }
}

void ShardValues::declare_values()
{
    ShardClaims* t = shard_claims();
    redeclare();
    const std::vector<etcd::ShardRange>& declared = shard_declaration().set;
    const int n_slots = shared->n_used.load(std::memory_order_acquire);
    if (declared.empty())
        return;
    // The spaces in which an explicit shard is in use.
    std::vector<char> used(size_t(max_slots), 0);
    for (int i = 0; i < t->size; i++) {
        const ShardClaim& e = t->entries[i];
        const uint64_t key = e.key.load(std::memory_order_acquire);
        if (key != 0 && !e.own_id.load() && e.state.load() != int(ClaimState::free))
            used[size_t(claim_slot(key))] = 1;
    }
    for (int s = 0; s < n_slots; s++) {
        if (!used[size_t(s)] || declared_done_[size_t(s)])
            continue;
        const Slot& slot = shared->slots[s];
        const int64_t max = int64_t(slot.shape.layout(slot.name).shard_max());
        int64_t asked = 0, refused = 0;
        for (const etcd::ShardRange& r : declared)
            for (int64_t v = r.lo; v <= std::min(r.hi, max); v++)
                (want_declared(s, uint64_t(v)) ? asked : refused)++;
        declared_done_[size_t(s)] = 1;
        if (refused > 0 && !declared_full_) {
            declared_full_ = true;
            ereport(LOG, (errmsg("shardid coordinator: %lld of the shards shardid.shards declares for layout %s do "
                                 "not fit this node's claim table (shardid.max_shard_claims = %d): they are claimed "
                                 "when used, if room is left",
                                 (long long)refused, slot.name, t->capacity)));
        }
        if (asked > 0)
            ereport(LOG, (errmsg("shardid coordinator: claiming the %lld shards shardid.shards declares for layout %s",
                                 (long long)asked, slot.name)));
    }
}

bool ShardValues::release_shard(int i, bool retire)
{
    ShardClaim& e = shard_claims()->entries[i];
    const uint64_t key = e.key.load();
    const Slot& slot = shared->slots[claim_slot(key)];
    const int64_t value = claim_value(key);
    // No ID with the value from here on: a generation that steps the slot
    // after the read below sees the new generation and returns nothing (the
    // fence pairs with the engine's seq_cst step and the etcd source's
    // seq_cst loads in confirm()).
    e.state.store(int(ClaimState::releasing), std::memory_order_seq_cst);
    bump_generation(shard_claims(), e);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const std::string space = etcd::space_name(slot.shape);
    const std::string ckey = etcd::shard_key(prefix_, space, value), mkey = etcd::shard_mark_key(prefix_, space, value);
    const uint64_t word = slot.state.last.load(std::memory_order_seq_cst);
    const etcd::ShardMark last{std::max(e.floor_ms.load(), slot_last_ms(slot)), node_.claim_token(), node_.claimed(),
                               true, word};
    std::string why;
    etcd::Txn t;
    // Given back for idleness: the mark is deleted and its word folded into
    // the space's retired word (one try; a retired word moved meanwhile by
    // another node leaves a released mark, as a release by hand does).
    if (retire) {
        const std::string rkey = etcd::shard_retired_key(prefix_, space);
        std::vector<etcd::KeyValue> kvs;
        uint64_t retired = 0;
        if (!session_.client().range(rkey, "", &kvs, &why)) {
            session_.failed("could not read \"" + rkey + "\"", why);
            return false;
        }
        session_.answered();
        if (kvs.empty() || etcd::parse_retired(kvs[0].value, &retired)) {
            if (!session_.txn({{etcd::Compare::Target::lease, ckey, 0, session_.lease()},
                               {etcd::Compare::Target::mod, rkey, kvs.empty() ? 0 : kvs[0].mod_revision, ""}},
                              {{true, rkey, std::to_string(std::max(retired, word)), ""},
                               {false, mkey, "", "", true},
                               {false, ckey, "", "", true}},
                              {}, &t, &why)) {
                session_.failed("could not release " + describe(slot, value), why);
                return false;
            }
            session_.answered();
            if (t.succeeded) {
                held_keys_.erase(ckey);
                free_entry(e);
                ConditionVariableBroadcast(&etcd_shared().changed);
                return true;
            }
        }
    }
    if (!session_.txn({{etcd::Compare::Target::lease, ckey, 0, session_.lease()}},
                      {{true, mkey, etcd::shard_mark_value(last), ""}, {false, ckey, "", "", true}}, {}, &t, &why)) {
        session_.failed("could not release " + describe(slot, value), why);
        return false;
    }
    session_.answered();
    held_keys_.erase(ckey);
    free_entry(e);
    ConditionVariableBroadcast(&etcd_shared().changed);
    return true;
}

// Values no longer declared (a range of logical shards moved to another
// node): each given back cleanly, its mark released with its layout's word
// (the next holder continues above it, in the same tick), up to
// batch_max_ in one transaction; one no longer this lease's goes alone.
void ShardValues::release_batch(const std::vector<int>& batch)
{
    ShardClaims* t = shard_claims();
    for (size_t at = 0; at < batch.size() && node_.held() >= 0; at += batch_max_) {
        const size_t n = std::min(batch_max_, batch.size() - at);
        std::vector<etcd::Compare> compare;
        std::vector<etcd::Op> ops;
        std::vector<std::string> keys;
        for (size_t k = at; k < at + n; k++) {
            ShardClaim& e = t->entries[batch[k]];
            const uint64_t key = e.key.load();
            const Slot& slot = shared->slots[claim_slot(key)];
            // No ID with the value from here on (as in release_shard()).
            e.state.store(int(ClaimState::releasing), std::memory_order_seq_cst);
            bump_generation(shard_claims(), e);
            std::atomic_thread_fence(std::memory_order_seq_cst);
            const std::string space = etcd::space_name(slot.shape);
            const std::string ckey = etcd::shard_key(prefix_, space, claim_value(key));
            const etcd::ShardMark last{std::max(e.floor_ms.load(), slot_last_ms(slot)), node_.claim_token(),
                                       node_.claimed(), true, slot.state.last.load(std::memory_order_seq_cst)};
            compare.push_back({etcd::Compare::Target::lease, ckey, 0, session_.lease()});
            ops.push_back(
                {true, etcd::shard_mark_key(prefix_, space, claim_value(key)), etcd::shard_mark_value(last), ""});
            ops.push_back({false, ckey, "", "", true});
            keys.push_back(ckey);
        }
        etcd::Txn r;
        std::string why;
        if (!session_.txn(compare, ops, {}, &r, &why)) {
            session_.failed("could not give back " + std::to_string(n) + " shard values no longer declared", why);
            return;  // each stays releasing: given back one by one next round
        }
        session_.answered();
        for (size_t k = at; k < at + n; k++) {
            if (r.succeeded) {
                held_keys_.erase(keys[k - at]);
                free_entry(t->entries[batch[k]]);
            } else {
                release_shard(batch[k]);
            }
        }
        ConditionVariableBroadcast(&etcd_shared().changed);
    }
}

void ShardValues::lose()
{
    ShardClaims* t = shard_claims();
    if (t == nullptr)
        return;
    for (int i = 0; i < t->size; i++) {
        ShardClaim& e = t->entries[i];
        const auto state = ClaimState(e.state.load());
        if (state == ClaimState::held || state == ClaimState::taking_over || state == ClaimState::releasing) {
            e.state.store(int(ClaimState::wanted), std::memory_order_seq_cst);
            bump_generation(shard_claims(), e);
        }
    }
}

}  // namespace shardid::pg
