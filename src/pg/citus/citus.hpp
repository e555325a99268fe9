// The Citus room (src/pg/citus/): everything that exists only for Citus,
// as the coordinator's room (src/pg/etcd/) is etcd's. What the rooms above
// it ask of Citus: the group id and its problems, Citus' metadata, the
// coordinator's answers, the key ring on a cluster. The node-id sources
// below it know the Citus source only as registered (citus_init()).
#pragma once

#include <cstdint>

#include "pg/base/pg.hpp"
#include "pg/source/node_source.hpp"
#include "pg/state/shmem.hpp"

namespace shardid::pg {

// Called from _PG_init: the group fence's shared memory and the node-id
// source registered.
void citus_init();

// The node's Citus group id's source (registered with the node-id sources
// by citus_init()); and for shardid_coordination(), the group id (*group,
// -1: none) or why there is none (nullptr: there is one). Reads only.
const NodeIdSource& citus_source();
const char* citus_group_problem(int64* group);

// This database's Citus group id (pg_dist_local_group: 0 on the
// coordinator, or on a node not in a cluster), -1 without Citus. Reads
// only; whether the node is in the metadata is not asked.
int64 citus_local_group();

// How many changes of Citus' node metadata (pg_dist_local_group,
// pg_dist_node) this backend has taken: something confirmed against the
// cluster when it was n is confirmed again once it is not n.
uint64 citus_metadata_changes();

// Whether this node's pg_dist_node has any row. Group 0 and none is a node
// without Citus metadata: a worker whose metadata was taken away
// (stop_metadata_sync_to_node()) or never given (added with metadata sync
// off) reads so, and so does a server never in a cluster; from inside, the
// two cannot be told apart, so a key cannot be confirmed as the cluster's
// on either.
bool citus_has_nodes();

// Whether this node's pg_dist_node names a coordinator (a row of group 0).
bool citus_coordinator_in_metadata();

// Runs `command` (one value) on this cluster's Citus coordinator as the
// extension's owner; false when it could not (*answer: the error, for the
// server log only: it can name hosts and users).
bool citus_coordinator_answer(const char* command, const char** answer);

// One value of `which` above `above` from the Citus coordinator (a
// worker's cluster-wide counters); ereports when there is none.
int64 citus_counter_from_coordinator(NodeCounter which, int64 above, int64 key_fingerprint);
// `n` (1 to 64) distinct values of the same in one request, into out[].
void citus_counters_from_coordinator(NodeCounter which, int64 above, int64 key_fingerprint, int n, int64* out);

// On a Citus coordinator, sends the key ring to every worker; nothing
// elsewhere (src/pg/citus/key_ring.cpp; the utility hook calls it after CREATE
// EXTENSION shardid).
void key_ring_created();

// On a Citus worker where the ring cannot be sent (PostgreSQL 16 and later:
// src/pg/citus/key_ring.cpp), whether this worker reads each key
// from the coordinator instead of its own ring.
bool key_ring_pulled();

}  // namespace shardid::pg
