// What a holder of shard values re-confirms with every renewal of its lease
// (docs/coordination.md, "Re-confirmed with every renewal"): that each
// shard key it holds is still there, as it wrote it. Pure: the glue
// (src/pg/etcd/worker/confirm.cpp) talks to etcd and feeds the answers here.
//
// The check costs the same whether a node holds 3 values or 8,192: it asks
// etcd only what changed. Every renewal, the holder writes a ping key of
// its own under <prefix>/shard/ (the barrier: its revision), then watches
// <prefix>/shard/ from the revision after the last one it checked. etcd
// sends every change since, in the order of revisions, so once the ping
// has come back every change before it has too: a held key deleted or
// rewritten (by hand, or with the prefix) after this node wrote it shows as
// an event of a later revision. Traffic is the changes under the prefix
// (claims and releases of every node, one ping per node and renewal), not
// the keys held.
//
// When etcd compacted the history the watch starts in, or the answer is not
// what etcd sends, the check cannot be made that way: a listing of the
// prefix in pages at one revision replaces it (full()), and a check that
// cannot be made at all confirms nothing: the values stop at the fence of
// the last renewal a check confirmed (the glue).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/etcd/wire.hpp"

namespace shardid::etcd {

// <prefix>/shard/~/<lease>: the ping a holder writes under its lease before
// each check. Inside the watched range; no claim space is named "~".
std::string ping_key(const std::string& prefix, const std::string& lease);
// The range every holder watches: [<prefix>/shard/, <prefix>/shard0).
std::string watched_key(const std::string& prefix);
std::string watched_end(const std::string& prefix);
// Whether a key of the watched range is one shardid writes: a ping
// (<prefix>/shard/~/<lease>) or a claim (<prefix>/shard/<space>/<value>,
// the space as etcd::space_name() writes it). Anything else there (keys
// written by hand, another program's) only makes the re-check's watch
// longer: it is named when the watch cannot be read.
bool shardid_key(const std::string& prefix, const std::string& key);

class HeldKeys {
public:
    // A new lease, granted at `revision` of the cluster `cluster_id`: no
    // key is held under it yet, and nothing after that revision checked.
    void reset(uint64_t cluster_id, int64_t revision);
    // This node wrote `key` (a claim) at `revision`: held for entry `index`.
    void put(const std::string& key, int index, int64_t revision);
    // This node deleted `key`, or no longer counts on it.
    void erase(const std::string& key);
    // The entry a key is held for (-1: none).
    int index_of(const std::string& key) const;
    size_t size() const { return keys_.size(); }
    const std::unordered_map<std::string, std::pair<int, int64_t>>& keys() const { return keys_; }

    // Every change up to this revision has been checked.
    int64_t checked() const { return checked_; }
    uint64_t cluster_id() const { return cluster_; }

    // A check up to `barrier`, the revision of this node's ping (of the
    // cluster that answered it): false (why) when the answer cannot be
    // from the cluster the lease is in.
    bool begin(uint64_t cluster_id, int64_t barrier, std::string* why);
    // One message of the watch from checked() + 1: the entries whose keys
    // changed after this node wrote them go into *lost (and are no longer
    // held). `done` once the barrier's revision has come; `compacted` when
    // etcd no longer has the history the watch starts in (then full());
    // `failed` (why) for a message no etcd of this cluster sends.
    enum class Step { more, done, compacted, failed };
    Step feed(const etcd::WatchMessage& message, std::vector<int>* lost, std::string* why);
    // A listing of the watched range at `revision` instead, with every key
    // `lease` holds in it (keys_only pages): a held key missing from it, or
    // not as this node wrote it, is lost. Checked up to `revision`.
    void full(const std::vector<etcd::KeyValue>& listed, const std::string& lease, int64_t revision,
              std::vector<int>* lost);

private:
    bool cluster_ok(uint64_t cluster_id, std::string* why) const;
    void lose(const std::string& key, int64_t revision, std::vector<int>* lost);
    std::unordered_map<std::string, std::pair<int, int64_t>> keys_;  // key -> (entry, revision written)
    uint64_t cluster_ = 0;
    int64_t checked_ = 0;
    int64_t barrier_ = 0;
    int64_t seen_ = 0;  // the latest revision fed in this check
};

}  // namespace shardid::etcd
