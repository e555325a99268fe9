// The node id from Citus (shardid.node_id_source = citus): the node's
// group id in the current database's Citus metadata
// (pg_catalog.pg_dist_local_group), 0 for the coordinator and 1..N for the
// workers. Citus takes group ids from a sequence (pg_dist_groupid_seq) and
// never gives one out twice, and a streaming standby has its primary's
// (its WAL-carried mark keeps a failover above the primary's IDs); but a
// server that is no longer its group's (an old primary still running, a
// removed worker) still reads its old group, so a worker issues only under
// the coordinator's confirmation, fenced (src/pg/citus/fence.cpp).
// The other sources: src/pg/source/node_source.cpp.
//
// A group id counts only once the node is in the metadata it names: a node
// that was never added to a cluster has group 0, the coordinator's, so
// its group must have a row in pg_dist_node. Each backend reads its group
// outside generation (wait()) and keeps it only until Citus' metadata
// changes: Citus' triggers on pg_dist_local_group and pg_dist_node send a
// relcache invalidation of the table on every change (as its own metadata
// cache relies on), the callback below forgets the group, and refresh()
// takes the invalidations before every ID. So a node that joins a cluster
// (group 0 of a single-node cluster becoming a worker's), is removed or
// updated issues its next ID under the group the committed metadata
// names, never under the old one.
#include "pg/citus/citus.hpp"
#include "pg/state/shared.hpp"
#include "pg/base/invalidation.hpp"

#include <cerrno>
#include <cstdlib>

extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/syscache.h"
#include "access/genam.h"
#include "access/xact.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_namespace.h"
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

#include "core/schemes.hpp"
#include "pg/base/catalog.hpp"
#include "pg/base/guard.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/wait_event.hpp"
#include "pg/citus/declared.hpp"
#include "pg/citus/spare_runs.hpp"
#include "pg/citus/metadata.hpp"
#include "pg/citus/fence.hpp"

extern "C" {
#include "catalog/pg_authid_d.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/timestamp.h"
}

namespace shardid::pg {

namespace {

uint32 fence_wait_event = 0;  // a generator waiting for the Citus fence

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

// The group id this generation may use (-1: read it first).
int64 usable_group_id()
{
    if (group_id >= 0 && group_database == MyDatabaseId)
        return group_id;
    if (txn_group_id >= 0 && TransactionIdIsValid(txn_group_xid) && txn_group_xid == GetTopTransactionIdIfAny())
        return txn_group_id;
    return -1;
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

// Why this node has no group id to use, when it has none.
enum class NoGroup { none, no_citus, local_rows, not_in_metadata, no_coordinator };

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

class CitusSource final : public NodeIdSource {
public:
    const char* name() const override { return "citus"; }

    bool hold(SourceTicket* ticket, Status* status) const override
    {
        const int64 id = usable_group_id();
        if (id < 0) {
            // Read outside generation, by wait(), which may raise.
            *status = Status::fail(Error::not_claimed, "this node's Citus group id is not read yet");
            return false;
        }
        *ticket = SourceTicket{0, id};
        // A worker issues only under the coordinator's confirmation that
        // this server is its group's primary (src/pg/citus/fence.cpp);
        // checked again in confirm(), after the ID is covered.
        if (id > 0) {
            CitusFence* fence = citus_fence_of_database();
            if (fence != nullptr)
                citus_fence_wanted(fence);
            if (!citus_fence_holds(fence, id, -1)) {
                *status = unconfirmed(id);
                return false;
            }
        }
        return true;
    }

    bool node_id(const Layout& fit, const SourceTicket& ticket, uint64_t* id, Status* status) const override
    {
        if (ticket.id < 0 || uint64_t(ticket.id) > fit.shard_max()) {
            *status = Status::fail(Error::not_configured, "this node's Citus group id %lld does not fit the %s layout",
                                   (long long)ticket.id, fit.name)
                          .with_detail("With shardid.node_id_source = citus the node id is the Citus group id; "
                                       "the %s layout's node field holds 0 to %llu.",
                                       fit.name, (unsigned long long)fit.shard_max())
                          .with_hint("Use a layout with more shard bits on this cluster.");
            return false;
        }
        *id = uint64_t(ticket.id);
        return true;
    }

    // An explicit shard is this node's only when shardid.shards declares
    // it: Citus has no owner for shard field values, and the shards of a
    // distributed table are not the values of an ID's shard field.
    bool hold_value(SlotState*, const Layout&, uint64_t value, bool given, SourceTicket* ticket,
                    Status* status) const override
    {
        if (!given)
            return true;
        if (shards_setting == nullptr || shards_setting[0] == '\0') {
            *status = Status::fail(Error::not_configured, "shard %llu has no owner on this Citus node",
                                   (unsigned long long)value)
                          .with_detail("With shardid.node_id_source = citus each node owns its group id; an "
                                       "explicit shard is this node's only when shardid.shards lists it, and "
                                       "shardid.shards is not set.")
                          .with_hint("Let the default use the node's group id (no shard argument), or list the "
                                     "shards this node owns in shardid.shards in postgresql.conf and reload.");
            return false;
        }
        if (!declared_shard(value, status))
            return false;
        // Declared here, but another node's group id: that node writes the
        // same value into the same field.
        const int64 own = usable_group_id();
        bool other = groups_overflow || n_groups < 0;
        for (int i = 0; !other && i < n_groups; i++)
            other = groups[i] == int64(value) && groups[i] != own;
        if (other) {
            note_claim_refusal(ClaimRefusal::outside_shards);
            *status = Status::fail(Error::not_configured,
                                   groups_overflow || n_groups < 0
                                       ? "shard %llu cannot be checked against the cluster's group ids"
                                       : "shard %llu is the Citus group id of another node",
                                   (unsigned long long)value)
                          .with_detail("With shardid.node_id_source = citus each node writes its group id into "
                                       "the shard field; shardid.shards = '%s' declares this value, and it is, "
                                       "or could not be shown not to be, another node's group in pg_dist_node.",
                                       shards_setting)
                          .with_hint("Declare shards above the highest group id the cluster will use, or write "
                                     "the shard's rows on the node whose group it is.");
            return false;
        }
        // A worker's counts once the coordinator recorded it (src/pg/citus/declared.hpp).
        return ticket->id <= 0 || citus_declaration_usable(value, &ticket->declaration, status);
    }

    bool confirm(const SourceTicket& ticket, int64_t tick_ms, Status* status) const override
    {
        if (ticket.id <= 0)
            return true;
        // Orders this ID's step of its slot before the fence is read, as
        // the etcd source's confirm() does.
        std::atomic_thread_fence(std::memory_order_seq_cst);
        const CitusFence* fence = citus_fence_of_database();
        if (!citus_fence_holds(fence, ticket.id, tick_ms)) {
            *status = unconfirmed(ticket.id);
            return false;
        }
        // Read after the window (the worker stores a new declaration
        // before a new window).
        return citus_declaration_holds(fence, ticket.declaration, status);
    }
    void wait(TimestampTz since, const Status& why) const override
    {
        if (usable_group_id() < 0) {
            int64 local = -1;
            int rows = 0;
            // Read first, then raise: C++ fixes no order among a call's
            // arguments, so local and rows must not be passed beside the
            // call that fills them.
            const NoGroup no = read_group_id(&local, &rows);
            raise_no_group(no, local, rows);
            return;
        }
        // Not confirmed (yet): the fence's worker runs and is woken. A new
        // server of a group waits up to a fence for the previous one's.
        CitusFence* fence = citus_fence_need();
        const int bound = 2 * citus_fence_ms + 5000;
        char state[32], error[256];
        citus_fence_report(fence, state, sizeof state, error, sizeof error);
        // Refused by an answer given since the wait began (the metadata
        // names another server, or none): at once.
        const bool refused = strcmp(state, "refused") == 0 && fence->answered_at.load() > since;
        if (refused || TimestampDifferenceExceeds(since, GetCurrentTimestamp(), bound)) {
            const bool monitor = superuser() || has_privs_of_role(GetUserId(), ROLE_PG_MONITOR);
            ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), errmsg("%s", why.message),
                            errdetail("%s The fence is %s%s%s.", why.detail, state, monitor && error[0] ? ": " : "",
                                      monitor ? error : ""),
                            errhint("%s", why.hint)));
        }
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 20,
                        wait_event("ShardidCitusFence", &fence_wait_event));
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    }
    void waited() const override {}
    // Citus' metadata changes committed by other backends, before the ID
    // (cheap when there are none: a read of this backend's queue state).
    void refresh() const override
    {
        AcceptInvalidationMessages();
        if (n_groups < 0 || n_groups_stale) {
            n_groups_stale = false;
            read_groups();
        }
    }
    // DecimalId generator ids and call-number run ids have one authority
    // on a Citus cluster, the coordinator (group 0): it takes them from its
    // own sequences, and a worker asks it for each one
    // (citus_counter_from_coordinator()). Every node's sequences start at the
    // same value, so a worker's own would repeat the coordinator's.
    int64 take_counter(NodeCounter which, int64 key_fingerprint) const override
    {
        int64 local = -1;
        int rows = 0;
        const NoGroup why = read_group_id(&local, &rows);
        raise_no_group(why, local, rows);
        if (local == 0)
            return from_node_sequence;
        // A run id of a key era from this database's spares (taken from the
        // coordinator ahead of need: spare_runs.cpp).
        if (which == NodeCounter::run && key_fingerprint != 0)
            return citus_spare_run(key_fingerprint);
        return citus_counter_from_coordinator(which, counter_floor(which), key_fingerprint);
    }

private:
    static Status unconfirmed(int64 group)
    {
        return Status::fail(Error::not_claimed,
                            "the Citus coordinator has not confirmed this server as the primary of group %lld",
                            (long long)group)
            .with_detail("A Citus worker issues IDs only while the coordinator's metadata names it for its group, "
                         "confirmed within shardid.citus_fence.")
            .with_hint("If this server is no longer the group's primary (a failover, citus_update_node(), "
                       "citus_remove_node()), stop it; otherwise check that the coordinator is up. "
                       "shardid_coordination() shows the fence's last error.");
    }
};

const CitusSource citus;

}  // namespace

const NodeIdSource& citus_source() { return citus; }

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

void citus_init()
{
    citus_shmem_init();
    register_citus_source(citus_source());
}

}  // namespace shardid::pg
