// etcd's history under a prefix, and how a node tells that etcd went back
// on it (docs/coordination.md, "etcd losing its data" and "etcd restored
// from a backup"). Pure: the glue (src/pg/etcd/worker/history.cpp,
// src/pg/etcd/worker/session.cpp) talks to etcd and asks these.
//
// A history is <prefix>/history, "<16 hex token> <settled ms> <ttl ms>",
// made by the first node that finds it missing, with no lease (it outlives
// every node). Every claim reads it and compares its revision, so a claim
// never spans a loss of etcd's data. A missing key means the prefix is new,
// or etcd lost its data; a history etcd went back on (restored from an
// older snapshot, another cluster with a copy of the data) is distrusted by
// the nodes that see it went back, deleted and made anew. Either way the
// nodes that issued under what etcd forgot stop within a renewal or at
// their fence, and re-publish what they know (their counters' floors, and
// the word of each layout they issued in, in the space's retired word):
// so a claim of what has no mark, or a mark from before the history (etcd
// may have rolled it back), issues nothing while the history settles
// (<prefix>/settling, under a lease of settle_ms() of the longest lease TTL
// of the fleet: etcd's clock), and a layout whose ticks are longer than a
// second continues above the tick in which it settled.
//
// How a node tells that etcd went back, without trusting a clock:
//   - revisions: a linearizable answer from the cluster a node talks to
//     never carries a revision below one it carried before (Revisions);
//   - the witness: every write of a node under its lease also moves its
//     ping key, comparing that the ping is where the node's last write left
//     it (Witness). A history that lost any write of the node fails that
//     compare at the node's next write, so nothing commits in it; a lease
//     etcd no longer knows is judged by reading the ping at the revision of
//     the node's last write (a history that kept the write has it there);
//   - the cluster: another cluster id answering is another history.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/etcd/rules.hpp"
#include "core/etcd/wire.hpp"

namespace shardid::etcd {

// --- the history key --------------------------------------------------------

// token: drawn at random for each history. settled_ms: when it settles (the
// wall clock of the node that made or extended it). ttl_ms: the longest
// lease TTL of any node of the fleet that its writers knew of; every node
// raises it to what it knows, so that a node making the next history after
// a loss knows it too (each node keeps it in its node state).
struct History {
    uint64_t token = 0;
    int64_t settled_ms = 0;
    int64_t ttl_ms = 0;
};
std::string history_key(const std::string& prefix);
// <prefix>/settling: put with a new history, under a lease of settle_ms():
// while etcd has it, the history settles (the wait runs on etcd's clock).
std::string settling_key(const std::string& prefix);
std::string history_value(const History& history);
// False for anything history_value() never writes (a TTL outside the range
// a node accepts included).
bool parse_history(const std::string& text, History* out);
// How long a new history waits, for the longest lease TTL of the fleet: a
// lease TTL and its margin, the longest a holder that could not see the
// loss issues after it (its fence lies at most TTL - margin after its last
// renewal, which came before the loss, and a holder that reaches etcd
// notices at its next renewal, at most TTL/5 after the loss).
constexpr int64_t settle_ms(int64_t ttl_ms) { return sat_add(ttl_ms, fence_margin_ms(ttl_ms)); }
// Whether `settled_ms` could have been written by a node whose clock leads
// this one's by at most max_lead_ms: at most the longest settle ahead.
bool history_plausible(int64_t settled_ms, int64_t now_ms, int64_t max_lead_ms, std::string* why);

// The longest lease TTL a node knows the fleet to use: its own, what it
// remembers (its node state), and what the history says; within the range
// a node accepts.
constexpr int64_t fleet_ttl_ms(int64_t own_ms, int64_t remembered_ms, int64_t history_ms)
{
    int64_t t = own_ms;
    if (remembered_ms > t)
        t = remembered_ms;
    if (history_ms > t)
        t = history_ms;
    return t < min_lease_ttl_s * 1000   ? min_lease_ttl_s * 1000
           : t > max_lease_ttl_s * 1000 ? max_lease_ttl_s * 1000
                                        : t;
}

// A history a node read, as it must stand for the fleet the node knows:
// its TTL raised to `fleet_ms`, and while it settles (`settling`), its
// settling long enough for that TTL from `now_ms` on. False when it
// stands as it is.
bool history_extended(const History& read, int64_t fleet_ms, bool settling, int64_t now_ms, History* out);

// Whether a key last written at `mod_revision` was written before the
// history created at `history_created` (its key's create revision): etcd
// may have rolled it back with the history before (a restored snapshot
// holds marks older than what their holders issued since), so it bounds
// nothing alone. 0 (a key absent, a history not known) is never before.
constexpr bool before_history(int64_t mod_revision, int64_t history_created)
{
    return mod_revision > 0 && history_created > 0 && mod_revision < history_created;
}

// --- revisions --------------------------------------------------------------

// The revisions of the history a node talks to, as its answers carry them:
// never lower than the highest seen, always from the same cluster.
class Revisions {
public:
    // An answer's header: false (why) when it cannot be of the history seen
    // so far (then nothing is kept: the caller starts anew).
    bool see(const etcd::Header& header, std::string* why);
    // A new history (or none): nothing seen yet.
    void reset() { cluster_ = 0, highest_ = 0; }
    int64_t highest() const { return highest_; }
    uint64_t cluster() const { return cluster_; }

private:
    uint64_t cluster_ = 0;
    int64_t highest_ = 0;
};

// --- the witness ------------------------------------------------------------

// This node's ping key under its lease (src/core/etcd/recheck.hpp names it)
// as the witness of its writes: every write under the lease compares it and
// moves it, so a history without the node's last write refuses the next.
class Witness {
public:
    // A new lease (empty: none) under `prefix`, whose ping values carry
    // `token` (drawn for it): no write under it yet.
    void reset(const std::string& prefix, const std::string& lease, uint64_t token);
    const std::string& lease() const { return lease_; }
    // The revision and value of the last write etcd confirmed (0: none yet).
    int64_t revision() const { return revision_; }
    const std::string& value() const { return value_; }
    // What a write under the lease adds: the compare (the ping is where
    // the last write left it), and the put of the ping's next value (kept
    // as the write in flight), and the read of the ping that its failure
    // branch adds (to tell why it failed).
    etcd::Compare compare() const;
    etcd::Op put();
    etcd::Op read() const;
    const std::string& key() const { return key_; }
    // The write in flight committed at `revision`: the chain moves.
    void committed(int64_t revision);
    // Its answer was lost: it may have committed (judged at the next write).
    void lost() { uncertain_ = pending_; }
    // A write whose compares failed, with what etcd holds of the ping key
    // (found or not): `same` (the ping is where this node left it: another
    // compare failed), `adopted` (a write whose answer was lost had
    // committed: the chain moves to it, and the write may be tried again),
    // `went_back` (etcd does not hold this node's last write there).
    enum class Verdict { same, adopted, went_back };
    Verdict judge(bool found, const etcd::KeyValue& ping, std::string* why);
    // After etcd no longer knows the lease: what a read of the ping key at
    // the revision of the last write says (`answered`: etcd answered it,
    // with `kvs`; otherwise `error` is etcd's refusal, or empty when it did
    // not answer). `kept`: the history has the write; `lost`: it does not
    // (etcd went back); `unknown`: etcd compacted that revision away, or
    // did not answer (why says which).
    enum class Kept { kept, lost, unknown };
    Kept kept(bool answered, const std::vector<etcd::KeyValue>& kvs, const std::string& error, std::string* why) const;

private:
    std::string key_, lease_, value_;
    std::string pending_;    // the value of the write in flight
    std::string uncertain_;  // the value of a write whose answer was lost: it may have committed
    uint64_t token_ = 0, n_ = 0;
    int64_t revision_ = 0;
};

}  // namespace shardid::etcd
