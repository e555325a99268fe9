// The cluster's counters in etcd, as the coordinator worker serves them
// (src/pg/etcd/worker/cluster_counters.cpp; the rules, and what a counter may hold:
// src/core/etcd/rules.hpp, counter_next()): values taken for backends,
// every counter raised to this node's floors at each claim and under each
// new history, and the call-number key read and recorded for backends.
// Only the worker process uses it.
#pragma once

#include <cstdint>
#include <string>

#include "pg/etcd/worker/history.hpp"
#include "pg/etcd/worker/session.hpp"

namespace shardid::pg {

struct CounterKey;  // a counter's keys in etcd, as read (src/pg/etcd/worker/cluster_counters.cpp)

class ClusterCounters {
public:
    ClusterCounters(Session& session, PrefixHistory& history)
        : session_(session), prefix_(session.prefix()), history_(history)
    {}

    // Values taken for the backends that asked, and the call-number key.
    void serve();
    // Every counter raised to at least this node's floor; false until all
    // are (then tried again).
    bool raise();
    // The history read (`token`): the first of this life is the one this
    // node's counter values were taken under; under another (etcd lost its
    // data), the counters are raised at once, before it settles.
    void follow_history(uint64_t token);
    // A counter key holds what shardid never writes (reported).
    bool corrupt() const { return corrupt_; }

private:
    void serve_call_key();
    bool key_value(int k, const std::string& until, std::string* key, CounterKey* out, bool* corrupt);

    Session& session_;
    const std::string& prefix_;  // shardid.etcd_prefix
    PrefixHistory& history_;
    bool corrupt_ = false;
    // The history this life's counter values are the node's own under: taken
    // under it, or re-published under it before it settled (else retired:
    // EtcdShared::counters_epoch).
    uint64_t history_token_ = 0;
};

}  // namespace shardid::pg
