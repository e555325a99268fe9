// PG_MODULE_MAGIC and _PG_init: the settings (src/pg/base/settings.cpp), the
// statement count (src/pg/base/statement.cpp), shared memory, the WAL
// resource manager, the Citus and etcd rooms and the utility hook.
#include "pg/base/pg.hpp"

extern "C" {
#include "miscadmin.h"
#include "tcop/utility.h"
}

#include "pg/citus/citus.hpp"
#include "pg/etcd/etcd.hpp"
#include "pg/generate/layouts.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/statement.hpp"
#include "pg/state/lineage.hpp"
#include "pg/state/shmem.hpp"
#include "pg/state/wal.hpp"

extern "C" {
PG_MODULE_MAGIC;
void _PG_init(void);
}

namespace {

ProcessUtility_hook_type prev_utility = nullptr;

// Before DROP EXTENSION shardid, its carriers are tied to it
// (src/pg/generate/carrier_deps.cpp); after CREATE EXTENSION shardid, which Citus
// (loaded first, so its hook runs inside this one) has made on the workers
// by then, the key ring goes to them (src/pg/citus/key_ring.cpp).
void utility_hook(PlannedStmt* pstmt, const char* query, bool read_only, ProcessUtilityContext context,
                  ParamListInfo params, QueryEnvironment* env, DestReceiver* dest, QueryCompletion* qc)
{
    using namespace shardid::pg;
    Node* stmt = pstmt->utilityStmt;
    carriers_before_drop(stmt);
    statement_utility_begin();
    PG_TRY();
    {
        if (prev_utility)
            prev_utility(pstmt, query, read_only, context, params, env, dest, qc);
        else
            standard_ProcessUtility(pstmt, query, read_only, context, params, env, dest, qc);
    }
    PG_FINALLY();
    {
        statement_utility_end();
    }
    PG_END_TRY();
    if (IsA(stmt, CreateExtensionStmt) && strcmp(castNode(CreateExtensionStmt, stmt)->extname, "shardid") == 0)
        key_ring_created();
}

}  // namespace

void _PG_init(void)
{
    using namespace shardid::pg;
    define_settings();
    statement_init();
    shmem_init();
    citus_init();
    etcd_init();
    wal_init();
    // The directory pg_upgrade writes into awaits its predecessor's state.
    if (IsBinaryUpgrade)
        mark_upgrade_target();
    prev_utility = ProcessUtility_hook;
    ProcessUtility_hook = utility_hook;
}
