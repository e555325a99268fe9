// This node's Citus group id, as a backend reads it from the current
// database's Citus metadata and keeps it until that changes
// (src/pg/citus/group.cpp); the node-id source built on it:
// src/pg/citus/source.cpp.
#pragma once

#include "pg/base/pg.hpp"

namespace shardid::pg {

// The group id this generation may use (-1: read it first, outside
// generation).
int64 usable_group_id();

// Why this node has no group id to use, when it has none.
enum class NoGroup { none, no_citus, local_rows, not_in_metadata, no_coordinator };

// Reads this node's group id into *found (NoGroup::none), or says why
// there is none (*found and *rows_out: what pg_dist_local_group held).
// Reads only: works on a standby and in a read-only transaction.
NoGroup read_group_id(int64* found, int* rows_out);
// Raises 55000 saying why (returns for NoGroup::none).
void raise_no_group(NoGroup why, int64 local, int rows);

// Whether shard `value` is another node's group id in pg_dist_node (own:
// this node's), or cannot be shown not to be (*unchecked: the groups were
// not read, or more than can be kept).
bool another_group(int64 value, int64 own, bool* unchecked);
// Every node's group id read again when it is not known, or was read from
// rows this transaction wrote (before each ID, outside generation).
void refresh_groups();

}  // namespace shardid::pg
