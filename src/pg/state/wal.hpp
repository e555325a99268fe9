// The node state in WAL: a custom WAL resource manager ("shardid", id 150
// of the range PostgreSQL sets aside for extensions, 128..255), registered
// when shardid is preloaded. Every change of the persisted node state (the
// high-water mark's renewal, about once a second while IDs are generated;
// a new DecimalId generator id or call-number run id; a coarse layout's
// mark) is WAL-logged before any ID it covers is returned. Its redo, on
// every standby and in crash recovery, raises the node state in shared
// memory and in the state file, so a promoted standby resumes above every
// ID the old primary issued whose WAL it received.
#pragma once

#include "pg/state/state_file.hpp"
#include "pg/base/pg.hpp"

namespace shardid::pg {

constexpr int shardid_rmgr_id = 150;

// From _PG_init: registers the resource manager (only possible while
// shared_preload_libraries is being processed).
void wal_init();

// Is the resource manager registered in this server?
bool wal_registered();

// Are node-state changes WAL-logged (registered, and shardid.wal_log_mark on)?
bool wal_logging();

// WAL-logs the node state (call before the state file is written).
// Returns the end of the record (flush and confirm up to it before any ID
// it covers is handed out).
XLogRecPtr wal_log_state(const NodeState& state);

// Refuses generation on a server in recovery (SQLSTATE 25006).
void refuse_on_standby();

}  // namespace shardid::pg
