// The coordinator worker's session with etcd (src/pg/etcd/worker/session.cpp),
// which every job of the worker makes its requests through: the lease they
// are made under and its fence; the witness, which tells whether etcd kept
// what this node wrote (the rules: src/core/etcd/continuity.hpp); and the
// reports of what failed (a line in the server log when a condition starts
// and one when it ends, and the last error shardid_coordination() shows).
// Only the worker process uses it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/etcd/continuity.hpp"
#include "core/etcd/rules.hpp"
#include "etcd/client.hpp"
#include "pg/etcd/worker/config.hpp"

namespace shardid::pg {

// The conditions the worker reports, each logged when it starts and ends
// (etcd::Episode).
enum class Condition { unreachable, unauthorized, refused, corrupt_key, unconfirmed, went_back, count };

// This node as a holder describes itself in its keys.
etcd::HolderRecord this_node();
// A token for a claim or a release: random, never 0.
uint64_t new_token();

// What a job learns that every job must hear of, at once: the holder
// (src/pg/etcd/worker/holder.hpp) passes it on.
class HolderEvents {
public:
    // A new lease: nothing is held under it yet (its keys are all written
    // after `granted`).
    virtual void lease_granted(const etcd::Header& granted) = 0;
    // The lease renewed: what the node holds under it is confirmed up to
    // `fence_ms` once checked again.
    virtual void lease_renewed(int64_t fence_ms) = 0;
    // etcd answered a renewal after it was due.
    virtual void renewal_late() = 0;
    // The lease's fence passed before it was renewed (why): the node id,
    // if claimed, is given up.
    virtual void fence_passed(const std::string& why) = 0;
    // The node id is no longer this node's: every ID stops.
    virtual void lose_claim(const std::string& why) = 0;
    // etcd's history went back on this node (why): every ID stops, and the
    // history is made anew.
    virtual void went_back(const std::string& why) = 0;
    // The state shardid_coordination() shows is to be published now.
    virtual void publish_state() = 0;

protected:
    ~HolderEvents() = default;
};

class Session {
public:
    Session(etcd::Config config, ClaimSettings settings, HolderEvents& events)
        : client_(std::move(config)), settings_(std::move(settings)), prefix_(settings_.prefix), events_(events)
    {}

    const ClaimSettings& settings() const { return settings_; }  // read once, at the worker's start
    const std::string& prefix() const { return prefix_; }
    etcd::Client& client() { return client_; }
    const std::string& lease() const { return lease_; }
    int64_t lease_ttl_ms() const { return lease_ttl_ms_; }
    int64_t fence_ms() const { return fence_ms_; }  // fence clock (fence_clock_ms())
    // Fence-clock send time of the last renewal etcd answered.
    int64_t last_sent_ms() const { return last_sent_ms_; }

    // Grants or renews the lease; false when there is no live one.
    bool keep_lease();
    // The lease given up because etcd's history went back: revoked (the
    // keys the old history holds under it again are deleted), and the
    // witness and the revisions seen start again.
    void drop_lease();

    // A transaction: under the lease (a write that puts, or `ping`: the
    // renewal's ping, the witness's write alone), witnessed. False (why)
    // when etcd did not answer, answered with an error, or went back.
    bool txn(std::vector<etcd::Compare> compare, std::vector<etcd::Op> success, std::vector<etcd::Op> failure,
             etcd::Txn* out, std::string* why, bool ping = false);
    // An answer's revision and cluster seen: false when etcd went back (then
    // reported to the holder).
    bool observe(const etcd::Header& header);
    // The last failed request failed because etcd's history went back.
    bool history_failed() const { return history_failure_; }

    // Reports: a failed request or refusal, and the end of a condition
    // (which clears last_error when it was that condition's).
    void error(Condition kind, const std::string& why);
    void failed(const std::string& what, const std::string& why);
    void ended(Condition kind);
    void answered();
    // The end of a round of the holder's loop: `unauthorized` ends once a
    // round's requests were answered and none was refused for the user.
    void round_done();
    bool active(Condition kind) const { return episodes_[int(kind)].active(); }

private:
    bool lease_vanished();
    void new_witness();
    void publish_lease();

    etcd::Client client_;
    ClaimSettings settings_;
    std::string prefix_;
    HolderEvents& events_;
    std::string lease_;
    int64_t lease_ttl_ms_ = 0;
    int64_t fence_ms_ = 0;
    int64_t last_sent_ms_ = 0;
    etcd::Witness witness_;
    etcd::Revisions revisions_;
    bool history_failure_ = false;  // the last failed request failed because etcd's history went back
    etcd::Episode episodes_[int(Condition::count)];
    int last_error_kind_ = -1;        // the condition that wrote last_error (-1: none)
    int64_t last_answer_ms_ = -1;     // wall ms of etcd's last answer (-1: none yet)
    bool answered_in_round_ = false;  // a request of this round was answered
    bool refused_in_round_ = false;   // and one was refused for the user (Condition::unauthorized)
};

}  // namespace shardid::pg
