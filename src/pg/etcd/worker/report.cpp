// The holder's reports (src/pg/etcd/worker/holder.hpp): what it tells
// shared memory for shardid_coordination() and generators (the state, the
// lease, the last error, the counters since start) and the server log (a
// line when a condition starts and one when it ends). The steps against
// etcd that report: src/pg/etcd/worker/holder.cpp.
#include <algorithm>
#include <cstring>
#include <string>

#include "core/etcd/rules.hpp"
#include "pg/etcd/worker/holder.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/shmem.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/state/shared.hpp"

extern "C" {
#include "access/xlog.h"
#include "storage/spin.h"
}

namespace shardid::pg {

namespace {

const char* const condition_words[] = {
    "etcd unreachable",     "etcd refused this node's credentials", "the node id refused",
    "a key edited by hand", "the shard values held unconfirmed",    "etcd's history gone back (the new history made)"};
static_assert(std::size(condition_words) == size_t(Condition::count), "a word for every condition");

}  // namespace

void Holder::error(Condition kind, const std::string& why)
{
    EtcdShared& c = etcd_shared();
    SpinLockAcquire(&c.mutex);
    strlcpy(c.last_error, why.c_str(), sizeof c.last_error);
    last_error_kind_ = int(kind);
    strlcpy(c.endpoint, client_.endpoint().c_str(), sizeof c.endpoint);
    c.requests = client_.requests();
    c.errors++;
    SpinLockRelease(&c.mutex);
    // A line when the condition starts, not one every retry.
    if (episodes_[int(kind)].fail(wall_clock().now_ms(), last_answer_ms_))
        ereport(LOG, (errmsg("shardid coordinator: %s", why.c_str())));
}

void Holder::failed(const std::string& what, const std::string& why)
{
    // A request refused because etcd's history went back was reported as
    // that (went_back()): not an etcd that does not answer.
    if (history_failure_)
        return;
    const Condition kind =
        client_.last_failure() == etcd::Failure::unauthorized ? Condition::unauthorized : Condition::unreachable;
    error(kind, what + ": " + why);
}

void Holder::ended(Condition kind)
{
    etcd::Episode& e = episodes_[int(kind)];
    // A condition that ended takes its words out of last_error: what is
    // left there is what still holds.
    if (e.active() && last_error_kind_ == int(kind)) {
        EtcdShared& c = etcd_shared();
        SpinLockAcquire(&c.mutex);
        c.last_error[0] = '\0';
        SpinLockRelease(&c.mutex);
        last_error_kind_ = -1;
    }
    if (!e.ok(wall_clock().now_ms()))
        return;
    const int64_t more = e.unreported();
    ereport(LOG,
            (errmsg("shardid coordinator: %s for %.1f s, %lld request%s failed%s", condition_words[int(kind)],
                    double(e.lasted_ms()) / 1000, (long long)e.failures(), e.failures() == 1 ? "" : "s",
                    more ? psprintf(" (and %lld shorter episodes before, without lines of their own)", (long long)more)
                         : "")));
}

void Holder::answered()
{
    last_answer_ms_ = wall_clock().now_ms();
    ended(Condition::unreachable);
    ended(Condition::unauthorized);
}

void Holder::publish_lease()
{
    EtcdShared& c = etcd_shared();
    c.fence_ms.store(fence_ms_, std::memory_order_release);
    SpinLockAcquire(&c.mutex);
    strlcpy(c.lease_id, lease_.c_str(), sizeof c.lease_id);
    c.lease_ttl_s = lease_ttl_ms_ / 1000;
    c.last_ok_ms = wall_clock().now_ms();
    SpinLockRelease(&c.mutex);
}

int64_t Holder::expiring_from_ms(int64_t now) const
{
    return std::clamp(etcd::renewal_late_from_ms(issuing_until_ms(), lease_ttl_ms_), seen_on_time_ms_, now);
}

// A renewal etcd answered after it was due: counted, and an episode of
// `expiring` that publish_state() did not see (the request blocked the
// loop meanwhile) begins when renewals became late. publish_state() ends
// it: the renewal's fence counts from when the request was sent, so after
// a long block the state can stay `expiring` until the next renewal, and
// that is the same episode (ending it here made publish_state() count a
// second one for one etcd pause).
void Holder::note_late_renewal()
{
    const int64_t now = fence_clock_ms();
    EtcdShared& c = etcd_shared();
    SpinLockAcquire(&c.mutex);
    c.renewals_late++;
    if (c.expiring_since == 0) {
        c.expiring_episodes++;
        c.expiring_since = expiring_from_ms(now);
    }
    SpinLockRelease(&c.mutex);
}

// The state shardid_coordination() shows (docs/coordination.md, "States").
void Holder::publish_state()
{
    const char* state;
    if (RecoveryInProgress())
        state = "standby";  // standbys never claim; they claim once promoted
    else if (taking_over_)
        state = settling_ ? "settling" : "taking over";
    else if (held_ >= 0)
        // The lease's fence, or the values' (a renewal whose check could not
        // be made confirms nothing): late renewals or checks first show as
        // `expiring`, a fence passed as `unconfirmed`.
        state = fence_clock_ms() >= values_until_ms_                                       ? "unconfirmed"
                : etcd::renewal_late(issuing_until_ms() - fence_clock_ms(), lease_ttl_ms_) ? "expiring"
                : corrupt_                                                                 ? "refused"
                                                                                           : "held";
    else if (episodes_[int(Condition::unauthorized)].active())
        state = "unauthorized";
    else if (waiting_)
        state = "waiting";
    else if (refused_)
        state = "refused";
    else
        state = "claiming";
    EtcdShared& c = etcd_shared();
    const int64_t now = fence_clock_ms();
    // Periods without a node id (a primary's only) and of `expiring`, for
    // the cumulative counters of shardid_coordination(). A request to etcd
    // blocks this loop for up to its timeout, so a period is taken to begin
    // when it began at the latest (the fence; the moment renewals became
    // late), not when the worker looked again.
    const bool not_held = held_ < 0 && !RecoveryInProgress();
    const bool expiring = strcmp(state, "expiring") == 0;
    const bool unconfirmed = strcmp(state, "unconfirmed") == 0;
    if (seen_held_ms_ == 0)
        seen_held_ms_ = seen_on_time_ms_ = now;  // the worker's start
    SpinLockAcquire(&c.mutex);
    if (not_held && c.not_held_since == 0) {
        c.not_held_since = std::clamp(fence_ms_, seen_held_ms_, now);
        // Values that ran out before the claim was lost, unseen (the worker
        // blocked in a request meanwhile): `unconfirmed` from then on.
        if (c.unconfirmed_since == 0 && values_until_ms_ < c.not_held_since)
            c.unconfirmed_since = std::clamp(values_until_ms_, seen_held_ms_, c.not_held_since);
    } else if (!not_held && c.not_held_since != 0) {
        c.not_held_ms += now - c.not_held_since;
        c.not_held_since = 0;
    }
    // A period of a held id (`unconfirmed`, `expiring`) that ends with the
    // claim lost ends where the period without an id begins, not when the
    // worker looked again: the time between is counted once, as not held.
    const int64_t held_end = not_held ? c.not_held_since : now;
    if (unconfirmed && c.unconfirmed_since == 0) {
        c.unconfirmed_since = std::clamp(values_until_ms_, seen_held_ms_, now);
    } else if (!unconfirmed && c.unconfirmed_since != 0) {
        c.unconfirmed_ms += std::max<int64_t>(held_end - c.unconfirmed_since, 0);
        c.unconfirmed_since = 0;
    }
    if (expiring && c.expiring_since == 0) {
        c.expiring_since = expiring_from_ms(now);
        c.expiring_episodes++;
    } else if (!expiring && c.expiring_since != 0) {
        c.expiring_ms += std::max<int64_t>(held_end - c.expiring_since, 0);
        c.expiring_since = 0;
    }
    strlcpy(c.state, state, sizeof c.state);
    strlcpy(c.endpoint, client_.endpoint().c_str(), sizeof c.endpoint);
    // Held until the fence at most: a publish from a worker that was
    // blocked past it (a request timing out) must not move the start of
    // the period without an id after the fence.
    if (!not_held)
        seen_held_ms_ = std::min(now, fence_ms_);
    if (!expiring)
        seen_on_time_ms_ = now;
    c.requests = client_.requests();
    SpinLockRelease(&c.mutex);
}

}  // namespace shardid::pg
