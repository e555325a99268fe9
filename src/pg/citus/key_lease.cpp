// Keys under a fence: a Citus worker holds the coordinator's key ring under
// a lease, as it holds its group id under the group fence (fence.cpp).
//
// On PostgreSQL 16 and later a worker takes its keys from the coordinator
// (key_ring.cpp cannot send them there); on 15 it has its own copy, sent
// with every change, and confirms it against the coordinator's before use
// (keys.cpp, confirm_key()). Both used to ask the coordinator when a
// statement (16+) or a backend (15) first needed a key: a coordinator
// paused or unreachable stalled them for as long as it lasted. Now:
//
// - The database's "shardid citus fence" background worker, while
//   statements want keys, asks the coordinator every F/10 (at most a
//   second; F = shardid.citus_fence): SELECT shardid_citus_key_lease(F).
//   The coordinator grants G = min(F, its own shardid.citus_fence), records
//   that a lease runs until its fence clock + G, and answers the ring (up
//   to 32 keys). The worker keeps it in shared memory with sent + G, sent
//   being its fence clock when it sent the request: in real time before
//   the coordinator's record ends (each side measures G on its own clock).
// - A statement uses (16+) or confirms its own copy against (15) a leased
//   key while the lease runs. A key changed on the coordinator is still
//   used by every worker from its next statement: a transaction that
//   changes the ring on the coordinator counts itself a changer before its
//   first change (a BEFORE statement trigger) and waits there until every
//   lease granted before has ended (at most G). A lease granted while a
//   change is under way is granted for G = 0: its keys serve only the
//   statements that began before its request was sent, which may use the
//   ring as it was at any moment of theirs. So no statement that begins
//   after a change committed uses a key from before it.
// - The coordinator's record is in shared memory: after a restart, and
//   after a promotion (a new timeline), no change proceeds until F has
//   passed (leases of the previous life, or of the old primary).
// - Past the lease (a coordinator out for longer than F less a renewal
//   interval), a statement that needs a key waits at most 5 s plus an
//   interval for a renewal, then fails with 55000 naming why.
#include <algorithm>
#include <cstring>

#include "pg/base/pg.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_authid_d.h"
#include "common/controldata_utils.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/timeout.h"
}

#include "pg/base/catalog.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/wait_event.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/fence.hpp"
#include "pg/citus/key_lease.hpp"
#include "pg/citus/shared.hpp"
#include "pg/base/fence_clock.hpp"
#include "pg/state/shared.hpp"

extern "C" {
PG_FUNCTION_INFO_V1(shardid_citus_key_lease);
}

namespace shardid::pg {

namespace {

uint32 change_event = 0;  // a ring change waiting for the leases to end
uint32 lease_event = 0;   // a statement waiting for a lease

bool changing = false;      // this transaction counts itself among the changers
bool mind_floor = false;    // ... and the coordinator has workers (the floor applies)
bool callback_set = false;  // the transaction callback is registered

// A promotion (the timeline moved since last seen) or the first look after
// this server started: no change commits before F from now.
void observe_timeline(KeyLeases& l)
{
    if (RecoveryInProgress())
        return;
    const uint32_t tl = GetWALInsertionTimeLine();
    SpinLockAcquire(&l.mutex);
    if (l.timeline != tl) {
        l.timeline = tl;
        l.floor_ms = std::max<int64_t>(l.floor_ms, fence_clock_ms() + citus_fence_ms);
    }
    SpinLockRelease(&l.mutex);
}

// Before the changing transaction changes the ring: every lease granted
// before it counted itself a changer has ended. The end is read once:
// leases granted since were granted for 0 ms (and a wait that read them
// again would last as long as workers keep asking).
void wait_for_leases()
{
    KeyLeases& l = citus_shared->leases;
    observe_timeline(l);
    int64_t until = l.until_ms.load(std::memory_order_seq_cst);
    if (mind_floor) {
        SpinLockAcquire(&l.mutex);
        until = std::max(until, l.floor_ms);
        SpinLockRelease(&l.mutex);
    }
    for (int64_t now; (now = fence_clock_ms()) < until;) {
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                        long(std::min<int64_t>(until - now, 1000)), wait_event("ShardidKeyLeases", &change_event));
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    }
}

void xact_callback(XactEvent event, void*)
{
    if (!changing)
        return;
    switch (event) {
    case XACT_EVENT_PRE_PREPARE:
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("a transaction that changes the key ring of a Citus coordinator cannot be prepared"),
                        errdetail("Workers use the coordinator's keys under leases, which a change waits out "
                                  "before it changes the ring; a prepared change would commit later, after leases "
                                  "of the old keys were granted again."),
                        errhint("Change the key ring in a transaction of its own.")));
        break;
    case XACT_EVENT_COMMIT:
    case XACT_EVENT_ABORT:
    case XACT_EVENT_PREPARE:
    case XACT_EVENT_PARALLEL_COMMIT:
    case XACT_EVENT_PARALLEL_ABORT:
        citus_shared->leases.changers.fetch_sub(1, std::memory_order_seq_cst);
        changing = false;
        mind_floor = false;
        break;
    default: break;
    }
}

// "name:32 hex digits" into a leased key; false for anything else.
bool parse_key(const char* text, size_t len, LeasedKey* key)
{
    const char* colon = static_cast<const char*>(memchr(text, ':', len));
    if (colon == nullptr)
        return false;
    const size_t name_len = size_t(colon - text);
    if (name_len < 1 || name_len > 63 || len - name_len - 1 != 32)
        return false;
    for (size_t i = 0; i < name_len; i++) {
        const char c = text[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    const auto digit = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    for (int i = 0; i < 16; i++) {
        const int hi = digit(colon[1 + 2 * i]), lo = digit(colon[2 + 2 * i]);
        if (hi < 0 || lo < 0)
            return false;
        key->secret[i] = uint8_t(hi << 4 | lo);
    }
    memcpy(key->name, text, name_len);
    key->name[name_len] = '\0';
    return true;
}

void set_error(CitusFence* f, const char* why)
{
    citus_fence_note(f, &CitusFence::keys_error, why, "shardid citus key lease: not renewed");
}

}  // namespace

void key_leases_init(KeyLeases& l)
{
    SpinLockInit(&l.mutex);
    l.until_ms.store(0);
    l.changers.store(0);
    // Leases granted in this server's previous life end by F from now; the
    // timeline of the control file tells a later promotion.
    l.floor_ms = fence_clock_ms() + citus_fence_ms;
    bool crc_ok = false;
    const ControlFileData* control = get_controlfile(DataDir, &crc_ok);
    l.timeline = crc_ok ? control->checkPointCopy.ThisTimeLineID : 0;
}

void key_ring_changing(bool has_workers)
{
    citus_shared_attach();
    if (!callback_set) {
        RegisterXactCallback(xact_callback, nullptr);
        callback_set = true;
    }
    if (changing)
        return;
    citus_shared->leases.changers.fetch_add(1, std::memory_order_seq_cst);
    changing = true;
    mind_floor = has_workers;
    wait_for_leases();
}

int64_t key_lease_renew(CitusFence* f)
{
    const int64_t interval = citus_renewal_interval_ms();
    if (citus_local_group() <= 0) {
        SpinLockAcquire(&f->keys_mutex);
        f->keys_sent_ms = 0;
        f->n_keys = 0;
        explicit_bzero(f->keys, sizeof f->keys);
        SpinLockRelease(&f->keys_mutex);
        set_error(f, "this node is not a Citus worker: it leases no key ring");
        return interval;
    }
    const int fence = citus_fence_ms;
    const int64_t sent = fence_clock_ms();
    const char* command = psprintf("SELECT %s.shardid_citus_key_lease(%d)",
                                   quote_identifier(get_namespace_name(shardid_extension().schema)), fence);
    const char* answer = nullptr;
    // A coordinator that does not answer ends the request after a fence.
    enable_timeout_after(STATEMENT_TIMEOUT, fence);
    const bool ok = citus_coordinator_answer(command, &answer);
    disable_timeout(STATEMENT_TIMEOUT, false);
    f->keys_answered_ms.store(fence_clock_ms());
    // "lease <granted ms> <complete 0/1> name:hex ..."
    LeasedKey got[max_leased_keys];
    int n = 0;
    long long granted = -1, complete = -1;
    bool valid = false;
    if (ok && strncmp(answer, "lease ", 6) == 0) {
        int used = 0;
        valid = sscanf(answer + 6, "%lld %lld%n", &granted, &complete, &used) == 2 && granted >= 0 &&
                granted <= fence && (complete == 0 || complete == 1);
        const char* at = answer + 6 + used;
        while (valid && *at != '\0') {
            if (*at != ' ' || n == max_leased_keys) {
                valid = false;
                break;
            }
            at++;
            const size_t len = strcspn(at, " ");
            valid = parse_key(at, len, &got[n++]);
            at += len;
        }
    }
    explicit_bzero(const_cast<char*>(answer), strlen(answer));
    if (!valid) {
        explicit_bzero(got, sizeof got);
        f->errors.fetch_add(1);
        set_error(f, ok && strncmp(answer, "lease ", 6) != 0 && strlen(answer) < 64
                         ? psprintf("the coordinator answered \"%s\"", answer)
                     : ok ? "the coordinator's answer is not a lease of its key ring"
                          : psprintf("the coordinator did not answer: %s", answer));
        return std::min<int64_t>(interval, 500);
    }
    SpinLockAcquire(&f->keys_mutex);
    f->keys_sent_ms = sent;
    f->keys_until_ms = sent + granted;
    f->keys_complete = complete == 1;
    f->n_keys = n;
    memcpy(f->keys, got, sizeof(LeasedKey) * n);
    explicit_bzero(f->keys + n, sizeof(LeasedKey) * (max_leased_keys - n));
    SpinLockRelease(&f->keys_mutex);
    explicit_bzero(got, sizeof got);
    set_error(f, "");
    return interval;
}

void key_lease_failed(CitusFence* f, const char* why)
{
    f->errors.fetch_add(1);
    set_error(f, psprintf("the request to the coordinator failed: %s", why));
}

void key_lease_forget(CitusFence* f)
{
    SpinLockAcquire(&f->keys_mutex);
    f->keys_sent_ms = 0;
    f->keys_until_ms = 0;
    f->n_keys = 0;
    explicit_bzero(f->keys, sizeof f->keys);
    f->keys_error[0] = '\0';
    SpinLockRelease(&f->keys_mutex);
}

LeaseFind citus_leased_key(const char* name, int len, int64_t began_ms, uint8_t secret[16])
{
    int64_t step_at = -1;
    const int64_t bound = citus_wait_bound_ms();
    int64_t asked_at = -1;
    CitusFence* f = citus_fence_of_database();
    if (f != nullptr)
        citus_keys_wanted(f);
    for (;;) {
        if (f != nullptr) {
            const int64_t now = fence_clock_ms();
            LeaseFind found = LeaseFind::waiting;
            SpinLockAcquire(&f->keys_mutex);
            if (f->keys_sent_ms > 0 && (now < f->keys_until_ms || f->keys_sent_ms >= began_ms)) {
                found = f->keys_complete ? LeaseFind::absent : LeaseFind::beyond;
                for (int i = 0; i < f->n_keys; i++)
                    if (int(strlen(f->keys[i].name)) == len && memcmp(f->keys[i].name, name, len) == 0) {
                        memcpy(secret, f->keys[i].secret, 16);
                        found = LeaseFind::found;
                        break;
                    }
            }
            SpinLockRelease(&f->keys_mutex);
            if (found != LeaseFind::waiting)
                return found;
        }
        char why[256];
        if (!citus_fence_wait_step(&f, citus_keys_need, &CitusFence::keys_error, &step_at, bound, &asked_at,
                                   &lease_event, "ShardidKeyLease", why))
            ereport(ERROR,
                    (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                     errmsg("obfuscation key \"%.*s\" could not be confirmed with the Citus coordinator",
                            std::min(len, 63), name),
                     errdetail("A Citus worker uses the coordinator's keys under a lease the coordinator renews "
                               "within shardid.citus_fence; the lease ran out and was not renewed within %lld ms%s%s.",
                               (long long)bound, why[0] ? ": " : "", why),
                     errhint("Check that the coordinator is up and in the metadata (citus_set_coordinator_host()), "
                             "and see this worker's server log.")));
    }
}

}  // namespace shardid::pg

using namespace shardid::pg;

// shardid_citus_key_lease(fence): on the coordinator, a lease of the key
// ring for a worker (its background worker asks, as the extension's
// owner): "lease <granted ms> <complete> name:hex ...". Granted 0 while a
// change of the ring is under way; the whole ring unless it has more than
// max_leased_keys keys (complete 0).
extern "C" Datum shardid_citus_key_lease(PG_FUNCTION_ARGS)
{
    const int32 asked = PG_GETARG_INT32(0);
    if (asked < 0 || asked > 600000)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("a key lease is 0 to 600000 ms, not %d", asked)));
    if (citus_local_group() != 0)
        PG_RETURN_TEXT_P(cstring_to_text("not the coordinator"));
    citus_shared_attach();
    KeyLeases& l = citus_shared->leases;
    observe_timeline(l);
    int64_t granted = std::min<int64_t>(asked, citus_fence_ms);
    // Recorded first, then the changers read (a change counts itself, then
    // reads the leases' end): either the change waits for this lease, or
    // this lease sees the change and is granted for 0 ms.
    const int64_t until = fence_clock_ms() + granted;
    int64_t was = l.until_ms.load(std::memory_order_seq_cst);
    while (was < until && !l.until_ms.compare_exchange_weak(was, until, std::memory_order_seq_cst))
        ;
    if (l.changers.load(std::memory_order_seq_cst) > 0)
        granted = 0;
    // The ring as committed now (a snapshot taken after the above).
    const TableRows t = rows_with_key(shardid_extension().schema, "shardid_key", "name", nullptr, 0, true);
    StringInfoData out;
    initStringInfo(&out);
    appendStringInfo(&out, "lease %lld %d", (long long)granted, list_length(t.rows) <= max_leased_keys ? 1 : 0);
    int n = 0;
    ListCell* cell;
    foreach (cell, t.rows) {
        if (n == max_leased_keys)
            break;
        const HeapTuple row = static_cast<HeapTuple>(lfirst(cell));
        const char* name = TextDatumGetCString(row_value(t, row, "name"));
        bytea* secret = DatumGetByteaPP(row_value(t, row, "secret"));
        if (VARSIZE_ANY_EXHDR(secret) != 16)
            ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("obfuscation key \"%s\" is not 16 bytes", name)));
        char hex[33];
        hex[hex_encode(VARDATA_ANY(secret), 16, hex)] = '\0';
        appendStringInfo(&out, " %s:%s", name, hex);
        explicit_bzero(hex, sizeof hex);
        n++;
    }
    PG_RETURN_TEXT_P(cstring_to_text(out.data));
}
