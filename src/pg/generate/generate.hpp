// Generation: the one loop every generator of a "time | shard | sequence"
// layout goes through (TraceId, Snowflake, Instagram, eight-byte ids, user
// layouts, UUIDv7, opaque ids). Scheme files call it; it calls the core
// engine (src/core/engine.hpp), the persistence (src/pg/state/shmem.hpp) and the
// node-id source (src/pg/source/node_source.hpp), each once per ID, and never
// calls back up into a scheme or layout file.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/clock.hpp"
#include "core/engine.hpp"
#include "core/layout.hpp"
#include "core/status.hpp"
#include "pg/base/pg.hpp"

namespace shardid::pg {

// Where a generator's shard comes from: this node's id (the node-id
// source), an argument of the call (the node's id when that argument is
// NULL), or nowhere (a layout without a shard field).
struct ShardFrom {
    enum class Source { node_id, argument, none } source;
    int argno;
    static constexpr ShardFrom node_id() { return ShardFrom{Source::node_id, 0}; }
    static constexpr ShardFrom argument(int argno) { return ShardFrom{Source::argument, argno}; }
    static constexpr ShardFrom none() { return ShardFrom{Source::none, 0}; }
};

// A shard that travels outside the engine's word (UUIDv7's rand_b): checked
// against the shard field of `fit` (a node id is also confirmed like any
// other), and given back in *shard, while the engine's word has no shard.
// `check` words the refusal of a shard given as an argument (nullptr:
// check_shard()).
using ShardCheck = bool (*)(const Layout& fit, int64_t shard, const char* what, Status* status);
struct OuterShard {
    const Layout* fit;
    uint64_t* shard;
    ShardCheck check;
};

// Issues the next ID of `layout`, whose node-wide slot is cached in
// slot_cache, for the shard `shard` says.
Datum generate(FunctionCallInfo fcinfo, const Layout& layout, SlotState*& slot_cache, ShardFrom shard);

// The same, returning the layout's raw word (for schemes that repack it).
uint64_t generate_raw(FunctionCallInfo fcinfo, const Layout& layout, SlotState*& slot_cache, ShardFrom shard,
                      OuterShard outer = {nullptr, nullptr, nullptr});

// The clock generators use inside PostgreSQL: the wall clock, whose waits
// for the next tick sleep on the backend's latch (wait event "Extension",
// or "ShardidNextTick" from PostgreSQL 17) and give up as soon as an
// interrupt (cancel, terminate, statement_timeout, shutdown) is pending, so
// that generate_raw() serves it with CHECK_FOR_INTERRUPTS() outside C++
// scope. Its wait event is resolved before generate_raw() enters guarded()
// (on PostgreSQL 17 making it can ereport), so that pause() calls nothing
// that can. WaitLatch() itself does not ereport; on postmaster death it
// exits the process (WL_EXIT_ON_PM_DEATH).
//
// With node ids from etcd no generator waits longer than shardid.etcd_wait
// for anything (docs/coordination.md, "What a generator does without a
// claim"): a wait for the next tick longer than `max_wait_ms` (0: no bound;
// a second at least) is not begun; pause() gives up at once and keeps when
// the tick comes (`wanted_ms`), for generate_raw()'s error.
//
// With node ids from etcd (and ticks up to a second), every ID's time is
// read through the fence clock (`through_fence`): the fence's reading,
// which confirm() then needs, comes with it (one clock read an ID, not
// two), and the wall clock is that reading plus the wall clock's offset to
// it, read again every 10 ms (a step of the wall clock shows within 10 ms;
// a suspended machine's too, which both clocks count).
struct LatchClock : SystemClock {
    uint32_t wait_event;
    int64_t max_wait_ms = 0;
    bool through_fence = false;
    mutable int64_t wanted_ms = 0;      // a wait given up for its length: the wall ms it waited for (0: none)
    mutable int64_t fence_read_ms = 0;  // through_fence: the fence clock's last reading
    int64_t now_ms() const;
    bool pause(int64_t ms_left) const;
};
static_assert(std::is_trivially_destructible_v<LatchClock>,
              "a clock lives inside guarded(): nothing there may need a destructor that an ereport would skip");

}  // namespace shardid::pg
