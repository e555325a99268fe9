// Node-wide generator state in shared memory (locking rules: shmem.cpp): one slot per distinct layout
// shape (epoch, unit, widths), shared by every backend, parallel worker and
// database of the cluster. Equal shapes share a slot, so two databases using
// the same layout on one node never issue the same ID.
//
// With shared_preload_libraries the space is reserved at server start;
// without it, the first backend that needs it carves it from the slack
// PostgreSQL leaves in its shared memory segment. Either way the same
// ShmemInitStruct name is attached, under AddinShmemInitLock.
#pragma once

#include "core/decimal.hpp"
#include "core/engine.hpp"
#include "core/layout.hpp"
#include "pg/state/state_file.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "storage/lwlock.h"
}

namespace shardid::pg {

// Layout shapes with node state at once, per node and per database (the
// database that first brings a shape into use counts it): a database cannot
// take the node's whole table. A restart frees every shape whose current
// tick is over.
constexpr int max_slots = 128;
constexpr int max_slots_per_database = 32;
// Databases with DecimalId state at once; the entry of a dropped database
// is freed for another.
constexpr int max_decimal_databases = 64;

// Called from _PG_init: installs the shmem hooks when preloading.
void shmem_init();

// A part of the node's shared memory that a room above the state owns (the
// Citus group fence: src/pg/citus/shared.hpp; the etcd claim and its shard
// values' table: src/pg/etcd/shared.hpp, src/pg/etcd/shard_claims.hpp): `size` bytes, zeroed and then
// made ready by `init` when the server creates them, at *where from then
// on. Reserved at start when preloaded; attached with the node state in
// every process, or, `on_demand`, only by shmem_part_attach() (without
// preloading, a part nobody uses takes nothing of the slack PostgreSQL
// leaves in its segment: the Citus part is 90 kB). Registered from
// _PG_init (at most max_shared_parts).
struct SharedPart {
    const char* name;
    Size size;
    void (*init)(void* part);
    void** where;
    bool on_demand = false;
    Size align = 0;  // *where aligned to this many bytes (0: as PostgreSQL gives it)
};
constexpr int max_shared_parts = 4;
void shmem_part(const SharedPart& part);
// Attaches the node state and the on-demand part kept at `where`, unless
// done (ereports when the server has no room for it).
void shmem_part_attach(void** where);

enum class GenerationRefusal : int;  // src/pg/state/shared.hpp
// A generation refused for `why`, whatever the node's id comes from,
// counted node-wide since the server started (shardid_coordination()).
void count_generation_refusal(GenerationRefusal why);
// A generation's refusal of a shard value, whoever owns the shard field
// (shardid.shards, an etcd claim): noted when a value is refused
// (ClaimRefusal::count: none), counted once it ends in an error
// (shardid_shard_refusals()), forgotten when the generation tries again.
enum class ClaimRefusal : int;  // src/pg/state/shared.hpp
void note_claim_refusal(ClaimRefusal cause);
void count_claim_refusal();
void clear_claim_refusal();

// The node-wide state of `layout` (ereports if no slot is free). The result
// is cached per backend; callers on a hot path cache it themselves too.
SlotState* slot_for(const Layout& layout);

// Makes sure the persisted node state covers an ID, issued in `state` (a
// slot_for() result) as packed word `word` in the tick that starts at
// tick_ms, before that ID is returned: the node's high-water mark, written
// about a second ahead (renewed early, without waiting, once half of it is
// used), and for layouts with ticks longer than that, the layout's own
// (tick, sequence) mark. True when it wrote or waited (took time: a
// caller that read a clock before reads it again).
bool cover_issued(SlotState* state, const Layout& layout, uint64_t word, int64_t tick_ms);

// Before an ID is handed out: the WAL record of the node state that covers
// it is flushed and, with synchronous replication (synchronous_commit
// remote_write, on or remote_apply and synchronous standbys defined),
// confirmed by the synchronous standbys, as a commit would be. In the steady
// state that record is long replicated and this is one atomic read; only
// while the standbys are behind does a caller wait (interruptibly; a cancel
// ends the wait with an error and no ID). Called by cover_issued(); true
// when it flushed or waited.
bool confirm_covered(SlotState& state, const Layout& layout, int64 tick_ms);

// DecimalId state of a database (its generator ids come from that
// database's sequence).
DecimalState* decimal_state(Oid database);
// The counters' epoch of a database's DecimalId state (decimal_state()).
std::atomic<uint64_t>& decimal_epoch(DecimalState* state);

// Raises the node state to a replayed one (WAL redo, in the startup
// process): the mark, the floor new slots resume above, the counter floors
// and layout marks only ever go up; the state file is written too.
// `adopted`: the state of another server (shardid_adopt_state(), checked
// by adopt_check()), whose histories are recorded beside the node's own;
// WAL-logged, and flushed before it returns.
void replay_node_state(const NodeState& state, bool adopted = false);
// In the postmaster (shmem_init()): at its exit after a clean shutdown, the
// node's time mark comes down to the last issued tick (persist.cpp).
void settle_mark_at_clean_exit();

// Values taken from the extension's sequences that must never come back on
// this node: DecimalId generator ids and call-number run ids.
// (Each is a counter floor of the node state: src/core/state/node_state.hpp.)
enum class NodeCounter : int {
    generator = node_state_field("generator"),
    run = node_state_field("run"),
};
constexpr bool is_counter_floor(NodeCounter c)
{
    return int(c) >= 0 && node_state_fields[int(c)].kind == NodeStateFieldKind::counter_floor;
}
static_assert(is_counter_floor(NodeCounter::generator) && is_counter_floor(NodeCounter::run),
              "every NodeCounter is a counter floor of the node state");
// What people call it, in messages.
constexpr const char* node_counter_name(NodeCounter which) { return node_state_fields[int(which)].counts; }
// The highest value of that kind this node ever took (-1: none).
int64 counter_floor(NodeCounter which);
// Records `value` as taken, durably (the record flushed and, with
// synchronous replication, confirmed, as for any ID: confirm_covered()), if
// it is above every value of its kind taken before, and returns true; false
// if it is not (then it must not be used).
bool claim_counter(NodeCounter which, int64 value);

// The next call-number run id for the key with fingerprint `key`, this
// node being the one that hands them out (node ids from settings, a Citus
// coordinator): in the key's era (call_era_take(), src/core/callnum.hpp),
// a new era above `above`'s too (-1: none; a Citus worker's own floor: the
// eras it used before it joined), recorded with the node's run floor in one
// durable record before it returns. 2200H when no era is left.
int64 take_call_run(int64 key, int64 above);
// n of them at once, in one record of the node state (runs: n values).
void take_call_runs(int64 key, int64 above, int n, int64* runs);
[[noreturn]] void raise_call_eras_used_up();

}  // namespace shardid::pg
