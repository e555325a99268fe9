// This node's claim of its node id in etcd, as the coordinator worker keeps
// it (src/pg/etcd/worker/node_claim.cpp: the claim, the previous holder's
// mark, the wait for its fence; src/pg/etcd/worker/window.cpp: the window
// recorded above what is issued, and the release; the rules:
// src/core/etcd/rules.hpp). Only the worker process uses it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pg/etcd/worker/cluster_counters.hpp"
#include "pg/etcd/worker/history.hpp"
#include "pg/etcd/worker/session.hpp"

namespace shardid::pg {

class NodeIdClaim {
public:
    NodeIdClaim(Session& session, PrefixHistory& history, ClusterCounters& counters, HolderEvents& events)
        : session_(session), prefix_(session.prefix()), history_(history), counters_(counters), events_(events)
    {}

    // The release token the node state held at the worker's start (its last
    // clean release, 0: none).
    void start(uint64_t restart_token) { restart_token_ = restart_token; }
    // Claims an id (shardid.node_id, or the lowest free one), reads its
    // mark, waits out its previous holder's fence, and publishes it:
    // generators issue IDs under it from then on.
    void claim();
    // The counters raised to this node's floors, once per claim.
    void raise_counters();
    // Moves the window ahead of the clock and of what generators need.
    void renew_window();
    // The id is no longer this node's: generators stop (why logged).
    void lose(const std::string& why);
    // At the worker's stop: the mark lowered to what was issued, and the
    // lease revoked (the id free for another node at once).
    void release();

    int claimed() const { return claimed_; }  // the node key held in etcd (-1: none)
    int held() const { return held_; }        // published: IDs are issued under it (-1: none)
    uint64_t claim_token() const { return claim_token_; }
    // A token of this life's claims whose window etcd confirmed.
    bool confirmed(uint64_t token) const
    {
        return token != 0 &&
               std::find(confirmed_tokens_.begin(), confirmed_tokens_.end(), token) != confirmed_tokens_.end();
    }
    uint64_t restart_token() const { return restart_token_; }
    int64_t floor_ms() const { return floor_ms_; }
    bool taking_over() const { return taking_over_; }
    bool settling() const { return settling_; }
    bool refused() const { return refused_; }
    bool waiting() const { return waiting_; }

private:
    bool take_id(int id);
    bool read_mark();
    bool record_window(int id, int64_t end, uint64_t token, bool released = false);

    Session& session_;
    const std::string& prefix_;  // shardid.etcd_prefix
    PrefixHistory& history_;
    ClusterCounters& counters_;
    HolderEvents& events_;
    int claimed_ = -1;
    int last_id_ = -1;              // the id claimed last (node_id -1: preferred when free)
    bool refused_ = false;          // the last claim was refused: the id is another node's, or its mark unreadable
    bool waiting_ = false;          // the id is held by this node's own previous lease: wait until it expires
    bool counters_raised_ = false;  // the counters in etcd are at least this node's floors, since the claim
    int held_ = -1;
    int64_t floor_ms_ = 0;
    int64_t recorded_ms_ = 0;            // the window end last recorded in etcd
    std::map<int, int64_t> seen_marks_;  // the highest mark seen per id (each checked when read)
    // Tokens (etcd::Mark): the current claim's, those of this life's claims
    // whose windows etcd confirmed (the newest 64), and the release token
    // the node state held at start.
    uint64_t claim_token_ = 0;
    std::vector<uint64_t> confirmed_tokens_;
    uint64_t restart_token_ = 0;
    bool own_mark_ = false;         // the mark read at this claim is this node's: nobody held the id since
    int64_t claimed_at_ms_ = 0;     // fence clock: when etcd answered the claim of the node key
    int64_t publish_after_ms_ = 0;  // fence clock: no ID before (the previous holder's fence, etcd::takeover_wait_ms)
    bool taking_over_ = false;      // waiting for it
    bool settling_ = false;         // the claim waits for the history to settle
    bool claim_raised_ = false;     // this claim raised the slots above a mark not its own
};

}  // namespace shardid::pg
