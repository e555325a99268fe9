// The holder (src/pg/etcd/worker/holder.hpp): the coordinator worker's
// loop, which runs the jobs against etcd in turn, passes on what one of
// them learns that all must hear of, and publishes the state
// shardid_coordination() shows and the counters of its periods.
#include <algorithm>
#include <cstring>
#include <string>

#include "pg/etcd/worker/holder.hpp"
#include "pg/base/fence_clock.hpp"
#include "pg/base/wait_event.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/state/shared.hpp"

extern "C" {
#include "access/xlog.h"
#include "miscadmin.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/guc.h"
}

namespace shardid::pg {

namespace {

uint32 worker_event = 0;  // the worker's wait event between steps

}  // namespace

void Holder::step()
{
    counters_.serve();
    if (!session_.keep_lease())
        return;
    // etcd's history, known before anything is claimed or taken (a
    // transaction that compared it and failed reads it again here). A
    // history that cannot be read, or holds what shardid never writes,
    // stops new claims only: what this node holds goes on while its keys
    // re-check fine.
    const bool history = history_.ensure();
    // Under a new history (etcd lost its data, or went back), the counters
    // are raised to this node's floors at once, whether or not it holds a
    // node id (one whose id another node took meanwhile still used its
    // values), before the history settles: no node takes a counter value
    // before then (ClusterCounters::serve()).
    if (history)
        counters_.follow_history(history_.token());
    if (history && node_.held() < 0)
        node_.claim();
    // And once per claim.
    if (history)
        node_.raise_counters();
    if (node_.held() >= 0)
        node_.renew_window();
    // After each renewal, what the node holds under the lease is checked
    // again (whether or not the node id is held just now: values wait for
    // it, and are issued only while confirmed).
    if (renewed_ && !session_.lease().empty())
        values_.confirm();
    if (node_.held() >= 0)
        values_.serve();
    renewed_ = false;
}

// The worker's loop (src/pg/etcd/worker/start.cpp starts it): a step
// against etcd, the state published, a wait; until SIGTERM.
void Holder::run()
{
    node_.start(uint64_t(shared->release_token.load()));
    while (!ShutdownRequestPending) {
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
            values_.redeclare();  // shards no longer declared stop at once, whatever etcd does
        }
        if (!RecoveryInProgress()) {
            try {
                step();
            } catch (const std::exception& e) {
                session_.error(Condition::unreachable, std::string("unexpected failure: ") + e.what());
            }
            session_.round_done();
        }
        publish_state();
        const int rc = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                                 node_.held() >= 0 || RecoveryInProgress() ? 100 : 250,
                                 wait_event("ShardidCoordinator", &worker_event));
        if (rc & WL_LATCH_SET)
            ResetLatch(MyLatch);
    }
    node_.release();
    SpinLockAcquire(&etcd_shared().mutex);
    strlcpy(etcd_shared().state, "stopped", sizeof etcd_shared().state);
    SpinLockRelease(&etcd_shared().mutex);
}

// etcd's history went back on this node (why): every ID stops, the lease is
// given up (revoked, so that the keys the old history holds under it again
// are deleted), and the history this node was under is distrusted: the next
// read of it makes it anew (PrefixHistory::ensure()).
void Holder::went_back(const std::string& why)
{
    history_.went_back();
    session_.error(Condition::went_back, "etcd's history under the prefix went back: " + why +
                                             ": every ID stopped; the history is made anew, and nothing without a "
                                             "mark, or marked before it, is claimed until it settles");
    lose_claim("etcd's history went back");
    session_.drop_lease();
}

void Holder::lose_claim(const std::string& why)
{
    node_.lose(why);
    history_.reread();  // read again before the next claim: etcd may have lost it
    values_.lose();
}

void Holder::fence_passed(const std::string& why)
{
    if (node_.claimed() >= 0)
        lose_claim(why);
}

void Holder::lease_granted(const etcd::Header& granted)
{
    history_.learn_fleet_ttl(0);
    values_.lease_granted(granted);
}

void Holder::lease_renewed(int64_t fence_ms)
{
    renewed_ = true;
    values_.lease_renewed(fence_ms);  // what the check after it confirms values up to
}

int64_t Holder::expiring_from_ms(int64_t now) const
{
    return std::clamp(etcd::renewal_late_from_ms(issuing_until_ms(), session_.lease_ttl_ms()), seen_on_time_ms_, now);
}

// A renewal etcd answered after it was due: counted, and an episode of
// `expiring` that publish_state() did not see (the request blocked the
// loop meanwhile) begins when renewals became late. publish_state() ends
// it: the renewal's fence counts from when the request was sent, so after
// a long block the state can stay `expiring` until the next renewal, and
// that is the same episode (ending it here made publish_state() count a
// second one for one etcd pause).
void Holder::renewal_late()
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
    else if (node_.taking_over())
        state = node_.settling() ? "settling" : "taking over";
    else if (node_.held() >= 0)
        // The lease's fence, or the values' (a renewal whose check could not
        // be made confirms nothing): late renewals or checks first show as
        // `expiring`, a fence passed as `unconfirmed`.
        state = fence_clock_ms() >= values_.until_ms()                                               ? "unconfirmed"
                : etcd::renewal_late(issuing_until_ms() - fence_clock_ms(), session_.lease_ttl_ms()) ? "expiring"
                : counters_.corrupt()                                                                ? "refused"
                                                                                                     : "held";
    else if (session_.active(Condition::unauthorized))
        state = "unauthorized";
    else if (node_.waiting())
        state = "waiting";
    else if (node_.refused())
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
    const bool not_held = node_.held() < 0 && !RecoveryInProgress();
    const bool expiring = strcmp(state, "expiring") == 0;
    const bool unconfirmed = strcmp(state, "unconfirmed") == 0;
    if (seen_held_ms_ == 0)
        seen_held_ms_ = seen_on_time_ms_ = now;  // the worker's start
    SpinLockAcquire(&c.mutex);
    if (not_held && c.not_held_since == 0) {
        c.not_held_since = std::clamp(session_.fence_ms(), seen_held_ms_, now);
        // Values that ran out before the claim was lost, unseen (the worker
        // blocked in a request meanwhile): `unconfirmed` from then on.
        if (c.unconfirmed_since == 0 && values_.until_ms() < c.not_held_since)
            c.unconfirmed_since = std::clamp(values_.until_ms(), seen_held_ms_, c.not_held_since);
    } else if (!not_held && c.not_held_since != 0) {
        c.not_held_ms += now - c.not_held_since;
        c.not_held_since = 0;
    }
    // A period of a held id (`unconfirmed`, `expiring`) that ends with the
    // claim lost ends where the period without an id begins, not when the
    // worker looked again: the time between is counted once, as not held.
    const int64_t held_end = not_held ? c.not_held_since : now;
    if (unconfirmed && c.unconfirmed_since == 0) {
        c.unconfirmed_since = std::clamp(values_.until_ms(), seen_held_ms_, now);
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
    strlcpy(c.endpoint, session_.client().endpoint().c_str(), sizeof c.endpoint);
    // Held until the fence at most: a publish from a worker that was
    // blocked past it (a request timing out) must not move the start of
    // the period without an id after the fence.
    if (!not_held)
        seen_held_ms_ = std::min(now, session_.fence_ms());
    if (!expiring)
        seen_on_time_ms_ = now;
    c.requests = session_.client().requests();
    SpinLockRelease(&c.mutex);
}

}  // namespace shardid::pg
