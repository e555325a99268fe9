// Citus' node metadata as shardid reads it: this node's group id, whether
// the metadata names a coordinator or any node (src/pg/citus/metadata.hpp).
// Reads only.
#include "pg/citus/metadata.hpp"

#include "pg/citus/citus.hpp"

namespace shardid::pg {

bool local_group(int64* local, int* rows, bool* uncommitted)
{
    *local = -1;
    *rows = 0;
    return scan_int_column("pg_dist_local_group", "groupid", uncommitted, [&](int32 g) {
        *local = g;
        return ++*rows < 2;
    });
}

int64 citus_local_group()
{
    int64 local;
    int rows;
    bool uncommitted = false;
    return local_group(&local, &rows, &uncommitted) && rows == 1 ? local : -1;
}

namespace {

// Whether pg_dist_node has a row of the group (of any group: -1).
bool node_of_group(int64 group)
{
    bool uncommitted = false;
    bool found = false;
    scan_int_column("pg_dist_node", "groupid", &uncommitted, [&](int32 g) {
        found = group < 0 || g == group;
        return !found;
    });
    return found;
}

}  // namespace

bool citus_has_nodes() { return node_of_group(-1); }

bool citus_coordinator_in_metadata() { return node_of_group(0); }

}  // namespace shardid::pg
