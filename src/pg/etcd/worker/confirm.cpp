// The coordinator keeps what it holds confirmed (src/pg/etcd/worker/values.cpp
// claims and releases): with every renewal of the lease, the shard keys it
// holds are re-checked (the rules: src/core/etcd/recheck.hpp); a coarse
// layout's bound moves ahead of its IDs.
#include <algorithm>
#include <string>

#include "core/etcd/shard_values.hpp"
#include "core/text.hpp"
#include "pg/etcd/worker/values.hpp"
#include "pg/base/settings.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/etcd/shard_claims.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

namespace {

// Keys of one page of a listing that replaces a watch whose history etcd
// compacted: small pages, each well under any answer's limit.
constexpr int64_t listing_page = 1000;

}  // namespace

// Values are issued only until the fence of the last renewal a check
// confirmed (or of the grant: a new lease holds nothing yet). A holder
// whose key was deleted after that check so stops at that fence at the
// latest, which a node claiming the value meanwhile waits out
// (etcd::takeover_wait_ms()), and which lies below the window it recorded
// after that renewal (its claim starts above that window).
void ShardValues::confirmed_until(int64_t fence_ms)
{
    values_until_ms_ = fence_ms;
    etcd_shared().values_until_ms.store(fence_ms, std::memory_order_release);
    ConditionVariableBroadcast(&etcd_shared().changed);
}

void ShardValues::lease_granted(const etcd::Header& granted)
{
    // Nothing is held under a new lease yet: its keys are all written
    // after the grant, and re-checked from its revision on.
    held_keys_.reset(granted.cluster_id, granted.revision);
    renewal_fence_ms_ = session_.fence_ms();
    confirmed_until(session_.fence_ms());
}

// The check itself: this node's ping (the witness's write: a history that
// lost this node's last write refuses it), then the watch from the last
// revision checked up to it; a listing of the watched range instead when
// etcd compacted that history, or when the watch cannot be read (a message
// longer than any shardid key explains, a timeout). False (why) when it
// could not be made: nothing is confirmed.
bool ShardValues::recheck(std::string* why, bool* start_over)
{
    *start_over = false;
    // The ping also confirms the node key held (its window is not always
    // due for a renewal: a floor far ahead keeps it so for a while), and
    // reads the history: a history changed meanwhile is read again before
    // the next claim, and one whose TTL is below what this node knows is
    // raised (PrefixHistory::ensure()).
    etcd::Txn ping;
    const std::string pkey = etcd::ping_key(prefix_, session_.lease()), hkey = etcd::history_key(prefix_),
                      nkey = node_.claimed() >= 0 ? etcd::node_key(prefix_, node_.claimed()) : std::string();
    std::vector<etcd::Op> reads{{false, hkey, "", ""}};
    if (!nkey.empty())
        reads.push_back({false, nkey, "", ""});
    if (!session_.txn({}, reads, {}, &ping, why, true)) {
        *why = "could not write \"" + pkey + "\": " + *why;
        return false;
    }
    session_.answered();
    const etcd::KeyValue* node = nullptr;
    const etcd::KeyValue* history = nullptr;
    for (const etcd::KeyValue& kv : ping.kvs)
        (kv.key == hkey ? history : node) = &kv;
    history_.saw(history);
    if (!nkey.empty() && (node == nullptr || node->lease != session_.lease()))
        events_.lose_claim("the key \"" + nkey + "\" is no longer held by lease " + session_.lease());
    if (!held_keys_.begin(ping.header.cluster_id, ping.header.revision, why)) {
        // Not the etcd this lease's keys were written to (replaced, or
        // restored from an older snapshot): nothing of it can be confirmed.
        *start_over = true;
        return false;
    }
    std::vector<int> lost;
    bool compacted = false;
    const etcd::Client::WatchSink sink = [&](const etcd::WatchMessage& m, std::string* w) {
        switch (held_keys_.feed(m, &lost, w)) {
        case etcd::HeldKeys::Step::more: return etcd::Client::WatchStep::more;
        case etcd::HeldKeys::Step::done: return etcd::Client::WatchStep::done;
        case etcd::HeldKeys::Step::compacted: compacted = true; return etcd::Client::WatchStep::done;
        default: return etcd::Client::WatchStep::failed;
        }
    };
    const int64_t from = held_keys_.checked() + 1;
    std::string watch_why;
    bool checked = true;
    const bool watched = session_.client().watch(
        etcd::encode_watch(etcd::watched_key(prefix_), etcd::watched_end(prefix_), from), sink, &watch_why);
    if (watched && !compacted) {
        session_.answered();
        watch_failed_ = false;
    } else {
        // etcd no longer has the changes since the last check, or the watch
        // could not be read: list every key of the range, keys only, in
        // pages at one revision, and compare. What the watch judged before
        // it failed stands (values it found lost are stopped below).
        const bool transport = !watched && session_.client().last_failure() == etcd::Failure::transport;
        int64_t foreign = 0;
        std::string example;
        if (!list_held(&lost, &foreign, &example, why)) {
            *why = (watched ? "could not list \"" + etcd::watched_key(prefix_) + "\" after etcd compacted its history"
                            : "could not watch \"" + etcd::watched_key(prefix_) + "\" from revision " +
                                  std::to_string(from) + " (" + watch_why + "), nor list it instead") +
                   ": " + *why;
            checked = false;
        } else if (compacted)
            ereport(LOG,
                    (errmsg("shardid coordinator: etcd compacted its history past revision %lld: the %zu shard "
                            "keys held were checked by a listing of \"%s\" instead",
                            (long long)from, held_keys_.size() + lost.size(), etcd::watched_key(prefix_).c_str())));
        else if (!watch_failed_)
            // Once per episode: the cause, and what makes it go away.
            ereport(LOG,
                    (errmsg("shardid coordinator: the watch of \"%s\" from revision %lld could not be read: %s; the "
                            "%zu shard keys held were checked by a listing of keys instead%s",
                            etcd::watched_key(prefix_).c_str(), (long long)from, watch_why.c_str(),
                            held_keys_.size() + lost.size(),
                            foreign > 0 ? psprintf("; %lld keys there are not shardid's (such as \"%s\")",
                                                   (long long)foreign, printable(example, 80).c_str())
                                        : ""),
                     errhint("%s", foreign > 0 || watch_why.find(" MiB") != std::string::npos
                                       ? "Every key shardid writes under the prefix is under 300 bytes: remove the "
                                         "keys under it that shardid does not write (they make every node's watch "
                                         "long)."
                                   : transport ? "etcd answered the listing but not the watch in time: a slow etcd, "
                                                 "or many changes under the prefix."
                                               : "An answer that is not etcd's: see the endpoint's proxy, if any.")));
        watch_failed_ = !watched && checked;
    }
    ShardClaims* t = shard_claims();
    for (int i : lost) {
        ShardClaim& e = t->entries[i];
        const uint64_t key = e.key.load();
        const auto state = ClaimState(e.state.load());
        if (key == 0 || state == ClaimState::free || state == ClaimState::releasing)
            continue;
        const Slot& slot = shared->slots[claim_slot(key)];
        const std::string ckey = etcd::shard_key(prefix_, etcd::space_name(slot.shape), claim_value(key));
        stop_value(i, "the key \"" + ckey + "\" is no longer held by lease " + session_.lease() +
                          " (deleted or rewritten by hand, or with the prefix): IDs with " +
                          describe(slot, claim_value(key)) + " stopped");
    }
    return checked;
}

// Every key of the watched range, keys only, in pages at one revision: the
// keys this lease holds are compared with what this node wrote
// (etcd::HeldKeys::full()), and the keys shardid never writes counted
// (*foreign, the first in *example). False (why) when it cannot be made,
// or etcd listed a revision before one checked already.
bool ShardValues::list_held(std::vector<int>* lost, int64_t* foreign, std::string* example, std::string* why)
{
    std::vector<etcd::KeyValue> mine;
    std::string from = etcd::watched_key(prefix_);
    int64_t at = 0;
    for (;;) {
        etcd::RangePage page;
        if (!session_.client().range_page(
                etcd::encode_range_page(from, etcd::watched_end(prefix_), listing_page, at, true), &page, why))
            return false;
        if (!session_.observe(page.header)) {
            *why = "etcd's history went back";
            return false;
        }
        session_.answered();
        if (at == 0)
            at = page.header.revision;
        for (etcd::KeyValue& kv : page.kvs) {
            if (!etcd::shardid_key(prefix_, kv.key) && (*foreign)++ == 0)
                *example = kv.key;
            if (kv.lease == session_.lease())
                mine.push_back(kv);
        }
        if (!page.more || page.kvs.empty())
            break;
        from = page.kvs.back().key + std::string(1, '\0');
    }
    if (at < held_keys_.checked()) {
        *why = "etcd listed \"" + etcd::watched_key(prefix_) + "\" at revision " + std::to_string(at) +
               ", before revision " + std::to_string(held_keys_.checked()) + " checked already";
        return false;
    }
    held_keys_.full(mine, session_.lease(), at, lost);
    return true;
}

// With every renewal of the lease: the shard keys held are re-checked
// (recheck()). A key deleted or rewritten after this node wrote it stops
// its value at once (its generators wait, and the coordinator claims it
// again if nobody else has); a check that cannot be made (etcd slow or
// gone, an answer that is not etcd's, a message too long) confirms
// nothing, so every value stops at the fence of the last renewal a check
// confirmed: shardid_coordination() shows `expiring`, then `unconfirmed`,
// and last_error says why, before generators fail; never a log line while
// IDs go on. Then the keys this node no longer uses are deleted, and values
// other nodes want back as their own ids are given back.
void ShardValues::confirm()
{
    if (shard_claims() == nullptr)
        return;
    std::string why;
    bool start_over = false;
    if (!recheck(&why, &start_over)) {
        EtcdShared& c = etcd_shared();
        SpinLockAcquire(&c.mutex);
        c.rechecks_failed++;
        SpinLockRelease(&c.mutex);
        // A condition of its own, whatever failed: it lasts until a check
        // succeeds (etcd may answer every other request meanwhile: a
        // renewal came before it), and last_error says why until then.
        // Nothing is confirmed.
        const std::string what = "the shard values this node holds could not be re-confirmed (they stop at the "
                                 "fence of the last renewal confirmed)";
        if (!session_.history_failed())
            session_.error(Condition::unconfirmed, what + ": " + why);
        if (start_over)
            events_.went_back(why);  // its keys are not in this etcd: a new history
        return;
    }
    session_.ended(Condition::unconfirmed);
    confirmed_until(renewal_fence_ms_);
    forget_unused_keys();
    give_way();
}

// A shard key under the lease whose value this node no longer uses (given
// up at a fence, then forgotten after an etcd outage the lease outlived)
// is deleted: no other node waits for a value nobody uses. Its mark stays
// unreleased, so the next holder still waits for this node's window.
void ShardValues::forget_unused_keys()
{
    ShardClaims* t = shard_claims();
    std::vector<std::string> unused;
    for (const auto& [k, held] : held_keys_.keys()) {
        const ShardClaim& e = t->entries[held.first];
        const uint64_t key = e.key.load(std::memory_order_acquire);
        const auto state = ClaimState(e.state.load(std::memory_order_acquire));
        bool used = key != 0 && state != ClaimState::free && state != ClaimState::busy &&
                    state != ClaimState::refused && state != ClaimState::ahead;
        if (used) {
            const Slot& slot = shared->slots[claim_slot(key)];
            used = etcd::shard_key(prefix_, etcd::space_name(slot.shape), claim_value(key)) == k;
        }
        if (!used)
            unused.push_back(k);
    }
    for (const std::string& k : unused) {
        etcd::Txn d;
        std::string why;
        if (!session_.txn({{etcd::Compare::Target::lease, k, 0, session_.lease()}}, {{false, k, "", "", true}}, {}, &d,
                          &why)) {
            session_.failed("could not delete \"" + k + "\", a claim this node no longer uses", why);
            return;
        }
        session_.answered();
        held_keys_.erase(k);
        if (d.succeeded)
            ereport(LOG, (errmsg("shardid coordinator: deleted \"%s\": a claim of lease %s whose value this node no "
                                 "longer uses",
                                 k.c_str(), session_.lease().c_str())));
    }
}

// A value held as an explicit shard that another node wants back as its
// own id (its shardwant/ key: it claimed that node id meanwhile, and its
// defaults need the value) is given back. One read of those keys per
// renewal, only while explicit values are held: what it returns grows with
// the values wanted back, not with those held.
void ShardValues::give_way()
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
    if (!session_.client().range(prefix_ + "/shardwant/", etcd::prefix_end(prefix_ + "/shardwant"), &kvs, &why)) {
        session_.failed("could not list the shard values other nodes want back", why);
        return;
    }
    session_.answered();
    for (const etcd::KeyValue& kv : kvs) {
        if (kv.lease == session_.lease())
            continue;
        // shardwant/S/V names the claim shard/S/V.
        const std::string ckey = prefix_ + "/shard/" + kv.key.substr(std::min(kv.key.size(), prefix_.size() + 11));
        const int i = held_keys_.index_of(ckey);
        if (i < 0)
            continue;
        ShardClaim& e = t->entries[i];
        const uint64_t key = e.key.load();
        if (key == 0 || e.state.load() != int(ClaimState::held) || e.own_id.load())
            continue;
        const Slot& slot = shared->slots[claim_slot(key)];
        ereport(LOG, (errmsg("shardid coordinator: giving %s back: the node holding node id %lld wants it as its "
                             "own value",
                             describe(slot, claim_value(key)).c_str(), (long long)claim_value(key))));
        release_shard(i);
    }
}

// A value whose key is no longer this node's: no ID with it from here on
// (its generators wait, and it is claimed again if nobody else has).
void ShardValues::stop_value(int i, const std::string& note)
{
    ShardClaim& e = shard_claims()->entries[i];
    e.state.store(int(ClaimState::wanted), std::memory_order_seq_cst);
    bump_generation(shard_claims(), e);
    set_note(e, note);
    const uint64_t key = e.key.load();
    if (key != 0) {
        const Slot& slot = shared->slots[claim_slot(key)];
        held_keys_.erase(etcd::shard_key(prefix_, etcd::space_name(slot.shape), claim_value(key)));
    }
    session_.error(Condition::corrupt_key, note);
    ereport(WARNING, (errmsg("shardid coordinator: %s", note.c_str())));
}

// Coarse layouts' bounds (etcd::keeps_bound()) move ahead of the words
// their generators reach, before they reach them, and as far as the fence
// (etcd::bound_due()), only under this node's claim: a key no longer this
// lease's stops the value. One transaction for up to batch_max_ values.
void ShardValues::move_bounds(std::vector<int>& due)
{
    ShardClaims* t = shard_claims();
    const int64_t now = wall_clock().now_ms(),
                  reach = now + std::max<int64_t>(session_.fence_ms() - fence_clock_ms(), 0);
    struct Move {
        int i;
        uint64_t next;
        std::string ckey;
    };
    std::vector<Move> moves;
    std::vector<etcd::Compare> compare;
    std::vector<etcd::Op> puts;
    // One transaction; `succeeded` false when one key of it is no longer
    // this lease's. False when etcd did not answer (reported).
    const auto commit = [&](const std::vector<etcd::Compare>& cmp, const std::vector<etcd::Op>& ops, bool* succeeded) {
        etcd::Txn r;
        std::string why;
        if (!session_.txn(cmp, ops, {}, &r, &why)) {
            session_.failed("could not move the bounds of " + std::to_string(ops.size()) + " shard values", why);
            return false;
        }
        session_.answered();
        *succeeded = r.succeeded;
        return true;
    };
    const auto moved = [&](const Move& m, bool succeeded) {
        if (succeeded) {
            t->entries[m.i].bound.store(m.next, std::memory_order_seq_cst);
            return;
        }
        const ShardClaim& e = t->entries[m.i];
        const Slot& slot = shared->slots[claim_slot(e.key.load())];
        stop_value(m.i, "the key \"" + m.ckey + "\" is no longer held by lease " + session_.lease() +
                            " (deleted or rewritten by hand): IDs with " + describe(slot, claim_value(e.key.load())) +
                            " stopped");
    };
    const auto send = [&]() -> bool {
        if (moves.empty())
            return true;
        bool ok = false;
        if (!commit(compare, puts, &ok))
            return false;
        if (ok || moves.size() == 1) {
            for (const Move& m : moves)
                moved(m, ok);
        } else {
            // One of them is no longer this lease's: each alone, to find it.
            for (size_t k = 0; k < moves.size(); k++) {
                bool one = false;
                if (!commit({compare[k]}, {puts[k]}, &one))
                    return false;
                moved(moves[k], one);
            }
        }
        ConditionVariableBroadcast(&etcd_shared().changed);
        moves.clear(), compare.clear(), puts.clear();
        return true;
    };
    for (int i : due) {
        ShardClaim& e = t->entries[i];
        const uint64_t key = e.key.load();
        if (key == 0 || e.state.load() != int(ClaimState::held))
            continue;
        const Slot& slot = shared->slots[claim_slot(key)];
        const uint64_t bound = e.bound.load();
        const uint64_t need = std::max(e.bound_need.load(), slot.state.last.load(std::memory_order_seq_cst));
        if (bound == UINT64_MAX || !etcd::bound_due(slot.shape, bound, need, now, max_clock_lead_ms, reach))
            continue;
        const uint64_t next = etcd::bound_target(slot.shape, need, now, max_clock_lead_ms, reach);
        if (next <= bound)
            continue;
        const std::string ckey = etcd::shard_key(prefix_, etcd::space_name(slot.shape), claim_value(key));
        moves.push_back({i, next, ckey});
        compare.push_back({etcd::Compare::Target::lease, ckey, 0, session_.lease()});
        puts.push_back(puts_for(i, next));
        if (moves.size() >= batch_max_ && !send())
            return;
    }
    send();
}

// The put of value i's mark with a new bound.
etcd::Op ShardValues::puts_for(int i, uint64_t next)
{
    const ShardClaim& e = shard_claims()->entries[i];
    const uint64_t key = e.key.load();
    const Slot& slot = shared->slots[claim_slot(key)];
    const Layout layout = slot.shape.layout(slot.name);
    const int64_t floor =
        std::max({e.floor_ms.load(), slot_last_ms(slot), layout.ms_of_tick(int64_t(layout.packed_tick(next)))});
    const etcd::ShardMark mark{floor, node_.claim_token(), node_.claimed(), false, e.raised.load(), next};
    return {true, etcd::shard_mark_key(prefix_, etcd::space_name(slot.shape), claim_value(key)),
            etcd::shard_mark_value(mark), ""};
}

}  // namespace shardid::pg
