// The node's history (src/core/state/node_state.hpp: history, awaiting,
// adopted) as the glue keeps it: drawn when a data directory first holds
// none, awaited in a directory pg_upgrade wrote into, adopted from the
// state of the server a database came from, and checked against the
// histories each database records in its table shardid_lineage before
// anything is issued there (docs/install.md, "Upgrading PostgreSQL").
// Every data directory made anew (pg_upgrade, a dump restored into a new
// cluster, a logical-replication copy) starts without shardid.hwm: these
// are what keep it from issuing again what its predecessor issued.
#pragma once

#include "core/state/node_state.hpp"
#include "pg/base/pg.hpp"

namespace shardid::pg {

// From _PG_init under pg_upgrade (-b): in the data directory pg_upgrade
// writes into (the one holding pg_upgrade_output.d), the node state is
// marked as awaiting its predecessor's, so that the upgraded server issues
// nothing until that is adopted. Nothing in the old server's directory.
void mark_upgrade_target();

// At attach (shared memory made, the state file read, caller holds
// AddinShmemInitLock): a data directory whose state has no history yet,
// other than a standby's (it replays its primary's), draws one and writes
// the state file at once, so that every database's shardid_lineage row
// names a history that survives a restart.
void begin_history_if_none(NodeState& st);

// Before an ID, a generator id or a run id is issued in this database (the
// caller's function lives in the extension's schema): the node does not
// await its predecessor's state, and every history this database's
// shardid_lineage names is the node's own or adopted; otherwise 55000.
// Cached per backend until the table or the node's histories change: one
// atomic read in the steady state.
void confirm_history(FunctionCallInfo fcinfo);

// Redo: a standby takes its primary's history, adopted histories and wait.
// Caller holds state_lock.
void replay_histories(const NodeState& st);

// Adopting the state of another server (replay_node_state(.., true)):
// records its history and the ones it adopted, ends the wait, and for a
// pg_upgrade target takes its etcd release token (the new directory
// continues the old one). Caller holds state_lock.
void adopt_histories_locked(const NodeState& from);

// The node's history fields (history, began, awaiting, adopted; the rest
// empty), read under state_lock.
NodeState known_histories();

// The histories this database's shardid_lineage names that the node neither
// is nor adopted (up to max, in *n); false when the table is missing (an
// install older than 1.4).
bool unknown_histories(Oid nsp, int64_t* out, int max, int* n);

}  // namespace shardid::pg
