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
// cache relies on), the callback in src/pg/citus/group.cpp forgets the group, and refresh()
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
#include "pg/citus/group.hpp"

extern "C" {
#include "catalog/pg_authid_d.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/timestamp.h"
}

namespace shardid::pg {

namespace {

uint32 fence_wait_event = 0;  // a generator waiting for the Citus fence

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
        bool unchecked = false;
        if (another_group(int64(value), usable_group_id(), &unchecked)) {
            note_claim_refusal(ClaimRefusal::outside_shards);
            *status = Status::fail(Error::not_configured,
                                   unchecked ? "shard %llu cannot be checked against the cluster's group ids"
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
        refresh_groups();
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

void citus_init()
{
    citus_shmem_init();
    register_citus_source(citus_source());
}

}  // namespace shardid::pg
