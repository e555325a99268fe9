// The one way the glue includes PostgreSQL: C headers in C linkage,
// postgres.h first. Only files under src/pg include this, and after every
// C++ standard header they need: PostgreSQL's port.h redefines names such as
// vsnprintf that <string> and friends use.
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/timestamp.h"
#if PG_VERSION_NUM >= 160000
#include "varatt.h"  // VARDATA_ANY and friends; postgres.h stopped bringing them in 19
#endif
}

// A syscache callback's cache id (CacheRegisterSyscacheCallback()): 19
// names its type.
#if PG_VERSION_NUM >= 190000
extern "C" {
#include "utils/syscache.h"
}
using SyscacheId = SysCacheIdentifier;
#else
using SyscacheId = int;
#endif

// Supported: PostgreSQL 15 to 18 (README, "Supported versions"). Version
// differences are guarded with PG_VERSION_NUM where they are used.
#if PG_VERSION_NUM < 150000
#error "shardid needs PostgreSQL 15 or later (shmem_request_hook, custom WAL resource managers)"
#endif
