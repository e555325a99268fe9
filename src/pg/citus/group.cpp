// This node's Citus group id as a backend reads it from Citus' metadata
// (src/pg/citus/group.hpp): kept until the metadata changes (Citus'
// triggers on pg_dist_local_group and pg_dist_node send a relcache
// invalidation of the table on every change, and the callback below
// forgets the group), and every node's group id in pg_dist_node, for
// explicit shards. A cache holds only committed state: rows this
// transaction wrote count for this transaction only.
#include "pg/citus/group.hpp"

#include "pg/base/invalidation.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/metadata.hpp"

extern "C" {
#include "access/xact.h"
#include "catalog/pg_namespace.h"
#include "miscadmin.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

namespace shardid::pg {

namespace {

// This backend's group id and the database it was read in (-1: not read);
// and one read from rows this transaction wrote, for this transaction only.
int64 group_id = -1;
Oid group_database = InvalidOid;
int64 txn_group_id = -1;
TransactionId txn_group_xid = InvalidTransactionId;

// The relations the group was read from, whose invalidation forgets it;
// whether they were looked up (InvalidOid then: no Citus in this
// database), until pg_class changes (Citus' tables may come or go).
Oid local_group_relid = InvalidOid;
Oid dist_node_relid = InvalidOid;
bool relids_known = false;
bool callback_registered = false;

// Every node's group id in pg_dist_node, for explicit shards: a declared
// shard equal to another node's group would share that group's field
// values. -1: not read (read before the next ID, outside generation);
// kept only while the rows read were committed ones.
constexpr int max_groups = 4096;
int32 groups[max_groups];
int n_groups = -1;
bool groups_overflow = false;
bool n_groups_stale = false;  // read from uncommitted rows: read again

// Changes of Citus' node metadata this backend has seen (each
// invalidation of pg_dist_local_group or pg_dist_node): what was confirmed
// against the metadata before one is confirmed again after it.
uint64 metadata_changes = 0;

void forget_group(Oid relid)
{
    if (relid == InvalidOid || relid == local_group_relid || relid == dist_node_relid) {
        metadata_changes++;
        // Resolved again when next asked: Citus may have been dropped
        // and created again.
        local_group_relid = InvalidOid;
        dist_node_relid = InvalidOid;
        relids_known = false;
        group_id = -1;
        group_database = InvalidOid;
        txn_group_id = -1;
        txn_group_xid = InvalidTransactionId;
        n_groups = -1;
    }
}

// A relation was made, changed or dropped: Citus' tables are looked up
// again (a negative lookup is cached only until then).
void forget_relids(Datum, SyscacheId, uint32) { relids_known = false; }

// Registers forget_group() for Citus' node metadata of this database.
// Without Citus, the two lookups that find no table run once per change
// of pg_class, not once per call (obfuscate_id() asks on every call).
void watch_metadata()
{
    if (!callback_registered) {
        on_relation_change(forget_group);
        CacheRegisterSyscacheCallback(RELNAMENSP, forget_relids, (Datum)0);
        callback_registered = true;
    }
    if (relids_known)
        return;
    const Oid local = get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE);
    const Oid nodes = get_relname_relid("pg_dist_node", PG_CATALOG_NAMESPACE);
    // Citus' tables appearing (CREATE EXTENSION citus) is a change too.
    if (local != local_group_relid || nodes != dist_node_relid)
        metadata_changes++;
    local_group_relid = local;
    dist_node_relid = nodes;
    relids_known = true;
}

// Reads every group id of pg_dist_node into groups (none without Citus).
// Rows this transaction wrote are used for this ID only: read again next
// time.
void read_groups()
{
    bool uncommitted = false;
    int n = 0;
    bool overflow = false;
    scan_int_column("pg_dist_node", "groupid", &uncommitted, [&](int32 g) {
        for (int i = 0; i < n; i++)
            if (groups[i] == g)
                return true;
        if (n == max_groups) {
            overflow = true;
            return false;
        }
        groups[n++] = g;
        return true;
    });
    n_groups = n;
    groups_overflow = overflow;
    if (uncommitted)
        n_groups_stale = true;
}

}  // namespace

// The group id this generation may use (-1: read it first).
int64 usable_group_id()
{
    if (group_id >= 0 && group_database == MyDatabaseId)
        return group_id;
    if (txn_group_id >= 0 && TransactionIdIsValid(txn_group_xid) && txn_group_xid == GetTopTransactionIdIfAny())
        return txn_group_id;
    return -1;
}

// Reads this node's group id into group_id (NoGroup::none), or says why
// there is none. Reads only: works on a standby and in a read-only
// transaction.
NoGroup read_group_id(int64* found, int* rows_out)
{
    int64 local;
    int rows;
    bool uncommitted = false;
    watch_metadata();
    if (!local_group(&local, &rows, &uncommitted))
        return NoGroup::no_citus;
    *found = local;
    *rows_out = rows;
    if (rows != 1)
        return NoGroup::local_rows;
    // A worker's metadata names the coordinator too (group 0): without it
    // nothing can confirm this server as its group's (the fence, the
    // counters and the key ring all ask the coordinator), so it refuses at
    // once rather than wait for an answer that cannot come.
    bool known = false;
    bool coordinator = local == 0;
    scan_int_column("pg_dist_node", "groupid", &uncommitted, [&](int32 g) {
        known = known || g == local;
        coordinator = coordinator || g == 0;
        return !(known && coordinator);
    });
    if (!known)
        return NoGroup::not_in_metadata;
    if (!coordinator)
        return NoGroup::no_coordinator;
    // Kept for the backend's life only when committed: a cache holds only
    // committed state.
    if (!uncommitted) {
        group_id = local;
        group_database = MyDatabaseId;
    } else {
        txn_group_id = local;
        txn_group_xid = GetTopTransactionIdIfAny();
    }
    return NoGroup::none;
}

bool another_group(int64 value, int64 own, bool* unchecked)
{
    *unchecked = groups_overflow || n_groups < 0;
    bool other = *unchecked;
    for (int i = 0; !other && i < n_groups; i++)
        other = groups[i] == value && groups[i] != own;
    return other;
}

void refresh_groups()
{
    if (n_groups < 0 || n_groups_stale) {
        n_groups_stale = false;
        read_groups();
    }
}

// Raises 55000 saying why (not none).
void raise_no_group(NoGroup why, int64 local, int rows)
{
    switch (why) {
    case NoGroup::none: return;
    case NoGroup::no_citus:
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("shardid.node_id_source is citus, but Citus is not installed in this database"),
                        errdetail("The node id is the node's Citus group id, read from Citus' metadata "
                                  "(pg_dist_local_group)."),
                        errhint("Run CREATE EXTENSION citus in this database, or set shardid.node_id_source to "
                                "setting or etcd in postgresql.conf and restart the server.")));
        break;
    case NoGroup::local_rows:
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("Citus' metadata of this node holds %d group ids", rows),
                        errdetail("pg_dist_local_group must hold exactly one row: the node's group id."),
                        errhint("Repair Citus' metadata on this node before generating IDs.")));
        break;
    case NoGroup::not_in_metadata:
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("this node's Citus group %lld is not in the cluster's metadata", (long long)local),
                        errdetail("A node gets its group id when it is added to a Citus cluster; until then its "
                                  "group id is no one's own, and IDs under it could equal another node's."),
                        errhint("On the coordinator, run SELECT citus_set_coordinator_host(...) once and "
                                "SELECT citus_add_node(...) for each worker, then generate IDs again.")));
        break;
    case NoGroup::no_coordinator:
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("the Citus coordinator of this node's group %lld is not in the cluster's metadata",
                               (long long)local),
                        errdetail("A worker issues IDs only while the coordinator confirms it as its group's "
                                  "server, and the metadata does not say where the coordinator is."),
                        errhint("On the coordinator, run SELECT citus_set_coordinator_host(...) once and "
                                "SELECT citus_add_node(...) for each worker, then generate IDs again.")));
        break;
    }
}

uint64 citus_metadata_changes()
{
    watch_metadata();
    return metadata_changes;
}

const char* citus_group_problem(int64* group)
{
    int64 local = -1;
    int rows = 0;
    *group = -1;
    switch (read_group_id(&local, &rows)) {
    case NoGroup::none: *group = local; return nullptr;
    case NoGroup::no_citus: return "Citus is not installed in this database";
    case NoGroup::local_rows: return "pg_dist_local_group does not hold exactly one row";
    case NoGroup::not_in_metadata:
        return psprintf("this node's Citus group %lld is not in the cluster's metadata (pg_dist_node)",
                        (long long)local);
    case NoGroup::no_coordinator:
        return "the cluster's metadata (pg_dist_node) has no coordinator: run citus_set_coordinator_host() on it";
    }
    return nullptr;
}

}  // namespace shardid::pg
