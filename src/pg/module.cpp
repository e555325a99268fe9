// PG_MODULE_MAGIC, _PG_init and the GUCs.
#include "pg/pg.hpp"

extern "C" {
#include "utils/guc.h"
}

#include "core/decimal.hpp"
#include "core/eightbyte.hpp"
#include "core/schemes.hpp"
#include "core/uuidv7.hpp"
#include "pg/coordinator.hpp"
#include "pg/settings.hpp"
#include "pg/shmem.hpp"
#include "pg/wal.hpp"

extern "C" {
PG_MODULE_MAGIC;
void _PG_init(void);
}

namespace shardid::pg {

int node_id = node_id_unset;
int max_clock_lead_ms = 10000;
int clock_offset_ms = 0;
int launch_id = -1;
int cluster_id = 0;
char* call_number_key = nullptr;
bool wal_log_mark = true;

bool node_shard(const Layout& layout, uint64_t* shard, uint64_t* claim, Status* status)
{
    if (coord_enabled())
        return coord_node_shard(layout, shard, claim, status);
    *claim = 0;
    if (node_id == node_id_unset) {
        *status = Status::fail(Error::not_configured, "shardid.node_id is not set")
                      .with_detail("Generating %s values needs this node's id, which must differ between nodes.",
                                   layout.name)
                      .with_hint("As a superuser, set it in postgresql.conf or run ALTER SYSTEM SET shardid.node_id "
                                 "= <0..%llu>; then SELECT pg_reload_conf();",
                                 (unsigned long long)layout.shard_max());
        return false;
    }
    if (!check_shard(layout, node_id, "shardid.node_id", status)) {
        status->with_hint("Set shardid.node_id to a value between 0 and %llu in postgresql.conf and reload.",
                          (unsigned long long)layout.shard_max());
        return false;
    }
    *shard = uint64_t(node_id);
    return true;
}

}  // namespace shardid::pg

void _PG_init(void)
{
    using namespace shardid::pg;

    // Where the node id comes from first: shardid.node_id's check reads it.
    coord_define_settings();
    DefineCustomIntVariable(
        "shardid.node_id", "This node's id in shardid IDs (TraceId node, default Snowflake/Instagram shard).",
        "-1 means unset: generators that need it then fail (with shardid.node_id_source = etcd: claim the lowest "
        "free id). Each node must have its own value, which must fit the field of the scheme that uses it.",
        &node_id, node_id_unset, node_id_unset, INT_MAX, PGC_SUSET, 0, coord_check_node_id, NULL, NULL);
    DefineCustomIntVariable("shardid.max_clock_lead",
                            "How far the logical clock may run ahead of the wall clock after it stepped back.",
                            "When a tick's sequence is used up while the wall clock is behind the last issued ID, "
                            "the logical clock moves one tick ahead; past this lead, generation fails instead.",
                            &max_clock_lead_ms, 10000, 0, INT_MAX, PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
    DefineCustomIntVariable("shardid.clock_offset_ms",
                            "Testing aid: milliseconds added to the wall clock this backend reads.",
                            "Negative values simulate a clock that stepped back. Leave at 0 in production.",
                            &clock_offset_ms, 0, INT_MIN, INT_MAX, PGC_SUSET, GUC_UNIT_MS, NULL, NULL, NULL);
    // The ranges come from the core (the descriptions live as long as the GUCs).
    static char launch_desc[80], cluster_desc[80];
    snprintf(launch_desc, sizeof launch_desc, "DecimalId launch id of this deployment (1..%lld; 0 for tests).",
             (long long)shardid::decimal_launch_max);
    snprintf(cluster_desc, sizeof cluster_desc, "Cluster id in eight-byte ids (0..%u).", unsigned(shardid::eight_cluster_max));
    DefineCustomIntVariable("shardid.launch_id", launch_desc, "-1 means unset: next_decimal_id() then fails.",
                            &launch_id, -1, -1, int(shardid::decimal_launch_max), PGC_SUSET, 0, NULL, NULL, NULL);
    DefineCustomIntVariable("shardid.cluster_id", cluster_desc, NULL, &cluster_id, 0, 0, int(shardid::eight_cluster_max),
                            PGC_SUSET, 0, NULL, NULL, NULL);
    static char uuid_desc[96];
    snprintf(uuid_desc, sizeof uuid_desc, "Width of the shard field at the top of a UUIDv7's rand_b (0..%u).",
             shardid::uuidv7_max_shard_bits);
    DefineCustomIntVariable("shardid.uuidv7_shard_bits", uuid_desc,
                            "0: no shard field, rand_b is all random. Otherwise next_uuidv7() puts the node id there, "
                            "next_uuidv7(shard) the shard; decode with uuidv7_decode(id, shard_bits).",
                            &uuidv7_shard_bits, 0, 0, int(shardid::uuidv7_max_shard_bits), PGC_SUSET, 0, NULL, NULL,
                            NULL);
    DefineCustomStringVariable("shardid.call_number_key",
                               "Name of the key-ring key from which the call-number bit shuffle is derived.",
                               "Changing it changes every call number's text.", &call_number_key, "default",
                               PGC_SUSET, 0, NULL, NULL, NULL);
    DefineCustomBoolVariable("shardid.wal_log_mark",
                             "WAL-logs the node's high-water mark and counter floors, so standbys replay them.",
                             "Needs shared_preload_libraries = 'shardid' on the primary and on every standby. Off, "
                             "a promoted standby does not know the old primary's mark.",
                             &wal_log_mark, true, PGC_SUSET, 0, NULL, NULL, NULL);
    MarkGUCPrefixReserved("shardid");

    shardid::pg::shmem_init();
    shardid::pg::wal_init();
    shardid::pg::coord_register_worker();
}
