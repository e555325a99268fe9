// Layouts by name: the presets compiled into the core, and users' layouts
// from this database's shardid_user_layout table (created by create_layout).
#pragma once

#include "core/engine.hpp"
#include "core/layout.hpp"
#include "pg/pg.hpp"

namespace shardid::pg {

// A layout ready for use: its shape, and (once generated from) its slot.
struct LayoutEntry {
    Layout layout;
    char name[64];
    SlotState* slot;
};

// The layout named by text argument `argno` of this call, cached in
// fn_extra; ereports for NULL or unknown names.
LayoutEntry& layout_arg(FunctionCallInfo fcinfo, int argno);

// Refuses (22023) a layout name that breaks the naming rule.
void check_layout_name(const char* name, int len);

// A user layout from its catalog columns, checked as create_layout() checks
// it (ereports, with SQLSTATE 22023, for anything the engine cannot use).
Layout user_layout(const char* name, TimestampTz epoch, const Interval* unit, int32 time_bits, int32 shard_bits,
                   int32 sequence_bits);

// The SQL body of a layout's "shardid_layout$<name>"() function, which
// carries its definition through pg_dump ahead of the catalog's rows.
char* carrier_body(const Layout& layout);
// That function's name: "shardid_layout$<name>", or for names too long for
// an identifier, their first 24 characters and a hash of the whole.
char* carrier_name(const char* name);

// The entry of a compiled-in preset.
LayoutEntry& preset_entry(const Layout& preset);

// Where a generator's shard comes from: shardid.node_id, an argument of the
// call (shardid.node_id when that argument is NULL), or nowhere (a layout
// without a shard field, or one carried outside the engine's word).
struct ShardFrom {
    enum class Source { node_setting, argument, none } source;
    int argno;
    static constexpr ShardFrom node_setting() { return ShardFrom{Source::node_setting, 0}; }
    static constexpr ShardFrom argument(int argno) { return ShardFrom{Source::argument, argno}; }
    static constexpr ShardFrom none() { return ShardFrom{Source::none, 0}; }
};

// Issues the next ID of `layout`, whose node-wide slot is cached in
// slot_cache, for the shard `shard` says.
Datum generate(FunctionCallInfo fcinfo, const Layout& layout, SlotState*& slot_cache, ShardFrom shard);

// A shard that travels outside the engine's word (UUIDv7's rand_b): checked
// against `fit`'s shard field (a node id also confirmed like any other),
// given back in *shard, while the engine's word has no shard.
struct OuterShard {
    const Layout* fit;
    uint64_t* shard;
};

// The same, returning the layout's raw word (for schemes that repack it).
uint64_t generate_raw(FunctionCallInfo fcinfo, const Layout& layout, SlotState*& slot_cache, ShardFrom shard,
                      OuterShard outer = {nullptr, nullptr});

// Builds the OUT-parameter record of the calling function.
Datum return_record(FunctionCallInfo fcinfo, Datum* values, bool* nulls);

}  // namespace shardid::pg
