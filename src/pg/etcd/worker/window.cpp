// The window of the node id held (docs/coordination.md, "What is
// guaranteed"): recorded in etcd under the claim, moved after each renewal
// and as generators need, lowered to what was issued at a clean release
// (the claim itself: src/pg/etcd/worker/node_claim.cpp).
#include <algorithm>
#include <string>

#include "pg/etcd/worker/node_claim.hpp"
#include "pg/base/settings.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

// Records `end` as the window's end of `id` in etcd, only while this
// node's lease holds the id; false (and the claim given up, when the lease
// no longer holds it) otherwise.
bool NodeIdClaim::record_window(int id, int64_t end, uint64_t token, bool released)
{
    const std::string node = etcd::node_key(prefix_, id), mark = etcd::mark_key(prefix_, id);
    std::string why;
    etcd::Txn t;
    const std::string value = etcd::mark_value({end, token, session_.lease_ttl_ms(), released});
    if (!session_.txn({{etcd::Compare::Target::lease, node, 0, session_.lease()}}, {{true, mark, value, ""}}, {}, &t,
                      &why)) {
        session_.failed("could not record the window of node id " + std::to_string(id), why);
        return false;
    }
    session_.answered();
    if (!t.succeeded) {
        events_.lose_claim("the key \"" + node + "\" is no longer held by lease " + session_.lease());
        return false;
    }
    if (!released && std::find(confirmed_tokens_.begin(), confirmed_tokens_.end(), token) == confirmed_tokens_.end()) {
        if (confirmed_tokens_.size() >= 64)
            confirmed_tokens_.erase(confirmed_tokens_.begin());
        confirmed_tokens_.push_back(token);
    }
    return true;
}

void NodeIdClaim::renew_window()
{
    EtcdShared& c = etcd_shared();
    const int64_t need = c.need_ms.load();
    const int64_t now = wall_clock().now_ms();
    const int64_t fence_left = session_.fence_ms() - fence_clock_ms();
    if (!etcd::window_due(now, fence_left, recorded_ms_, need))
        return;
    const int64_t end = etcd::window_target(now, fence_left, session_.lease_ttl_ms(), need, floor_ms_, recorded_ms_);
    if (!record_window(held_, end, claim_token_))
        return;
    recorded_ms_ = end;
    seen_marks_[held_] = std::max(seen_marks_[held_], end);
    c.window_end_ms.store(end, std::memory_order_release);
    int64_t expected = need;
    if (need < end)
        c.need_ms.compare_exchange_strong(expected, -1);
    ConditionVariableBroadcast(&c.changed);
}

void NodeIdClaim::release()
{
    EtcdShared& c = etcd_shared();
    const bool was_held = held_ >= 0;
    c.held.store(-1, std::memory_order_release);
    c.generation.fetch_add(1, std::memory_order_seq_cst);
    if (session_.lease().empty())
        return;
    // Courtesies, not needed for safety: a shutdown waits for them at most
    // etcd::release_budget_ms, whatever the endpoints do.
    session_.client().set_abortable(false);
    session_.client().set_budget_ms(etcd::release_budget_ms);
    session_.client().set_timeout_ms(std::min(etcd::release_timeout_ms, session_.client().timeout_ms()));
    std::string why;
    if (was_held) {
        // A clean stop lowers the mark to what was issued (never below the
        // mark this claim started above), so the next holder does not lead
        // its clock by the window, and marks it released with a new token,
        // which the node state records at the postmaster's clean exit
        // (src/pg/state/persist.cpp): a restart that finds it in etcd resumes
        // without raising its layouts (read_mark()). Every ID returned under
        // the claim is in the slots now: a generation that steps a slot
        // after this read sees the new generation and returns nothing (the
        // fence pairs with the engine's seq_cst step and the etcd source's
        // seq_cst loads in confirm()).
        std::atomic_thread_fence(std::memory_order_seq_cst);
        const int64_t issued = std::min(std::max(floor_ms_, highest_issued_tick_ms()), recorded_ms_);
        const uint64_t token = new_token();
        if (record_window(claimed_, issued, token, true)) {
            shared->release_token.store(int64_t(token));
            ereport(LOG, (errmsg("shardid coordinator: released the mark of node id %d at %lld, the last tick issued",
                                 claimed_, (long long)issued)));
        }
    }
    // Revoking deletes the node key at once: the id is free for another
    // node, which starts above the mark this one recorded.
    if (!session_.client().revoke(session_.lease(), &why))
        ereport(LOG,
                (errmsg("shardid coordinator: could not revoke lease %s: %s", session_.lease().c_str(), why.c_str())));
    else if (claimed_ >= 0)
        ereport(LOG, (errmsg("shardid coordinator: released node id %d", claimed_)));
}

}  // namespace shardid::pg
