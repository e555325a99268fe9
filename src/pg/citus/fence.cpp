// The Citus group fence: one live server per group id.
//
// A Citus group id names a node in the coordinator's metadata
// (pg_dist_node), but each node reads its own copy (pg_dist_local_group),
// and nothing stops a server that is no longer the group's from reading the
// old one: an old primary still running after its worker failed over
// (citus_update_node() tells only the nodes in the metadata), a removed
// worker still running while citus_add_node(..., groupid => g) adds
// another under its group. Both would issue IDs under one group.
//
// So a worker (group > 0) issues IDs only under a confirmation from the
// coordinator, held for shardid.citus_fence (F, 10 s):
//
// - The server's token is its system identifier and its postmaster's start
//   time (shardid_node_token()): a promoted standby, a copy of the data
//   directory, the same server after a restart each have their own.
// - A background worker per database ("shardid citus fence", started by the
//   first generator that needs it, gone after a minute without one) asks
//   the coordinator every F/10 (at most a second), through Citus' own
//   connection: SELECT shardid_citus_confirm(group, token, F, W), W being
//   this server's clock (as IDs carry it) plus F. The coordinator
//   (sql/shardid--1.2.sql) connects to the host and port its pg_dist_node
//   names for the group's primary and compares the token it finds there:
//   the same, and the group's lease row (shardid_citus_lease) is this
//   token's or has expired on the coordinator's clock, it records the
//   token, valid_until = its now + F and W, and answers "ok <floor>";
//   another token there, or no primary, and it refuses; a lease of another
//   token not yet expired, and the new server waits ("wait <ms>").
// - The worker publishes fence = (its boot clock when it sent) + F and
//   window end W; generators return an ID only before the fence and with a
//   tick below W (CitusSource::confirm(), after the ID is covered).
//
// Safety: a server that loses its group (the metadata names another, or
// none) gets no confirmation after the change is committed, and stops at
// most F after its last request was sent. The coordinator's lease row of
// that token is valid until the coordinator's now at that request + F,
// later in real time than the old server's fence (clocks differ in offset,
// not rate: each side measures F on its own clock), and a new server of the
// group is confirmed only after it. Its floor is the old server's last W
// (kept in the row's floor_ms): every slot of the new server continues
// above the tick containing it (raise_claim_floor()), so even an old
// server whose clock ran ahead cannot have issued a tick the new one
// issues again. The coordinator (group 0) asks nobody: it is the
// authority (docs/citus.md says what a second coordinator would need).
//
// Availability: a coordinator unreachable for less than F minus one renewal
// interval (about 9 s by default) costs nothing; longer, workers stop
// issuing until it answers. A new server of a group (a restart, a
// failover) waits until the previous one's lease on the coordinator ends,
// at most F.
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>

#include "pg/base/shard_declaration.hpp"  // C++ standard headers: before PostgreSQL's
#include "pg/citus/fence.hpp"
#include "pg/base/catalog.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/wait_event.hpp"
#include "pg/citus/declared.hpp"
#include "pg/citus/key_lease.hpp"
#include "pg/citus/spare_runs.hpp"
#include "pg/citus/citus.hpp"
#include "pg/base/fence_clock.hpp"
#include "pg/state/shared.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"
}

extern "C" {
PGDLLEXPORT void shardid_citus_fence_main(Datum arg);
PG_FUNCTION_INFO_V1(shardid_node_token);
}

namespace shardid::pg {

namespace {

// This server's token: its system identifier and its postmaster's start.
const char* node_token()
{
    return psprintf("%llu.%lld", (unsigned long long)GetSystemIdentifier(), (long long)PgStartTime);
}

}  // namespace

void fence_set_text(CitusFence* f, const char* state, const char* error)
{
    SpinLockAcquire(&f->mutex);
    if (state != nullptr)
        strlcpy(f->state, state, sizeof f->state);
    if (error != nullptr)
        strlcpy(f->last_error, error, sizeof f->last_error);
    SpinLockRelease(&f->mutex);
}

// Stops the fence at once (a refusal): generators see fence 0 first.
void stop_fence(CitusFence* f)
{
    f->fence_ms.store(0, std::memory_order_seq_cst);
    f->group.store(-1, std::memory_order_seq_cst);
}

namespace {

// Logs a change of state once (operators look in the server log).
void log_state(CitusFence* f, const char* state, const char* why)
{
    char was[sizeof f->state];
    SpinLockAcquire(&f->mutex);
    strlcpy(was, f->state, sizeof was);
    SpinLockRelease(&f->mutex);
    if (strcmp(was, state) != 0)
        ereport(strcmp(state, "confirmed") == 0 ? LOG : WARNING,
                (errmsg("shardid citus fence: %s", state), why != nullptr ? errdetail("%s", why) : 0));
}

}  // namespace

// One request to the coordinator; the milliseconds until the next.
// Runs in a transaction of the worker; can ereport (the caller catches).
int64_t fence_renew(CitusFence* f)
{
    const int64_t interval = std::clamp<int64_t>(citus_fence_ms / 10, 200, 1000);
    int64 group = -1;
    if (const char* problem = citus_group_problem(&group); problem != nullptr) {
        stop_fence(f);
        log_state(f, "refused", problem);
        fence_set_text(f, "refused", problem);
        return interval;
    }
    if (group == 0) {
        // The coordinator, or a server not in a cluster: nothing to confirm.
        stop_fence(f);
        fence_set_text(f, "coordinator", "");
        return interval;
    }
    const int fence = citus_fence_ms;
    const int64_t sent = fence_clock_ms();
    const int64_t window_end = wall_clock().now_ms() + fence;
    const char* schema = get_namespace_name(shardid_extension().schema);
    const ShardDeclaration& declaration = shard_declaration();
    const uint64_t declared = declaration.fingerprint;
    const char* command = psprintf("SELECT %s.shardid_citus_confirm(%lld, %s, %d, %lld, %s)", quote_identifier(schema),
                                   (long long)group, quote_literal_cstr(node_token()), fence, (long long)window_end,
                                   quote_literal_cstr(declaration.multirange.c_str()));
    const char* answer = nullptr;
    f->requests.fetch_add(1);
    // A coordinator that does not answer ends the request after a fence
    // (a background worker's statements have no statement_timeout of
    // their own; the catch in renew_once() disarms it after an error).
    enable_timeout_after(STATEMENT_TIMEOUT, fence);
    const bool ok = citus_coordinator_answer(command, &answer);
    disable_timeout(STATEMENT_TIMEOUT, false);
    f->answered_at.store(GetCurrentTimestamp());
    char* end = nullptr;
    if (ok && strncmp(answer, "ok ", 3) == 0) {
        errno = 0;
        const long long floor = strtoll(answer + 3, &end, 10);
        // "ok <floor> overlap <group>": this server is confirmed, but its
        // shardid.shards lists another node's group id.
        long long overlap = -1;
        const bool bad_floor = end == answer + 3 || errno != 0;
        if (!bad_floor && strncmp(end, " overlap ", 9) == 0) {
            char* at = end + 9;
            overlap = strtoll(at, &end, 10);
            if (end == at || errno != 0 || overlap < 0 || overlap > INT32_MAX)
                end = at - 1;  // refused below
        }
        // The floor is a window end some server of this group recorded (or
        // a node that declared the group's value as a shard): at most its
        // clock plus a fence, or plus the clock lead. One further ahead of
        // this clock and it is not shardid's (a hand edit).
        const int64_t reach = wall_clock().now_ms() + 600000 + int64_t(std::max(max_clock_lead_ms, 0));
        if (bad_floor || *end != '\0' || floor < 0 || floor > reach) {
            stop_fence(f);
            const char* why = psprintf("the coordinator answered \"%s\", not a window end shardid could have "
                                       "recorded (at most %lld)",
                                       answer, (long long)reach);
            log_state(f, "refused", why);
            fence_set_text(f, "refused", why);
            f->errors.fetch_add(1);
            return interval;
        }
        if (floor > 0 && floor > shared->claim_floor_ms.load())
            raise_claim_floor(floor);
        if (f->group.load() != group) {
            f->fence_ms.store(0, std::memory_order_seq_cst);
            f->group.store(group, std::memory_order_seq_cst);
        }
        // The declaration this window covers, before the window
        // (src/pg/citus/declared.cpp).
        const char* overlap_why = citus_fence_declaration(f, declared, overlap);
        raise_to(f->window_end_ms, window_end);
        f->fence_ms.store(sent + fence, std::memory_order_seq_cst);
        log_state(f, "confirmed",
                  psprintf("The coordinator confirmed this server as the primary of group %lld.", (long long)group));
        fence_set_text(f, "confirmed", overlap_why);
        return interval;
    }
    if (ok && strncmp(answer, "wait ", 5) == 0) {
        errno = 0;
        const long long ms = strtoll(answer + 5, &end, 10);
        const char* why =
            psprintf("the previous server of group %lld may issue IDs for %s ms more", (long long)group, answer + 5);
        log_state(f, "waiting", why);
        fence_set_text(f, "waiting", why);
        return end == answer + 5 || *end != '\0' || errno != 0 || ms < 0 ? interval
                                                                         : std::clamp<int64_t>(ms, 10, interval);
    }
    if (const char* why = ok ? citus_declared_by(answer, group) : nullptr; why != nullptr) {
        // Another node lists this server's group id in its shardid.shards;
        // asked again each interval, until its declaration runs out.
        stop_fence(f);
        log_state(f, "refused", why);
        fence_set_text(f, "refused", why);
        return interval;
    }
    if (ok && (strcmp(answer, "other") == 0 || strcmp(answer, "absent") == 0)) {
        stop_fence(f);
        const char* why =
            strcmp(answer, "other") == 0
                ? psprintf("the coordinator's metadata names another server as the primary of group %lld (its host "
                           "and port answer with another token than this server's)",
                           (long long)group)
                : psprintf("the coordinator's metadata has no primary of group %lld", (long long)group);
        log_state(f, "refused", why);
        fence_set_text(f, "refused", why);
        return interval;
    }
    // Unreachable, or an answer shardid does not give: the fence runs out
    // by itself.
    f->errors.fetch_add(1);
    const char* why =
        strcmp(answer, "unreachable") == 0
            ? psprintf("the coordinator could not reach the server its metadata names for group %lld", (long long)group)
            : psprintf("the coordinator did not confirm group %lld: %s", (long long)group, answer);
    log_state(f, "unconfirmed", why);
    fence_set_text(f, "unconfirmed", why);
    return std::min<int64_t>(interval, 500);
}

void fence_renew_failed(CitusFence* f, const char* message)
{
    f->errors.fetch_add(1);
    const char* why = psprintf("the request to the coordinator failed: %s", message);
    log_state(f, "unconfirmed", why);
    fence_set_text(f, "unconfirmed", why);
}

bool citus_fence_holds(const CitusFence* f, int64_t group, int64_t tick_ms)
{
    if (f == nullptr || f->database.load(std::memory_order_seq_cst) != MyDatabaseId)
        return false;
    const int64_t fence = f->fence_ms.load(std::memory_order_seq_cst);
    return f->group.load(std::memory_order_seq_cst) == group && fence_clock_ms() < fence &&
           (tick_ms < 0 || tick_ms < f->window_end_ms.load(std::memory_order_seq_cst));
}

void citus_fence_report(CitusFence* f, char* state, size_t state_size, char* error, size_t error_size)
{
    SpinLockAcquire(&f->mutex);
    strlcpy(state, f->state[0] ? f->state : "starting", state_size);
    strlcpy(error, f->last_error, error_size);
    SpinLockRelease(&f->mutex);
}

}  // namespace shardid::pg

using namespace shardid::pg;

// shardid_node_token(): this server's token, which the coordinator compares
// with the caller's (sql/shardid--1.2.sql, shardid_citus_confirm()).
extern "C" Datum shardid_node_token(PG_FUNCTION_ARGS) { PG_RETURN_TEXT_P(cstring_to_text(node_token())); }
