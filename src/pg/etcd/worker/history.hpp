// etcd's history under the prefix, as the coordinator worker knows it
// (<prefix>/history; src/pg/etcd/worker/history.cpp; the rules:
// src/core/etcd/continuity.hpp): read before any claim, made when missing,
// made anew when etcd went back on it; a claim of what has no mark (or one
// from before the history) waits until it settled. Only the worker process
// uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/etcd/continuity.hpp"
#include "pg/etcd/worker/session.hpp"

namespace shardid::pg {

class PrefixHistory {
public:
    explicit PrefixHistory(Session& session) : session_(session), prefix_(session.prefix()) {}

    // Read (made, raised, made anew when needed) unless known and settled;
    // false (and nothing claimed) until it is known.
    bool ensure();
    // What a renewal's ping read of it (null: missing): one that changed
    // since it was read is read again before the next claim.
    void saw(const etcd::KeyValue* kv);
    // Read again before the next claim (a transaction that compared it
    // failed, or the node id was lost: etcd may have lost it).
    void reread() { revision_ = 0; }
    // etcd went back on it: distrusted, never taken up again, and read
    // (made anew) before anything is claimed.
    void went_back()
    {
        leave(current_.token);
        revision_ = created_ = 0;
    }
    // The longest lease TTL of the fleet this node knows (0: a new lease).
    void learn_fleet_ttl(int64_t ttl_ms);

    int64_t revision() const { return revision_; }  // its key's mod revision (0: not known)
    int64_t created() const { return created_; }    // its key's create revision
    uint64_t token() const { return current_.token; }
    int64_t settled_ms() const { return current_.settled_ms; }
    bool settling() const { return settling_; }  // <prefix>/settling is there: claims of what has no mark wait
    int64_t settling_created() const { return settling_created_; }

private:
    bool make(const std::string& why);
    void republish();
    void leave(uint64_t token);
    bool left(uint64_t token) const;

    Session& session_;
    const std::string& prefix_;  // shardid.etcd_prefix
    etcd::History current_;
    int64_t revision_ = 0;
    int64_t created_ = 0;            // keys written before it may be rolled back
    uint64_t republished_ = 0;       // the history this node republished its words under
    int64_t settling_created_ = 0;   // <prefix>/settling's create revision when it was read (0: none)
    int64_t settling_revision_ = 0;  // and its mod revision (an extension moves it)
    bool settling_ = false;
    bool bad_ = false;  // the history key holds what shardid never writes: no claim until fixed
    // The longest lease TTL of the fleet this node knows (its own, its node
    // state's, the history's): how long a history it makes settles.
    int64_t fleet_ttl_ms_ = 0;
    // The histories this node was under in this life and left (the newest
    // last): one etcd went back on, or one that went missing (etcd lost its
    // data) and was replaced. etcd that holds one again went back to it (a
    // restored snapshot taken before it was left): it is distrusted, not
    // taken up again with the marks and claims of that time.
    static constexpr size_t max_left = 32;
    uint64_t left_[max_left] = {};
    size_t n_left_ = 0;
};

}  // namespace shardid::pg
