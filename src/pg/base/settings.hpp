// shardid's settings (GUCs), every one defined in src/pg/base/settings.cpp from
// one table (name, description, default, range, context, privilege), and
// the helpers that read them. docs and the settings check
// (test/docs/tables.sh) read that table.
#pragma once

#include <type_traits>

#include <cstddef>
#include <cstdint>

#include "core/clock.hpp"

namespace shardid::pg {

constexpr int node_id_unset = -1;

extern int node_id;            // shardid.node_id, node_id_unset until configured
extern int max_clock_lead_ms;  // shardid.max_clock_lead
extern int clock_offset_ms;    // shardid.clock_offset_ms (testing aid)
extern int launch_id;          // shardid.launch_id, -1 until configured
extern int cluster_id;         // shardid.cluster_id (eight-byte ids)
extern char* call_number_key;  // shardid.call_number_key: a key-ring name
extern bool wal_log_mark;      // shardid.wal_log_mark: WAL-log the node state (when preloaded)
extern int uuidv7_shard_bits;  // shardid.uuidv7_shard_bits: the shard field's width in a UUIDv7's rand_b

// Where the node id comes from (shardid.node_id_source, server start; the
// source itself: src/pg/source/node_source.hpp).
enum class NodeIdSourceSetting : int { setting = 0, etcd = 1, citus = 2 };
extern int node_id_source_setting;
inline bool etcd_enabled() { return node_id_source_setting == int(NodeIdSourceSetting::etcd); }

// The etcd claim (src/pg/etcd/worker/start.cpp, src/pg/etcd/id_source.cpp).
extern char* etcd_endpoints;
extern char* etcd_prefix;
// These three are read from their text (the *_text settings) by
// etcd_numbers() (src/pg/etcd/worker/config.hpp).
extern int etcd_lease_ttl_s;
extern char* etcd_lease_ttl_text;
extern char* etcd_node_id_min_text;
extern char* etcd_node_id_max_text;
extern char* etcd_user;
extern char* etcd_password_file;
extern char* etcd_cacert;
extern char* etcd_cert;
extern char* etcd_key;
extern int etcd_node_id_min;
extern int etcd_node_id_max;
extern int etcd_wait_ms;
// shardid.citus_fence: how long a Citus worker issues IDs under its group
// after the coordinator last confirmed it (src/pg/citus/fence.cpp).
extern int citus_fence_ms;
// Shard value claims (src/pg/etcd/shard_claims.hpp).
extern int max_shard_claims;      // shardid.max_shard_claims: values held at once (server start)
extern int shard_idle_release_s;  // shardid.shard_idle_release: a value without an ID this long is given back
extern char* shards_setting;      // shardid.shards: the shards this node declares it owns ("" : any)
// Whether shardid.shards admits `shard` (always when it is empty); the
// setting parsed: src/pg/base/shard_declaration.hpp.
bool shard_declared(int64_t shard);

// Called from _PG_init: defines every setting. Those that take effect at
// server start only when preloading (PostgreSQL refuses PGC_POSTMASTER
// settings of a library loaded later).
void define_settings();

// The settings whose configured value (postgresql.conf, ALTER SYSTEM, the
// command line) PostgreSQL did not accept when shardid was loaded, as
// "shardid.node_id = '7x'", joined by ", "; empty when none. PostgreSQL
// keeps the default then, with only a WARNING: shardid.node_id_source =
// 'etdc' would issue under shardid.node_id without a claim, and
// shardid.cluster_id = 'x3' under cluster 0. While one is refused, no
// generator issues (node_id_source()) and the coordinator claims nothing;
// the corrected value is read again at the next server start (without
// preloading: in the next session).
const char* refused_settings();
// "a configured value was not accepted: " and that list, or nullptr when
// none was refused (the one test of whether any was).
const char* refused_reason();
// What to do about it: restart the server (preloaded) or start a new session.
const char* refused_hint();
// Where the setting `name` got its value, for shardid_coordination() and
// the coordinator's log: "postgresql.conf line 830", "postgresql.auto.conf
// line 3, written by ALTER SYSTEM (ALTER SYSTEM RESET shardid.node_id
// undoes it)", "its default", "ALTER DATABASE SET", "a SET in this
// session". A file by its name only, never its directory.
void setting_origin(const char* name, char* out, size_t size);

// The wall clock as this backend reads it (with shardid.clock_offset_ms).
inline SystemClock wall_clock(bool coarse = false) { return SystemClock{clock_offset_ms, coarse}; }

}  // namespace shardid::pg
