// Layouts by name: the presets compiled into the core, and users' layouts
// from this database's shardid_user_layout table (created by create_layout),
// cached per backend, and their dump carriers. Generation is
// src/pg/generate/generate.hpp.
#pragma once

#include "core/engine.hpp"
#include "core/layout.hpp"
#include "pg/base/pg.hpp"

namespace shardid::pg {

// A layout ready for use: its shape, and (once generated from) its slot.
struct LayoutEntry {
    Layout layout;
    char name[max_name_len + 1];
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

// The schema of the layout carriers (the extension's; sql/shardid--1.2.sql).
inline constexpr const char* carrier_schema_name = "shardid_carrier";

// The SQL body of a layout's "shardid_layout$<name>"() function, which
// carries its definition through pg_dump ahead of the catalog's rows.
char* carrier_body(const Layout& layout);
// That function's name: "shardid_layout$<name>", or for names too long for
// an identifier, their first 24 characters and a hash of the whole.
char* carrier_name(const char* name);

// The entry of a compiled-in preset.
LayoutEntry& preset_entry(const Layout& preset);

// Before DROP EXTENSION shardid: every carrier is dropped with the
// extension, also those Citus distributed (src/pg/generate/carrier_deps.cpp). The
// utility hook (src/pg/module.cpp) calls it with every statement.
void carriers_before_drop(Node* stmt);

}  // namespace shardid::pg
