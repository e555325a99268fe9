// shardid's ear for relation changes. A backend keeps its relcache callbacks
// in a fixed table (ten in PostgreSQL 15 to 18) that every library it loads
// shares: PostgreSQL takes some, Citus five. shardid takes one slot,
// whatever number of its caches listen, and hands each change to all of
// them (a 1.4 build that took one slot per cache made a Citus worker's
// backends fail with "out of relcache_callback_list slots").
#pragma once

#include "pg/base/pg.hpp"

namespace shardid::pg {

// A cache's handler: relid changed (InvalidOid: every relation may have).
using RelationChanged = void (*)(Oid relid);

// Registers `handler` once (registering it again changes nothing), and
// shardid's one relcache callback with the first handler.
void on_relation_change(RelationChanged handler);

}  // namespace shardid::pg
