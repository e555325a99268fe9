// The holder of this node's claim in etcd: the coordinator worker's loop
// (src/pg/etcd/worker/holder.cpp), made of its jobs, each in its own part:
//  - the session (session.hpp): requests, the lease, the witness, reports;
//  - etcd's history under the prefix (history.hpp);
//  - the cluster's counters and call-number key (counters.hpp);
//  - the node id's claim, its mark and window (node_claim.hpp);
//  - the shard values (values.hpp).
// The holder runs them in turn, passes on what one learns that all must
// hear of (HolderEvents), and publishes the state shardid_coordination()
// shows. Only the worker process uses it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "pg/etcd/worker/cluster_counters.hpp"
#include "pg/etcd/worker/history.hpp"
#include "pg/etcd/worker/node_claim.hpp"
#include "pg/etcd/worker/session.hpp"
#include "pg/etcd/worker/values.hpp"

namespace shardid::pg {

class Holder final : private HolderEvents {
public:
    Holder(etcd::Config config, ClaimSettings settings)
        : session_(std::move(config), std::move(settings), *this), history_(session_), counters_(session_, history_),
          node_(session_, history_, counters_, *this), values_(session_, history_, node_, *this)
    {}

    // The loop of the worker process, until it is asked to stop; then the
    // claim is released (src/pg/etcd/worker/start.cpp starts it).
    void run();

private:
    // One round: serve counters, keep the lease, claim, move the window,
    // confirm and serve the shard values.
    void step();

    void lease_granted(const etcd::Header& granted) override;
    void lease_renewed(int64_t fence_ms) override;
    void renewal_late() override;
    void fence_passed(const std::string& why) override;
    void lose_claim(const std::string& why) override;
    void went_back(const std::string& why) override;
    void publish_state() override;

    // Fence clock: IDs are issued until the lease's fence or the values',
    // whichever comes first.
    int64_t issuing_until_ms() const { return std::min(session_.fence_ms(), values_.until_ms()); }
    // When renewals became late (the `expiring` period's start): never
    // before they were last seen on time, never after now.
    int64_t expiring_from_ms(int64_t now) const;

    Session session_;
    PrefixHistory history_;
    ClusterCounters counters_;
    NodeIdClaim node_;
    ShardValues values_;
    bool renewed_ = false;  // the lease was renewed in this step: confirm the values held under it
    // Fence clock: when publish_state() last found the node holding its id,
    // and renewals on time (the periods counted in shardid_coordination()
    // began no earlier).
    int64_t seen_held_ms_ = 0;
    int64_t seen_on_time_ms_ = 0;
};

}  // namespace shardid::pg
