// Spare call-number runs on a Citus worker.
//
// A worker's call numbers come in runs of 16,384 whose run ids only the
// coordinator hands out (in the era of the call-number key: src/core/callnum.hpp).
// A backend that needed a run while the coordinator was paused or
// unreachable waited for as long as it lasted. So the database's fence
// worker (fence.cpp) keeps spare run ids for each call-number key
// backends asked for (up to 4 keys): at least 8, and twice as many more as
// a fence (shardid.citus_fence) takes at the rate of the last quarter
// fence, up to 64. A backend takes one from shared memory and the worker
// takes another from the coordinator.
// A run id never serves twice: taken out under the lock, it is one
// backend's. Spares are lost, never reused, when the server stops.
//
// With no spare, a backend waits for the worker's refill at most 5 s and a
// renewal interval, then fails with 55000 naming why: a coordinator out
// for longer than the spares last costs failures, never a stall for as
// long as it lasts.
#include <algorithm>
#include <cstring>

#include "pg/base/pg.hpp"

extern "C" {
#include "catalog/pg_authid_d.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/timeout.h"
}

#include "pg/base/settings.hpp"
#include "pg/base/wait_event.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/fence.hpp"
#include "pg/citus/spare_runs.hpp"
#include "pg/base/fence_clock.hpp"
#include "pg/state/shmem.hpp"

namespace shardid::pg {

namespace {

uint32 spare_event = 0;               // a backend waiting for a spare run
constexpr int runs_per_request = 16;  // run ids a refill takes in one request, a key's turn
// Spares kept however slow the rate: a load that begins takes them while
// its rate is measured (a first refill on a loaded machine took seconds).
constexpr int min_spare_runs = 8;

// The slot's target: 8, and twice what a fence takes at the rate of the
// last quarter fence or of the current one (over a quarter fence at
// least), up to 64. Quarters, not whole fences: a rate measured over a
// window that began before a load began is diluted by the time before,
// and spares set by it ran out in a pause shorter than the fence (fences.sh
// 4d on a loaded machine: a new connection failed in a 12 s pause, fence
// 20 s).
int64_t quarter_fence_ms() { return std::max(citus_fence_ms, 4) / 4; }

int target(const SpareRuns& s, int64_t now)
{
    const int64_t quarter = quarter_fence_ms();
    const int64_t fence = std::max(citus_fence_ms, 4);
    const int64_t elapsed = std::max<int64_t>(now - s.window_ms, quarter);
    const int64_t current = int64_t(s.taken) * fence / elapsed;
    const int64_t before = int64_t(s.taken_before) * fence / quarter;
    return int(std::min<int64_t>(max_spare_runs, min_spare_runs + 2 * std::max(before, current)));
}

// Moves the slot's window on (a quarter fence long) at `now`.
void roll(SpareRuns& s, int64_t now)
{
    const int64_t quarter = quarter_fence_ms();
    if (now - s.window_ms < quarter)
        return;
    s.taken_before = now - s.window_ms < 2 * quarter ? s.taken : 0;
    s.taken = 0;
    s.window_ms = now;
}

void set_error(CitusFence* f, const char* why)
{
    citus_fence_note(f, &CitusFence::runs_error, why, "shardid citus spare runs: not refilled");
}

}  // namespace

int64_t citus_spare_run(int64_t key)
{
    int64_t step_at = -1;
    const int64_t bound = citus_wait_bound_ms();
    int64_t asked_at = -1;
    CitusFence* f = citus_fence_of_database();
    for (;;) {
        const int64_t now = fence_clock_ms();
        if (f != nullptr) {
            int64_t run = -1;
            bool low = false;
            SpinLockAcquire(&f->keys_mutex);
            SpareRuns* slot = nullptr;
            SpareRuns* oldest = &f->spares[0];
            for (SpareRuns& s : f->spares) {
                if (s.key == key)
                    slot = &s;
                if (s.wanted_ms < oldest->wanted_ms)
                    oldest = &s;
            }
            if (slot == nullptr) {
                // Another key's slot, the least recently wanted: its spares
                // are lost (never reused).
                slot = oldest;
                memset(slot, 0, sizeof *slot);
                slot->key = key;
                slot->window_ms = now;
            }
            slot->wanted_ms = now;
            roll(*slot, now);
            if (slot->n > 0) {
                run = slot->runs[--slot->n];
                slot->taken++;
                low = slot->n < target(*slot, now);
            }
            SpinLockRelease(&f->keys_mutex);
            if (run >= 0) {
                if (now - f->runs_wanted_ms.load(std::memory_order_relaxed) >= 1000 || low)
                    f->runs_wanted_ms.store(now, std::memory_order_relaxed);
                if (low) {
                    f->runs_asked.store(true);
                    if (Latch* latch = f->worker_latch.load(std::memory_order_acquire))
                        SetLatch(latch);
                }
                return run;
            }
        }
        char why[256];
        if (!citus_fence_wait_step(&f, citus_runs_need, &CitusFence::runs_error, &step_at, bound, &asked_at,
                                   &spare_event, "ShardidSpareRun", why))
            ereport(ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("no call-number run id could be taken from the Citus coordinator"),
                     errdetail("On a Citus cluster the coordinator hands out every run id; this worker keeps spare "
                               "ones and had none left, and none came within %lld ms%s%s.",
                               (long long)bound, why[0] ? ": " : "", why),
                     errhint("Check that the coordinator is up and in the metadata (citus_set_coordinator_host()), "
                             "and see this worker's server log.")));
    }
}

int64_t spare_runs_fill(CitusFence* f)
{
    const int64_t interval = citus_renewal_interval_ms();
    // Up to runs_per_request run ids in one request to the coordinator, one
    // request per key a turn: the worker renews the key lease and the
    // group's confirmation between turns (a refill of 64, one request per
    // run id, took seconds on a loaded machine, and a lease ran out behind
    // it; spares a rate needed then came too late).
    bool more = false;
    for (int i = 0; i < max_spare_keys; i++) {
        const int64_t now = fence_clock_ms();
        SpinLockAcquire(&f->keys_mutex);
        SpareRuns& s = f->spares[i];
        roll(s, now);
        const int64_t key = s.key;
        const bool wanted = key != 0 && now - s.wanted_ms <= 60000;
        const int short_of = wanted ? std::max(0, target(s, now) - s.n) : 0;
        if (key != 0 && !wanted) {
            memset(&s, 0, sizeof s);  // nobody asked for a minute: its spares go
        }
        SpinLockRelease(&f->keys_mutex);
        if (short_of == 0)
            continue;
        // Run ids above this node's floor, in the key's era; a coordinator
        // that does not answer ends the request after a fence.
        const int asked = std::min(short_of, runs_per_request);
        int64 runs[runs_per_request];
        enable_timeout_after(STATEMENT_TIMEOUT, citus_fence_ms);
        citus_counters_from_coordinator(NodeCounter::run, counter_floor(NodeCounter::run), key, asked, runs);
        disable_timeout(STATEMENT_TIMEOUT, false);
        SpinLockAcquire(&f->keys_mutex);
        // The slot may have gone to another key meanwhile: then the run
        // ids are lost, never reused.
        for (int j = 0; j < asked && s.key == key && s.n < max_spare_runs; j++)
            s.runs[s.n++] = runs[j];
        more |= s.key == key && s.n < target(s, fence_clock_ms());
        SpinLockRelease(&f->keys_mutex);
    }
    set_error(f, "");
    return more ? 0 : interval;  // more to take: again once the others had their turn
}

void spare_runs_failed(CitusFence* f, const char* why)
{
    f->errors.fetch_add(1);
    set_error(f, psprintf("the request to the coordinator failed: %s", why));
}

void spare_runs_forget(CitusFence* f)
{
    SpinLockAcquire(&f->keys_mutex);
    memset(f->spares, 0, sizeof f->spares);
    f->runs_error[0] = '\0';
    SpinLockRelease(&f->keys_mutex);
}

}  // namespace shardid::pg
