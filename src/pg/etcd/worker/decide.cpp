// One shard value's claim decided from what etcd holds of it
// (src/pg/etcd/worker/claims.cpp reads and commits claims in batches; the
// rules: src/core/etcd/shard_values.hpp): above every ID a previous holder
// issued with it, or not now (held elsewhere, refused, ahead of the clock).
#include <algorithm>
#include <climits>
#include <string>

#include "core/etcd/continuity.hpp"
#include "core/etcd/shard_values.hpp"
#include "core/text.hpp"
#include "pg/etcd/worker/values.hpp"
#include "pg/base/settings.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/etcd/shard_claims.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

// One value's claim decided from what etcd holds of it, above every ID a
// previous holder issued with it; false when it is not claimed now (held
// elsewhere, refused, ahead of the clock: its state and note say so).
bool ShardValues::decide_claim(int i, const ValueRead& v, const etcd::KeyValue* retired, int64_t now, int64_t reach,
                               const NodeMarkFn& node_mark, Plan* p)
{
    ShardClaim& e = shard_claims()->entries[i];
    const uint64_t key = e.key.load();
    const Slot& slot = shared->slots[claim_slot(key)];
    const Layout layout = slot.shape.layout(slot.name);
    const int64_t value = claim_value(key);
    const std::string space = etcd::space_name(slot.shape), what = describe(slot, value);
    const std::string& ckey = p->ckey;
    const std::string mkey = etcd::shard_mark_key(prefix_, space, value),
                      rkey = etcd::shard_retired_key(prefix_, space),
                      wkey = etcd::shard_want_key(prefix_, space, value);
    // A node that wants a value as its own id (its node id, which another
    // node holds as an explicit shard) says so under its lease
    // (shardwant/S/V): the holder gives it back, and no node takes it as an
    // explicit shard meanwhile (every claim compares the key too).
    const bool own_want = e.own_id.load() && value == node_.claimed();
    std::string why;
    const auto to_state = [&](ClaimState s, const char* verb, const std::string& note) {
        if (e.state.load() != int(s))
            ereport(LOG, (errmsg("shardid coordinator: %s %s: %s", what.c_str(), verb, note.c_str())));
        set_note(e, note);
        e.state.store(int(s), std::memory_order_release);
        return false;
    };
    const auto refuse = [&](const std::string& note) { return to_state(ClaimState::refused, "is not used", note); };
    if (v.has_want && v.want.lease != session_.lease() && !v.has_holder)
        return to_state(ClaimState::busy, "is reserved",
                        "The node at " + etcd::describe_holder(v.want.value) + " (node id " + std::to_string(value) +
                            ", whose own value it is)");
    uint64_t retired_word = 0;
    if (retired != nullptr && !etcd::parse_retired(retired->value, &retired_word))
        return refuse("the key \"" + rkey + "\" holds \"" + printable(retired->value, 60) +
                      "\", which is not a word shardid writes; remove it once no node issues this layout's shards");
    etcd::ShardMark m;
    if (v.has_mark && !etcd::parse_shard_mark(v.mark.value, INT_MAX, &m))
        return refuse("the key \"" + mkey + "\" holds \"" + printable(v.mark.value, 60) +
                      "\", which is not a mark shardid writes; remove it once no node issues this shard");
    if (v.has_holder && v.holder.lease != session_.lease()) {
        // Another node's (or a key edited by hand: it never expires).
        if (v.holder.lease.empty())
            return refuse("the key \"" + ckey +
                          "\" has no lease, and shardid writes claims only under one; remove it once no node "
                          "issues this shard");
        if (own_want && !(v.has_want && v.want.lease == session_.lease())) {
            // This node's own id, held by another node as an explicit
            // shard: ask for it back.
            etcd::Txn w;
            if (!session_.txn({}, {{true, wkey, etcd::holder_value(this_node()), session_.lease()}}, {}, &w, &why)) {
                session_.failed("could not ask for " + what + " back", why);
                return false;
            }
            session_.answered();
        }
        return to_state(
            ClaimState::busy, "is held by another node",
            "The node at " + etcd::describe_holder(v.holder.value) +
                (v.has_mark && !m.released ? " (node id " + std::to_string(m.holder) + ")" : std::string()));
    }
    // The word a mark carries lies within the floor it was written with,
    // and a bound only where the layout keeps one (anything else no holder
    // writes); every mark, this node's own or not, lies within what a
    // holder could have written.
    if (v.has_mark && m.word != 0 &&
        (layout.tick_of(m.floor_ms) < 0 || layout.packed_tick(m.word) > uint64_t(layout.tick_of(m.floor_ms))))
        return refuse("the key \"" + mkey + "\" holds \"" + printable(v.mark.value, 60) +
                      "\", whose word lies beyond its floor: not a mark shardid writes");
    if (v.has_mark && m.bound != 0 &&
        (!etcd::keeps_bound(slot.shape) || layout.tick_of(m.floor_ms) < 0 ||
         layout.packed_tick(m.bound) > uint64_t(layout.tick_of(m.floor_ms))))
        return refuse("the key \"" + mkey + "\" holds \"" + printable(v.mark.value, 60) +
                      "\", whose bound lies beyond its floor or in a layout that keeps none: not a mark shardid "
                      "writes");
    std::string implausible;
    if (v.has_mark && !etcd::mark_plausible(m.floor_ms, now, max_clock_lead_ms, session_.lease_ttl_ms(), &implausible))
        return refuse("the key \"" + mkey + "\" holds a mark no holder could have written: " + implausible);
    if (!v.has_mark && retired_word != 0 &&
        !etcd::mark_plausible(layout.ms_of_tick(int64_t(layout.packed_tick(retired_word))), now, max_clock_lead_ms,
                              session_.lease_ttl_ms(), &implausible))
        return refuse("the key \"" + rkey + "\" holds a word no holder could have written: " + implausible);
    // What the slot must continue above, as the layout's word (0: nothing):
    // every ID any previous holder issued with the value lies below it. The
    // mark this claim writes carries it, so that a claim of this node whose
    // raise did not survive raises again. This node's own mark only by its
    // token: one of this life's claims, which etcd confirmed.
    int64_t floor = 0, wait = 0;
    uint64_t target = 0;
    // A mark written before the history (a history made anew after etcd
    // went back, or after the key was deleted by hand): etcd may hold it as
    // it was before its holders' later IDs (a restored snapshot), so it
    // bounds nothing alone, and is nobody's own.
    const bool stale = v.has_mark && etcd::before_history(v.mark.mod_revision, history_.created());
    if ((!v.has_mark || stale) && history_.settling()) {
        // etcd forgot its mark, or rolled it back, maybe: not claimed until
        // the history settled, by when every node that issued with it under
        // what etcd forgot has stopped and published its layout's word in
        // the retired word (a claim decided earlier could read the word
        // before that).
        set_note(e, "etcd's history under the prefix settles (a new prefix, or etcd lost its data or went back): "
                    "claimed once every node that may still issue under what etcd forgot has stopped");
        return false;
    }
    if (!v.has_mark || stale) {
        // Never held, or its mark was folded into the space's retired word
        // when its last holder gave it back for idleness, or etcd forgot it:
        // above the retired word, and a layout with long ticks above the
        // tick in which etcd's history settled (a previous holder under what
        // etcd forgot may have used any sequence of it: etcd::History).
        target = retired_word;
        const int64_t tick = history_.settled_ms() > 0 ? layout.tick_of(history_.settled_ms()) : -1;
        if (tick >= 0 && etcd::keeps_bound(slot.shape))
            target = std::max(
                target, layout.pack(std::min<uint64_t>(uint64_t(tick), layout.time_max()), layout.sequence_max()));
        if (stale) {
            // And above what the old mark says its holder issued, whoever
            // that was (a restored mark names this node's own claims too).
            const int64_t mark_tick = layout.tick_of(m.floor_ms);
            target = std::max(
                {target, m.word, m.bound, mark_tick > 0 ? layout.pack(uint64_t(mark_tick), layout.sequence_max()) : 0});
            floor = m.floor_ms;
            // A mark its holder did not release says nothing of the IDs it
            // issued after its claim (a layout of short ticks keeps no
            // bound): its node mark bounds them, as for a mark of this
            // history. A holder that restarted since has no slot of the
            // layout to re-publish its word from (the nemesis, seed
            // 20261125: an Instagram ID 147 ms below a previous holder's).
            if (!m.released && m.holder >= 0) {
                etcd::Mark nm;
                bool bad = false;
                if (!node_mark(m.holder, &nm, &bad))
                    return false;
                const int64_t node_tick = !bad && nm.end_ms >= 0 ? layout.tick_of(nm.end_ms) : -1;
                if (node_tick >= 0) {
                    target = std::max(target, layout.pack(std::min<uint64_t>(uint64_t(node_tick), layout.time_max()),
                                                          layout.sequence_max()));
                    floor = std::max(floor, nm.end_ms);
                }
            }
        }
    } else if (node_.confirmed(m.token)) {
        target = m.word;
        floor = m.floor_ms;
    } else if (!m.released && m.bound != 0) {
        // Its holder issued no word above the bound, and can record no other
        // now (it writes bounds only under its claim, which is gone, and the
        // claim fails if the mark moved since it was read): at once, above it.
        floor = m.floor_ms;
        target = std::max(m.word, m.bound);
    } else {
        int64_t node_mark_ms = -1;
        if (!m.released && m.holder == node_.claimed()) {
            // Under the id this node holds: its claim raised every slot above
            // the id's mark and waited out the previous holder's fence.
            node_mark_ms = node_.floor_ms();
        } else if (!m.released) {
            // Its holder did not release it: its node mark bounds its IDs.
            etcd::Mark nm;
            bool bad = false;
            if (!node_mark(m.holder, &nm, &bad))
                return false;
            if (bad)
                return refuse("the key \"" + etcd::mark_key(prefix_, m.holder) +
                              "\", the mark of the node that held it, holds what shardid never writes");
            if (nm.end_ms >= 0) {
                node_mark_ms = nm.end_ms;
                const bool own_node =
                    node_.confirmed(nm.token) || (nm.released && nm.token != 0 && nm.token == node_.restart_token());
                wait = etcd::takeover_wait_ms(true, nm, own_node, session_.lease_ttl_ms());
            }
        }
        if (!etcd::shard_floor(m, node_mark_ms, &floor))
            return refuse("the key \"" + mkey + "\" says node id " + std::to_string(m.holder) +
                          " held it, whose mark is gone: nothing bounds the IDs it issued; remove the key once "
                          "that node's IDs are past");
        // After a clean release, above the previous holder's word itself, in
        // its tick; otherwise above the floor's tick.
        const int64_t tick = layout.tick_of(floor);
        if (m.released && m.word != 0)
            target = m.word;
        else if (floor > 0 && tick >= 0)
            target = layout.pack(uint64_t(tick), layout.sequence_max());
    }
    // No raise beyond shardid.max_clock_lead (retried: the clock may catch
    // up with a holder whose clock ran ahead).
    const int64_t target_ms = target != 0 ? layout.ms_of_tick(int64_t(layout.packed_tick(target))) : 0;
    if (target != 0 && target_ms - now > max_clock_lead_ms)
        return to_state(ClaimState::ahead, "is not used yet",
                        "the previous holder's IDs lie " + std::to_string((target_ms - now) / 1000) +
                            " s ahead of this node's clock; shardid.max_clock_lead is " +
                            std::to_string(max_clock_lead_ms / 1000) + " s");
    // The mark this claim writes covers every ID this node issued with the
    // value so far too (its slot); a coarse layout's, a bound above the next
    // words and as far as the fence (its floor reaches the bound's tick).
    // Its floor reaches the word it carries too, as every reader checks.
    const uint64_t bound =
        etcd::keeps_bound(slot.shape)
            ? etcd::bound_target(slot.shape, std::max(target, slot.state.last.load()), now, max_clock_lead_ms, reach)
            : 0;
    const int64_t bound_ms = bound != 0 ? layout.ms_of_tick(int64_t(layout.packed_tick(bound))) : 0;
    p->target = target;
    p->bound = bound;
    p->floor = floor;
    p->mark_floor = std::max({floor, slot_last_ms(slot), bound_ms, target_ms});
    p->wait = wait;
    return true;
}

}  // namespace shardid::pg
