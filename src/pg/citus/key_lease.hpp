// Keys under a fence (src/pg/citus/key_lease.cpp): a Citus worker holds
// the coordinator's key ring under a lease its fence worker renews; the
// coordinator's ring changes wait the leases out.
#pragma once

#include <cstdint>

#include "pg/base/pg.hpp"
#include "pg/citus/shared.hpp"

namespace shardid::pg {

// The coordinator's record, made with the shared memory.
void key_leases_init(KeyLeases& leases);

// On a coordinator, before this transaction's first change of the ring:
// counts it a changer until it ends, and waits until every lease granted
// before has ended (has_workers: the coordinator has workers, so leases of
// a previous life or of a promoted standby's old primary may still run).
// Can ereport (a cancel; a PREPARE of the transaction is refused).
void key_ring_changing(bool has_workers);

// The fence worker's renewal (in a transaction; can ereport), its failure
// recorded, and the lease dropped when no statement wants keys.
int64_t key_lease_renew(CitusFence* f);
void key_lease_failed(CitusFence* f, const char* why);
void key_lease_forget(CitusFence* f);

// A key of the leased ring for a statement that began (first needed a key)
// at began_ms (fence clock): found (secret filled), absent from the whole
// ring, or beyond what the lease holds (a ring of more than
// max_leased_keys keys: read it from the coordinator). Waits for a renewal
// when the lease does not serve the statement, at most 5 s and an
// interval, then ereports 55000.
enum class LeaseFind { found, absent, beyond, waiting };
LeaseFind citus_leased_key(const char* name, int len, int64_t began_ms, uint8_t secret[16]);

}  // namespace shardid::pg
