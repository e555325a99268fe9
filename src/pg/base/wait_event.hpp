// shardid's own wait events: from PostgreSQL 17 named (pg_stat_activity
// shows them), before that the generic "Extension". Made on first use,
// which can ereport on 17: resolve them before entering guarded().
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "pgstat.h"
#include "utils/wait_event.h"
}

namespace shardid::pg {

// The wait event `name`, made once and kept in *made (0: not yet).
inline uint32 wait_event(const char* name, uint32* made)
{
#if PG_VERSION_NUM >= 170000
    if (*made == 0)
        *made = WaitEventExtensionNew(name);
    return *made;
#else
    (void)name;
    (void)made;
    return PG_WAIT_EXTENSION;
#endif
}

}  // namespace shardid::pg
