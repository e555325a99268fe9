// Spare call-number runs on a Citus worker (src/pg/citus/spare_runs.cpp):
// run ids taken from the coordinator ahead of need, so that a coordinator
// out for less than the fence costs call numbers nothing.
#pragma once

#include <cstdint>

#include "pg/base/pg.hpp"
#include "pg/citus/shared.hpp"

namespace shardid::pg {

// A run id of the era of the call-number key with fingerprint `key`, from
// this database's spares (the fence worker refills them); waits at most
// 5 s and a renewal interval for one, then ereports 55000.
int64_t citus_spare_run(int64_t key);

// The fence worker's refill (in a transaction; can ereport), its failure
// recorded, and the spares dropped when the entry goes.
int64_t spare_runs_fill(CitusFence* f);
void spare_runs_failed(CitusFence* f, const char* why);
void spare_runs_forget(CitusFence* f);

}  // namespace shardid::pg
