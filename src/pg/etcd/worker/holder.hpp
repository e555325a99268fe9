// The holder of this node's claim in etcd: the coordinator worker's state
// and its steps (src/pg/etcd/worker/holder.cpp: the lease, the claim, the mark,
// the window, the release; src/pg/etcd/worker/etcd_counters.cpp: the counters and the
// call-number key; src/pg/etcd/worker/start.cpp: the loop, the state it shows
// and the lines it logs). Only the worker process uses it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <cstddef>
#include <vector>
#include <string>
#include <unordered_map>

#include "core/etcd/continuity.hpp"
#include "core/etcd/rules.hpp"
#include "core/etcd/recheck.hpp"
#include "core/etcd/shard_values.hpp"
#include "etcd/client.hpp"
#include "pg/etcd/worker/config.hpp"
#include "pg/state/shmem.hpp"
#include "pg/etcd/shared.hpp"

namespace shardid::pg {

// The conditions the worker reports, each logged when it starts and ends
// (etcd::Episode).
enum class Condition { unreachable, unauthorized, refused, corrupt_key, unconfirmed, went_back, count };

struct CounterKey;  // a counter's keys in etcd, as read (src/pg/etcd/worker/holder.cpp)
struct Slot;        // a layout slot (src/pg/state/shared.hpp)

// This node as a holder describes itself in its keys.
etcd::HolderRecord this_node();
// A token for a claim or a release: random, never 0.
uint64_t new_token();

class Holder {
public:
    Holder(etcd::Config config, ClaimSettings settings)
        : client_(std::move(config)), settings_(std::move(settings)), prefix_(settings_.prefix),
          want_id_(settings_.want_id)
    {}

    // The loop of the worker process, until it is asked to stop; then the
    // claim is released (src/pg/etcd/worker/start.cpp).
    void run();

private:
    // One round: serve counters, keep the lease, claim, move the window.
    void step();
    bool keep_lease();
    void claim();
    bool take_id(int id);
    bool read_mark();
    void renew_window();
    bool record_window(int id, int64_t end, uint64_t token, bool released = false);
    void serve_counters();
    void serve_call_key();
    bool counter_key_value(int k, const std::string& until, std::string* key, CounterKey* out, bool* corrupt);
    bool raise_counters();
    void lose_claim(const std::string& why);
    void release();
    // Shard values (src/pg/etcd/worker/values.cpp): claim those generators want
    // and those shardid.shards declares, publish them, give back idle ones
    // and those asked for or no longer declared, and forget them all when
    // the node id is lost. Claims go in batches (src/pg/etcd/worker/claims.cpp).
    void serve_values();
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
    // The last listing of a claim space (thousands of values claimed at
    // once), with this node's own claims added since; forgotten when a
    // claim fails, and after a second (claims elsewhere: held values freed).
    SpaceRead listing_;
    int listing_slot_ = -1;
    int64_t listing_at_ms_ = 0;
    using NodeMarkFn = std::function<bool(int holder, etcd::Mark* out, bool* bad)>;
    bool decide_claim(int index, const ValueRead& read, const etcd::KeyValue* retired, int64_t now_ms, int64_t reach_ms,
                      const NodeMarkFn& node_mark, Plan* plan);
    etcd::Op puts_for(int index, uint64_t bound);
    bool release_shard(int index, bool retire = false);
    void release_batch(const std::vector<int>& batch);
    void lose_values();
    void declare_values();
    void redeclare();
    // What the node holds, re-confirmed with every renewal
    // (src/pg/etcd/worker/confirm.cpp; the rules: src/core/etcd/recheck.hpp).
    void confirm_values();
    bool recheck(std::string* why, bool* start_over);
    bool list_held(std::vector<int>* lost, int64_t* foreign, std::string* example, std::string* why);
    bool watch_failed_ = false;  // the last check's watch could not be read (its listing was logged once)
    void confirmed_until(int64_t fence_ms);
    void forget_unused_keys();
    void move_bounds(std::vector<int>& due);
    void give_way();
    void stop_value(int index, const std::string& note);
    struct ValueWork {
        int64_t next_try_ms = 0;       // fence clock: a busy or refused value is tried again
        int64_t not_before_ms = 0;     // fence clock: released by hand, not claimed again before
        int64_t publish_after_ms = 0;  // fence clock: taking over, no ID before
    };
    std::vector<ValueWork> values_;
    etcd::HeldKeys held_keys_;            // the shard keys under the lease, as this node wrote them
    int64_t renewal_fence_ms_ = 0;        // the fence of the renewal the next check confirms values up to
    int64_t values_until_ms_ = 0;         // fence clock: values confirmed until (published)
    size_t batch_max_ = 40;               // values given back or bounds moved per transaction
    size_t max_ops_ = etcd::max_txn_ops;  // operations per transaction (halved while etcd refuses as many)
    std::vector<int> declared_done_;      // per slot: whether its declared values were asked for
    uint64_t declared_generation_ = 0;    // the shardid.shards they were asked for under (shard_declaration())
    bool declared_full_ = false;          // the declared values did not fit the claim table (logged once)

    // etcd's history under the prefix (<prefix>/history; the rules:
    // src/core/etcd/continuity.hpp): read before any claim, made when
    // missing, made anew when etcd went back on it; a claim of what has no
    // mark (or one from before the history) waits until it settled
    // (src/pg/etcd/worker/history.cpp).
    bool ensure_history();
    bool make_history(const std::string& why);
    void saw_history(const etcd::KeyValue* kv);
    void republish();
    etcd::History history_;
    int64_t history_revision_ = 0;   // its key's mod revision (0: not known)
    int64_t history_created_ = 0;    // its key's create revision: keys written before it may be rolled back
    uint64_t republished_ = 0;       // the history this node republished its words under
    int64_t settling_created_ = 0;   // <prefix>/settling's create revision when it was read (0: none)
    int64_t settling_revision_ = 0;  // and its mod revision (an extension moves it)
    bool history_bad_ = false;       // the history key holds what shardid never writes: no claim until fixed
    // The longest lease TTL of the fleet this node knows (its own, its node
    // state's, the history's): how long a history it makes settles.
    int64_t fleet_ttl_ms_ = 0;
    void learn_fleet_ttl(int64_t ttl_ms);

    // Whether etcd kept what this node wrote (src/pg/etcd/worker/witness.cpp; the
    // rules: src/core/etcd/continuity.hpp): every write under the lease
    // goes through txn(), which compares and moves the witness; every answer's
    // revision is seen; a lease etcd no longer knows is judged by the
    // witness. A history that went back is distrusted (its token) and made
    // anew.
    bool txn(std::vector<etcd::Compare> compare, std::vector<etcd::Op> success, std::vector<etcd::Op> failure,
             etcd::Txn* out, std::string* why, bool ping = false);
    bool observe(const etcd::Header& header);
    bool lease_vanished();
    void went_back(const std::string& why);
    void new_witness();
    etcd::Witness witness_;
    etcd::Revisions revisions_;
    // The histories this node was under in this life and left (the newest
    // last): one etcd went back on, or one that went missing (etcd lost its
    // data) and was replaced. etcd that holds one again went back to it (a
    // restored snapshot taken before it was left): it is distrusted, not
    // taken up again with the marks and claims of that time.
    static constexpr size_t max_left = 32;
    uint64_t left_[max_left] = {};
    size_t n_left_ = 0;
    void leave(uint64_t token);
    bool left(uint64_t token) const;
    bool history_failure_ = false;  // the last failed request failed because etcd's history went back
    // The history this life's counter values are the node's own under: taken
    // under it, or re-published under it before it settled (else retired:
    // EtcdShared::counters_epoch).
    uint64_t counters_history_ = 0;
    bool settling_now_ = false;  // <prefix>/settling is there: claims of what has no mark wait
    bool settling_ = false;      // the claim of the node id waits for the history to settle
    int64_t issuing_until_ms() const { return std::min(fence_ms_, values_until_ms_); }

    // Reporting (src/pg/etcd/worker/report.cpp): a failed request or refusal,
    // and the end of a condition (which clears last_error when it was
    // that condition's); the state shardid_coordination() shows.
    void error(Condition kind, const std::string& why);
    void failed(const std::string& what, const std::string& why);
    void ended(Condition kind);
    void answered();
    void publish_state();
    void publish_lease();

    etcd::Client client_;
    ClaimSettings settings_;  // read once, at the worker's start
    std::string prefix_;
    int want_id_ = -1;  // shardid.node_id: -1 claims the lowest free id
    std::string lease_;
    int64_t lease_ttl_ms_ = 0;
    int64_t fence_ms_ = 0;          // fence clock (fence_clock_ms())
    int64_t last_sent_ms_ = 0;      // fence-clock send time of the last renewal etcd answered
    int claimed_ = -1;              // the node key held in etcd
    int last_id_ = -1;              // the id claimed last (node_id -1: preferred when free)
    bool refused_ = false;          // the last claim was refused: the id is another node's, or its mark unreadable
    bool waiting_ = false;          // the id is held by this node's own previous lease: wait until it expires
    bool corrupt_ = false;          // a key of the prefix holds what shardid never writes
    bool counters_raised_ = false;  // the counters in etcd are at least this node's floors, since the claim
    int held_ = -1;                 // published: IDs are issued under it
    // Fence clock: when publish_state() last found the node holding its id,
    // and renewals on time (the periods counted in shardid_coordination()
    // began no earlier).
    int64_t seen_held_ms_ = 0;
    int64_t seen_on_time_ms_ = 0;
    void note_late_renewal();
    // When renewals became late (the `expiring` period's start): never
    // before they were last seen on time, never after now.
    int64_t expiring_from_ms(int64_t now) const;
    int64_t floor_ms_ = 0;
    int64_t recorded_ms_ = 0;            // the window end last recorded in etcd
    std::map<int, int64_t> seen_marks_;  // the highest mark seen per id (each checked when read)
    // Tokens (etcd::Mark): the current claim's, those of this life's claims
    // whose windows etcd confirmed (the newest 64), and the release token
    // the node state held at start (its last clean release, 0: none).
    uint64_t claim_token_ = 0;
    std::vector<uint64_t> confirmed_tokens_;
    uint64_t restart_token_ = 0;
    bool own_mark_ = false;         // the mark read at this claim is this node's: nobody held the id since
    int64_t claimed_at_ms_ = 0;     // fence clock: when etcd answered the claim of the node key
    int64_t publish_after_ms_ = 0;  // fence clock: no ID before (the previous holder's fence, etcd::takeover_wait_ms)
    bool taking_over_ = false;      // waiting for it
    bool renewed_ = false;          // the lease was renewed in this step: confirm the values held under it
    bool claim_raised_ = false;     // this claim raised the slots above a mark not its own
    etcd::Episode episodes_[int(Condition::count)];
    int last_error_kind_ = -1;     // the condition that wrote last_error (-1: none)
    int64_t last_answer_ms_ = -1;  // wall ms of etcd's last answer (-1: none yet)
};

// Shared by the claims (src/pg/etcd/worker/values.cpp) and their
// confirmation (src/pg/etcd/worker/confirm.cpp).
struct ShardClaim;
struct Slot;
void set_note(ShardClaim& e, const std::string& note);
// The start (Unix ms) of the last tick the slot issued in, or was raised
// to (0: none).
int64_t slot_last_ms(const Slot& slot);
// "shard 5 of layout minute"
std::string describe(const Slot& slot, int64_t value);

}  // namespace shardid::pg
