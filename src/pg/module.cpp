// PG_MODULE_MAGIC and _PG_init: the settings (src/pg/settings.cpp), shared
// memory, the WAL resource manager and the coordinator worker.
#include "pg/pg.hpp"

#include "pg/coord_worker.hpp"
#include "pg/layouts.hpp"
#include "pg/settings.hpp"
#include "pg/shard_claims.hpp"
#include "pg/shmem.hpp"
#include "pg/wal.hpp"

extern "C" {
PG_MODULE_MAGIC;
void _PG_init(void);
}

void _PG_init(void)
{
    using namespace shardid::pg;
    define_settings();
    shmem_init();
    shard_claims_init();
    wal_init();
    coord_register_worker();
    carriers_init();
}
