// shardid_coordination(): where the node id comes from and the state of
// the claim, as the coordinator worker last published it (a claim's late
// renewals and passed fence as of now).
#include <algorithm>
#include <cstring>

#include "core/etcd/rules.hpp"
#include "pg/base/pg.hpp"

extern "C" {
#include "utils/builtins.h"
}

#include "pg/state/shmem.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/citus/citus.hpp"
#include "pg/source/node_source.hpp"
#include "pg/citus/fence.hpp"
#include "pg/base/row.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/shared.hpp"
#include "pg/base/timeconv.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(shardid_coordination);
}

namespace {

using namespace shardid::pg;

constexpr int columns = 25;

// refused_waiting, refused_clock_lead, refused_misconfigured: generations
// refused since the server started, by cause.
void add_refusals(Row<columns>& row)
{
    for (int i = 0; i < int(GenerationRefusal::count); i++)
        shared ? row.add(Int64GetDatum(int64(shared->generation_refusals[i].load(std::memory_order_relaxed))))
               : row.add_null();  // not preloaded: nothing counted
}

// Milliseconds of a period counted so far: the closed ones and the open one.
double seconds(int64 closed_ms, int64 since, int64 now)
{
    return double(closed_ms + (since != 0 ? now - since : 0)) / 1000.0;
}

// The columns of a node whose id comes from shardid.node_id, or from its
// Citus group id (read here, in this database); a Citus worker's also show
// its group fence (src/pg/citus/fence.cpp): until when it issues,
// the window end recorded on the coordinator, the fence's last error and
// its requests. Its state is "unconfirmed" while the fence does not hold.
Datum from_setting(FunctionCallInfo fcinfo, bool citus)
{
    Row<columns> row;
    const char* refused = refused_reason();
    int64 id = node_id;
    if (citus && refused == nullptr)
        refused = citus_group_problem(&id);
    CitusFence* fence = citus && refused == nullptr && id > 0 ? citus_fence_of_database() : nullptr;
    const bool holds = fence != nullptr && citus_fence_holds(fence, id, -1);
    row.add(CStringGetTextDatum(citus ? "citus" : "setting"));
    row.add(CStringGetTextDatum(refused           ? "misconfigured"
                                : fence && !holds ? "unconfirmed"
                                : id >= 0         ? "configured"
                                                  : "unset"));
    id >= 0 ? row.add(Int32GetDatum(int32(id))) : row.add_null();
    if (citus) {
        row.add(CStringGetTextDatum("citus: the node's group id (pg_dist_local_group)"));
    } else {
        char origin[192];
        setting_origin("shardid.node_id", origin, sizeof origin);
        row.add(CStringGetTextDatum(psprintf("setting: shardid.node_id (%s)", origin)));
    }
    while (row.n < 7)
        row.add_null();  // claimed_at .. lease_ttl: no claim in etcd
    char state[32], error[256];
    if (fence != nullptr) {
        auto ts = [](int64 ms) { return TimestampTzGetDatum(timestamptz_of_unix_ms(ms)); };
        citus_fence_report(fence, state, sizeof state, error, sizeof error);
        holds ? row.add(ts(wall_clock().now_ms() + (fence->fence_ms.load() - fence_clock_ms()))) : row.add_null();
        row.add_null();                                                     // window_start
        holds ? row.add(ts(fence->window_end_ms.load())) : row.add_null();  // window_end
        row.add_null();                                                     // endpoint
        error[0] ? row.add(CStringGetTextDatum(psprintf("%s: %s", state, error))) : row.add_null();
        const int64 at = fence->answered_at.load();
        at != 0 ? row.add(TimestampTzGetDatum(TimestampTz(at))) : row.add_null();  // last_answer_at
        row.add(Int64GetDatum(int64(fence->requests.load())));
        row.add(Int64GetDatum(int64(fence->errors.load())));
    } else {
        while (row.n < 11)
            row.add_null();                                                // issuing_until .. endpoint
        refused ? row.add(CStringGetTextDatum(refused)) : row.add_null();  // last_error
    }
    while (row.n < 20)
        row.add_null();  // .. renewals_late: no claim, no etcd
    add_refusals(row);
    row.add_null().add_null();  // rechecks_failed, unconfirmed_seconds: no values claimed
    return return_row(fcinfo, row);
}

}  // namespace

extern "C" Datum shardid_coordination(PG_FUNCTION_ARGS)
{
    attach_if_needed();
    if (!etcd_enabled())
        return from_setting(fcinfo, node_id_source_setting == int(NodeIdSourceSetting::citus));
    EtcdShared& c = etcd_shared();
    char state[32], endpoint[256], err[512], lease[24], from[sizeof c.node_id_from];
    int64 ttl, claimed_at, last_ok;
    uint64 requests, errors, expiring_episodes, renewals_late, rechecks_failed;
    const int64 now_fence = fence_clock_ms();
    double not_held_s, expiring_s, unconfirmed_s;
    SpinLockAcquire(&c.mutex);
    not_held_s = seconds(c.not_held_ms, c.not_held_since, now_fence);
    unconfirmed_s = seconds(c.unconfirmed_ms, c.unconfirmed_since, now_fence);
    rechecks_failed = c.rechecks_failed;
    expiring_s = seconds(c.expiring_ms, c.expiring_since, now_fence);
    expiring_episodes = c.expiring_episodes;
    renewals_late = c.renewals_late;
    strlcpy(state, c.state, sizeof state);
    strlcpy(endpoint, c.endpoint, sizeof endpoint);
    strlcpy(err, c.last_error, sizeof err);
    strlcpy(lease, c.lease_id, sizeof lease);
    strlcpy(from, c.node_id_from, sizeof from);
    ttl = c.lease_ttl_s;
    claimed_at = c.claimed_at_ms;
    last_ok = c.last_ok_ms;
    requests = c.requests;
    errors = c.errors;
    SpinLockRelease(&c.mutex);
    const int held = c.held.load();
    // The worker publishes its state between requests: one blocked on an
    // etcd that does not answer publishes nothing until its request ends,
    // which may be after the outage did. The fence is in shared memory: a
    // "held" whose renewals are late by now shows "expiring" (past the
    // fence, "unconfirmed"), as the worker says once it can.
    if (held >= 0 && strcmp(state, "held") == 0) {
        const int64 until = std::min(c.fence_ms.load(), c.values_until_ms.load());
        if (now_fence >= until)
            strlcpy(state, "unconfirmed", sizeof state);
        else if (shardid::etcd::renewal_late(until - now_fence, ttl * 1000))
            strlcpy(state, "expiring", sizeof state);
    }
    const int64 now_wall = wall_clock().now_ms();
    auto ts = [](int64 ms) { return TimestampTzGetDatum(timestamptz_of_unix_ms(ms)); };
    auto text_or_null = [](Row<columns>& row, const char* s) {
        s[0] ? row.add(CStringGetTextDatum(s)) : row.add_null();
    };

    Row<columns> row;
    row.add(CStringGetTextDatum("etcd"));                            // source
    row.add(CStringGetTextDatum(state));                             // state
    held >= 0 ? row.add(Int32GetDatum(held)) : row.add_null();       // node_id
    text_or_null(row, from);                                         // node_id_from
    held >= 0 ? row.add(ts(claimed_at)) : row.add_null();            // claimed_at
    text_or_null(row, lease);                                        // lease_id
    lease[0] ? row.add(Int32GetDatum(int32(ttl))) : row.add_null();  // lease_ttl
    if (held >= 0) {
        // issuing_until: the lease's fence, or the fence of the last renewal
        // whose check confirmed the values held, whichever comes first.
        row.add(ts(now_wall + (std::min(c.fence_ms.load(), c.values_until_ms.load()) - fence_clock_ms())));
        const int64 floor = c.floor_ms.load();
        floor > 0 ? row.add(ts(floor)) : row.add_null();  // window_start: no mark found, none
        row.add(ts(c.window_end_ms.load()));              // window_end
    } else {
        row.add_null().add_null().add_null();
    }
    text_or_null(row, endpoint);                          // endpoint
    text_or_null(row, err);                               // last_error
    last_ok > 0 ? row.add(ts(last_ok)) : row.add_null();  // last_answer_at
    row.add(Int64GetDatum(int64(requests)));              // requests
    row.add(Int64GetDatum(int64(errors)));                // errors
    row.add(BoolGetDatum(c.password_in_clear.load()));    // password_in_clear
    row.add(Float8GetDatum(not_held_s));                  // not_held_seconds
    row.add(Int64GetDatum(int64(expiring_episodes)));     // expiring_episodes
    row.add(Float8GetDatum(expiring_s));                  // expiring_seconds
    row.add(Int64GetDatum(int64(renewals_late)));         // renewals_late
    add_refusals(row);
    row.add(Int64GetDatum(int64(rechecks_failed)));  // rechecks_failed
    row.add(Float8GetDatum(unconfirmed_s));          // unconfirmed_seconds
    return return_row(fcinfo, row);
}
