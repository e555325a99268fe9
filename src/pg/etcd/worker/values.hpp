// The shard values this node holds in etcd, as the coordinator worker keeps
// them (the claim table they are published in: src/pg/etcd/shard_claims.hpp;
// the rules: src/core/etcd/shard_values.hpp, src/core/etcd/recheck.hpp):
//  - src/pg/etcd/worker/values.cpp: which to claim (those generators want
//    and those shardid.shards declares), published; given back when idle,
//    asked for, or no longer declared; forgotten with the node id;
//  - src/pg/etcd/worker/claims.cpp: claims read and committed in batches,
//    decided one by one in src/pg/etcd/worker/decide.cpp;
//  - src/pg/etcd/worker/confirm.cpp: what is held re-confirmed with every
//    renewal of the lease, and a coarse layout's bound moved ahead of its
//    IDs.
// Only the worker process uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/etcd/recheck.hpp"
#include "core/etcd/shard_values.hpp"
#include "pg/etcd/worker/history.hpp"
#include "pg/etcd/worker/node_claim.hpp"
#include "pg/etcd/worker/session.hpp"

namespace shardid::pg {

struct ShardClaim;  // an entry of the claim table (src/pg/etcd/shard_claims.hpp)
struct Slot;        // a layout slot (src/pg/state/shared.hpp)

class ShardValues {
public:
    ShardValues(Session& session, PrefixHistory& history, NodeIdClaim& node, HolderEvents& events)
        : session_(session), prefix_(session.prefix()), history_(history), node_(node), events_(events)
    {}

    // One round while the node id is held: claim, publish, give back.
    void serve();
    // After each renewal: what is held under the lease checked again.
    void confirm();
    // The node id lost: every value stops and is forgotten.
    void lose();
    // shardid.shards reloaded: values no longer declared stop at once.
    void redeclare();
    // A new lease: nothing is held under it yet (its keys are re-checked
    // from the grant's revision on), and values are confirmed until its
    // fence.
    void lease_granted(const etcd::Header& granted);
    // A renewal: the next check confirms values up to its fence.
    void lease_renewed(int64_t fence_ms) { renewal_fence_ms_ = fence_ms; }
    // Fence clock: values confirmed until (published).
    int64_t until_ms() const { return values_until_ms_; }

private:
    void claim_values(std::vector<int>& batch);
    // What etcd holds of one value, read for its claim.
    struct ValueRead {
        etcd::KeyValue holder, mark, want;
        bool has_holder = false, has_mark = false, has_want = false;
    };
    // A claim decided: what the value continues above once etcd took it.
    struct Plan {
        int index = -1;
        std::string ckey;
        uint64_t target = 0, bound = 0;
        int64_t floor = 0, mark_floor = 0, wait = 0;
    };
    // What etcd holds of a claim space, read for claims: the claim, mark and
    // want keys of some values (or of all of them), the space's retired
    // word, and whether any node asks for a value of the space back.
    struct SpaceRead {
        std::unordered_map<std::string, etcd::KeyValue> kvs;
        etcd::KeyValue retired;
        bool has_retired = false;
        bool any_want = false;
    };
    bool read_claims(int slot, const std::vector<int>* batch, SpaceRead* out);
    size_t commit_claims(const std::vector<int>& group, size_t from, size_t end, const SpaceRead& read);
    void claimed(const Plan& plan, const Slot& slot, int64_t revision, size_t together);
    using NodeMarkFn = std::function<bool(int holder, etcd::Mark* out, bool* bad)>;
    bool decide_claim(int index, const ValueRead& read, const etcd::KeyValue* retired, int64_t now_ms, int64_t reach_ms,
                      const NodeMarkFn& node_mark, Plan* plan);
    etcd::Op puts_for(int index, uint64_t bound);
    bool release_shard(int index, bool retire = false);
    void release_batch(const std::vector<int>& batch);
    void declare_values();
    bool recheck(std::string* why, bool* start_over);
    bool list_held(std::vector<int>* lost, int64_t* foreign, std::string* example, std::string* why);
    void confirmed_until(int64_t fence_ms);
    void forget_unused_keys();
    void move_bounds(std::vector<int>& due);
    void give_way();
    void stop_value(int index, const std::string& note);

    Session& session_;
    const std::string& prefix_;  // shardid.etcd_prefix
    PrefixHistory& history_;
    NodeIdClaim& node_;
    HolderEvents& events_;
    // The last listing of a claim space (thousands of values claimed at
    // once), with this node's own claims added since; forgotten when a
    // claim fails, and after a second (claims elsewhere: held values freed).
    SpaceRead listing_;
    int listing_slot_ = -1;
    int64_t listing_at_ms_ = 0;
    bool watch_failed_ = false;  // the last check's watch could not be read (its listing was logged once)
    struct ValueWork {
        int64_t next_try_ms = 0;       // fence clock: a busy or refused value is tried again
        int64_t not_before_ms = 0;     // fence clock: released by hand, not claimed again before
        int64_t publish_after_ms = 0;  // fence clock: taking over, no ID before
    };
    std::vector<ValueWork> work_;
    etcd::HeldKeys held_keys_;            // the shard keys under the lease, as this node wrote them
    int64_t renewal_fence_ms_ = 0;        // the fence of the renewal the next check confirms values up to
    int64_t values_until_ms_ = 0;         // fence clock: values confirmed until (published)
    size_t batch_max_ = 40;               // values given back or bounds moved per transaction
    size_t max_ops_ = etcd::max_txn_ops;  // operations per transaction (halved while etcd refuses as many)
    std::vector<int> declared_done_;      // per slot: whether its declared values were asked for
    uint64_t declared_generation_ = 0;    // the shardid.shards they were asked for under (shard_declaration())
    bool declared_full_ = false;          // the declared values did not fit the claim table (logged once)
};

// Shared by the claims (src/pg/etcd/worker/values.cpp) and their
// confirmation (src/pg/etcd/worker/confirm.cpp).
void set_note(ShardClaim& e, const std::string& note);
// The start (Unix ms) of the last tick the slot issued in, or was raised
// to (0: none).
int64_t slot_last_ms(const Slot& slot);
// "shard 5 of layout minute"
std::string describe(const Slot& slot, int64_t value);

}  // namespace shardid::pg
