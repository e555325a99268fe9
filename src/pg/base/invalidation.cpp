// One relcache callback for every cache of shardid's
// (src/pg/base/invalidation.hpp).
#include "pg/base/invalidation.hpp"

extern "C" {
#include "utils/inval.h"
}

namespace shardid::pg {

namespace {

// Every room's caches: layouts, keys, the lineage, Citus' metadata.
constexpr int max_handlers = 8;
RelationChanged handlers[max_handlers];
int n_handlers = 0;

void relation_changed(Datum, Oid relid)
{
    for (int i = 0; i < n_handlers; i++)
        handlers[i](relid);
}

}  // namespace

void on_relation_change(RelationChanged handler)
{
    for (int i = 0; i < n_handlers; i++)
        if (handlers[i] == handler)
            return;
    if (n_handlers == max_handlers)
        elog(ERROR, "shardid: more than %d caches listen to relation changes", max_handlers);
    if (n_handlers == 0)
        CacheRegisterRelcacheCallback(relation_changed, (Datum)0);
    handlers[n_handlers++] = handler;
}

}  // namespace shardid::pg
