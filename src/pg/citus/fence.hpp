// The Citus group fence (src/pg/citus/fence.cpp): a worker issues
// IDs under its group id only while the coordinator has confirmed, within
// shardid.citus_fence, that this server is the group's primary.
#pragma once

#include <cstdint>

#include "pg/base/pg.hpp"
#include "pg/citus/shared.hpp"

namespace shardid::pg {

// This database's fence entry, or nullptr when it has none. Never
// ereports; reads only.
CitusFence* citus_fence_of_database();

// Whether the entry confirms `group` now and a tick starting at tick_ms
// (-1: not asked) lies inside the window the coordinator recorded. Never
// ereports.
bool citus_fence_holds(const CitusFence* fence, int64_t group, int64_t tick_ms);

// Notes that a generator needs the fence (cheap: a store at most once a
// second). Never ereports.
void citus_fence_wanted(CitusFence* fence);

// This database's entry, made when missing, with its background worker
// running (started when it is not) and woken: a generator calls it when
// the fence does not hold. Can ereport (53400: no entry or no worker free).
CitusFence* citus_fence_need();

// The same for statements that use keys on a worker that leases the
// coordinator's key ring (src/pg/citus/key_lease.cpp).
void citus_keys_wanted(CitusFence* fence);
CitusFence* citus_keys_need();

// The same for backends that take spare call-number runs
// (src/pg/citus/spare_runs.cpp).
CitusFence* citus_runs_need();

// What the fence worker renews for statements (the key lease, spare
// runs): a renewal's failure recorded in `field` of the entry ("" once one
// succeeds; logged as a WARNING starting with `what` when the words
// change), the interval between renewals, and a statement's bounded wait:
// one step of it, the worker made or woken through `need` every 250 ms,
// false once the statement's waits took `bound` ms in all (*step_at: -1
// at a wait's first step, then the last step's time; then *why: the
// recorded failure for superusers and pg_monitor, "" for others).
using FenceText = char (CitusFence::*)[256];
void citus_fence_note(CitusFence* f, FenceText field, const char* why, const char* what);
int64_t citus_renewal_interval_ms();
// How long a statement waits for a renewal: 5 s and an interval.
int64_t citus_wait_bound_ms();
bool citus_fence_wait_step(CitusFence** f, CitusFence* (*need)(), FenceText field, int64_t* step_at, int64_t bound,
                           int64_t* asked_at, uint32* event, const char* event_name, char why[256]);

// The entry's state and last error, copied (for errors and
// shardid_coordination()).
void citus_fence_report(CitusFence* fence, char* state, size_t state_size, char* error, size_t error_size);

// Between the fence (fence.cpp) and its background worker
// (fence_worker.cpp): the entry's state text, its fence stopped at once, the
// group's renewal (in a transaction; can ereport; the milliseconds until
// the next) and its failure recorded.
void fence_set_text(CitusFence* f, const char* state, const char* error);
void stop_fence(CitusFence* f);
int64_t fence_renew(CitusFence* f);
void fence_renew_failed(CitusFence* f, const char* message);

}  // namespace shardid::pg
