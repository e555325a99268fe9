// Where this node's id comes from, as generation sees it: one interface,
// implemented from shardid.node_id (src/pg/source/node_source.cpp), from a claim
// held in etcd (src/pg/etcd/id_source.cpp) and from the node's Citus group id
// (src/pg/citus/source.cpp). Generation
// (src/pg/generate/generate.cpp) asks the source for the id once per ID, confirms
// the ticket once the ID is covered and before it is returned, and waits
// through the source when it has no id right now; it has no branch per
// source. The node counters a source hands out cluster-wide (DecimalId
// generator ids, call-number run ids) come through it too. A third source
// (say, logical-shard claims) is a third implementation.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/layout.hpp"
#include "core/status.hpp"
#include "pg/base/pg.hpp"
#include "pg/state/shmem.hpp"

namespace shardid::pg {

// What a generation holds of its source between asking and returning the
// ID: the claim's generation (0: nothing to confirm) and the node's id
// (-1: none).
struct SourceTicket {
    uint64_t generation = 0;
    int64_t id = -1;
    // The shard field value's claim (etcd: its entry, -1: none, and
    // generation), and the layout's tick length.
    int claim = -1;
    uint64_t claim_generation = 0;
    uint64_t claim_epoch = 0;     // the claim table's epoch the value was seen held under
    void* claim_cache = nullptr;  // the backend's cache entry of the value (src/pg/etcd/shard_claims.cpp)
    int64_t unit_ms = 1;
    uint64_t word = 0;  // the ID's packed (tick, sequence), set once it is made
    // The fence clock read when the ID was made, with nothing that takes
    // time since (0: none; confirm() reads it).
    int64_t fence_read_ms = 0;
    // Citus: the fingerprint of the shardid.shards an explicit shard was
    // held under (0: none), which the coordinator must have recorded.
    uint64_t declaration = 0;
};

class NodeIdSource {
public:
    // "setting", "etcd" or "citus": shardid.node_id_source's value.
    virtual const char* name() const = 0;
    // May this node issue an ID now? Every time-based ID asks, whatever its
    // shard: the node's clock and mark are what keep its IDs apart, and with
    // a claim from etcd they are the claim's. A ticket, or a failure: 55000
    // when the source is misconfigured, Error::not_claimed when it has no
    // id right now (the caller waits with wait() and asks again). Runs
    // inside guarded(): never ereports.
    virtual bool hold(SourceTicket* ticket, Status* status) const = 0;
    // The ticket's node id as the shard/node field of `fit`, or a failure:
    // 55000 when unset, 22003 when it does not fit. Never ereports.
    virtual bool node_id(const Layout& fit, const SourceTicket& ticket, uint64_t* id, Status* status) const = 0;
    // May this node write `value` into the shard field of an ID of `layout`
    // (whose node-wide slot is `slot`)? `given`: an explicit shard (else the
    // node's id). shardid.shards must admit an explicit shard; with etcd,
    // the node must hold the value in the layout's claim space
    // (src/core/etcd/shard_values.hpp): otherwise Error::not_claimed (it is being
    // claimed: wait() and ask again). Never ereports.
    virtual bool hold_value(SlotState* slot, const Layout& layout, uint64_t value, bool given, SourceTicket* ticket,
                            Status* status) const = 0;
    // After an ID of the tick starting at tick_ms is covered and before it
    // is returned: the ticket still holds (the claim is unchanged, its fence
    // not passed, the tick inside its window). Otherwise Error::not_claimed:
    // the ID must not be returned; the caller waits and generates again.
    // Never ereports.
    virtual bool confirm(const SourceTicket& ticket, int64_t tick_ms, Status* status) const = 0;
    // Waits a little, interruptibly, for the source to have an id again;
    // raises `why` (55000) once the source's bound has passed since `since`.
    // Outside guarded(): it can ereport.
    virtual void wait(TimestampTz since, const Status& why) const = 0;
    // Ends the waits of a generation that got its ID after all.
    virtual void waited() const = 0;
    // Whether the source takes part in a generation beyond hold() and
    // confirm(), through the three below (etcd does): read on every
    // generation, a member, not a call.
    bool shapes_generation() const { return shapes_generation_; }
    // Before a generation, outside guarded() (it may ereport): `value`, the
    // ID's shard field holds a value the source must hold (hold_value()).
    // etcd: the caller's role, for its share of the shard values' table.
    virtual void prepare(bool value) const { (void)value; }
    // How long a generation waits for its layout's next tick at most (0: as
    // long as it takes; etcd: shardid.etcd_wait, a second at least), and
    // whether the clock of a fine layout is read through the fence clock
    // (SourceTicket::fence_read_ms, for confirm()).
    virtual int64_t next_tick_wait_ms() const { return 0; }
    virtual bool reads_fence_clock() const { return false; }
    // Outside guarded(), before a refusal is raised: what the source adds
    // to its detail (etcd: who holds the most of a full table).
    virtual void explain(Status* status) const { (void)status; }
    // Before each ID, outside guarded() (it may ereport): brings what the
    // source keeps of committed state up to date, so that an identity
    // another backend changed is not used for one more ID. Citus: the
    // invalidations of its metadata.
    virtual void refresh() const {}
    // A value of `which` that no node took before, when this source hands
    // them out cluster-wide (may wait, and ereport); from_node_sequence when
    // the node takes them from its own sequences. `key_fingerprint` (not 0)
    // is the call-number key the values will be used with: a cluster-wide
    // source refuses one that is not the cluster's.
    static constexpr int64 from_node_sequence = -1;
    virtual int64 take_counter(NodeCounter which, int64 key_fingerprint) const = 0;
    // Before a DecimalId or a call number, with counter values the source
    // handed out: may they be used now, and under which epoch (values taken
    // in another one are taken anew)? With etcd: only while the node holds
    // its claim, fenced like every ID (Error::not_claimed otherwise: wait()
    // and ask again). Never ereports.
    virtual bool counters_hold(uint64_t* epoch, Status* status) const
    {
        (void)status;
        *epoch = 0;
        return true;
    }

protected:
    explicit constexpr NodeIdSource(bool shapes_generation = false) : shapes_generation_(shapes_generation) {}
    ~NodeIdSource() = default;

private:
    bool shapes_generation_;
};

// shardid.shards admits `shard`; otherwise a failure (55000), counted.
bool declared_shard(uint64_t shard, Status* status);

// The source shardid.node_id_source names.
const NodeIdSource& node_id_source();

// The etcd claim's (src/pg/etcd/id_source.cpp) and the node's Citus group
// id's (src/pg/citus/source.cpp), which their rooms register from _PG_init
// (src/pg/etcd/etcd.hpp, etcd_init(); src/pg/citus/citus.hpp, citus_init()).
void register_etcd_source(const NodeIdSource& source);
void register_citus_source(const NodeIdSource& source);

}  // namespace shardid::pg
