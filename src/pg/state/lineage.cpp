// The node's history: drawn, awaited, adopted and checked against each
// database's shardid_lineage (src/pg/state/lineage.hpp). Shared struct and
// locking rules: src/pg/state/shared.hpp (the history is written under
// state_lock; histories_version is raised after each change).
#include "pg/state/lineage.hpp"

#include <atomic>

#include "core/clock.hpp"
#include "pg/base/catalog.hpp"
#include "pg/base/invalidation.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/shared.hpp"
#include "pg/state/shmem.hpp"
#include "pg/state/state_file.hpp"
#include "pg/state/wal.hpp"

extern "C" {
#include <unistd.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
}

namespace shardid::pg {

namespace {

constexpr const char* lineage_table = "shardid_lineage";

bool exists(const char* path) { return access(path, F_OK) == 0; }

int64_t draw_history()
{
    uint64_t v = 0;
    while (v == 0) {
        if (!pg_strong_random(&v, sizeof v))
            ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("could not draw a random node history")));
        v &= uint64_t(INT64_MAX);
    }
    return int64_t(v);
}

// The node's own history and the adopted ones, as the checks read them.
NodeState known_histories_locked()
{
    NodeState known;
    known.history = shared->history.load();
    known.history_began_ms = shared->history_began_ms;
    known.awaiting = shared->awaiting.load();
    known.adopted = shared->adopted;
    return known;
}

}  // namespace

NodeState known_histories()
{
    LWLockAcquire(&shared->state_lock, LW_SHARED);
    const NodeState known = known_histories_locked();
    LWLockRelease(&shared->state_lock);
    return known;
}

namespace {

// A backend's last check of its database (confirm_history()): valid while
// the node's histories_version is the one it saw and no invalidation of
// shardid_lineage came since.
bool checked = false;
uint64_t checked_version = 0;
Oid lineage_relid = InvalidOid;
bool callback_registered = false;

void lineage_changed(Oid relid)
{
    if (relid == InvalidOid || relid == lineage_relid)
        checked = false;
}

[[noreturn]] void raise_awaiting(int64_t own)
{
    char h[history_text_len + 1];
    history_text(own, h);
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("this server awaits the node state of the server it was upgraded from"),
             errdetail("pg_upgrade made this data directory (history %s) and carries the databases but not shardid's "
                       "node state, which bounds every ID the old server issued: without it, those IDs could be "
                       "issued again.",
                       h),
             errhint("A superuser adopts the old server's node state: shardid_adopt_state() with the contents of "
                     "shardid.hwm in the old data directory, read after the old server stopped (\"Upgrading "
                     "PostgreSQL\" in shardid's documentation).")));
}

[[noreturn]] void raise_unknown(int64_t unknown, int64_t own)
{
    char u[history_text_len + 1], h[history_text_len + 1];
    history_text(unknown, u);
    history_text(own, h);
    ereport(ERROR,
            (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
             errmsg("this database holds IDs of node history %s, which this server does not continue", u),
             errdetail("Its table shardid_lineage names history %s, which this server's node state (history %s) "
                       "neither is nor adopted: the database came from another server (a dump restored here, or a "
                       "copy), whose IDs could be issued again.",
                       u, h),
             errhint("A superuser adopts that server's node state with shardid_adopt_state(): its "
                     "shardid_export_state(), or its shardid.hwm once it has stopped (\"Upgrading PostgreSQL\" in "
                     "shardid's documentation).")));
}

}  // namespace

void mark_upgrade_target()
{
    // The new cluster's data directory holds pg_upgrade's output (15 on);
    // the old one's does not.
    if (!IsBinaryUpgrade || !exists("pg_upgrade_output.d"))
        return;
    NodeState st;
    if (state_file_read(&st) == StateFileRead::corrupt || (st.awaiting == 1 && st.history != 0))
        return;  // unreadable: refused at attach anyway; awaiting already
    if (st.history == 0) {
        st.history = draw_history();
        st.history_began_ms = wall_clock().now_ms();
    }
    st.awaiting = 1;
    state_file_write(st);
    ereport(LOG, (errmsg("shardid: this data directory awaits the node state of the server pg_upgrade upgrades"),
                  errdetail("pg_upgrade does not carry shardid.hwm; the upgraded server issues no ID until a "
                            "superuser adopts the old server's state with shardid_adopt_state().")));
}

void begin_history_if_none(NodeState& st)
{
    if (st.history != 0 || exists("standby.signal") || (IsUnderPostmaster && RecoveryInProgress()))
        return;
    st.history = draw_history();
    st.history_began_ms = wall_clock().now_ms();
    state_file_write(st);
}

bool unknown_histories(Oid nsp, int64_t* out, int max, int* n)
{
    *n = 0;
    const Oid relid = get_relname_relid(lineage_table, nsp);
    if (!OidIsValid(relid))
        return false;
    lineage_relid = relid;
    const TableRows t = rows_with_key(nsp, lineage_table, "history", nullptr, 0);
    const NodeState known = known_histories();
    ListCell* lc;
    foreach (lc, t.rows) {
        text* v = DatumGetTextPP(row_value(t, static_cast<HeapTuple>(lfirst(lc)), "history"));
        int64_t history = 0;
        if (!history_parse(VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v), &history))
            ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                            errmsg("table shardid_lineage holds a malformed history \"%s\"", text_to_cstring(v)),
                            errdetail("A history is 16 lowercase hexadecimal digits, as shardid writes it."),
                            errhint("Restore the table from the dump of this database.")));
        bool listed = history_known(known, history);
        for (int i = 0; i < *n && !listed; i++)
            listed = out[i] == history;
        if (!listed && *n < max)
            out[(*n)++] = history;
    }
    return true;
}

void confirm_history(FunctionCallInfo fcinfo)
{
    if (checked && checked_version == shared->histories_version.load(std::memory_order_acquire))
        return;
    attach_if_needed();
    raise_if_corrupt();  // an unreadable state file says so first: it holds no history either
    if (!callback_registered) {
        on_relation_change(lineage_changed);
        callback_registered = true;
    }
    const uint64_t version = shared->histories_version.load(std::memory_order_acquire);
    const NodeState known = known_histories();
    if (known.awaiting != 0)
        raise_awaiting(known.history);
    int64_t unknown = 0;
    int n = 0;
    unknown_histories(get_func_namespace(fcinfo->flinfo->fn_oid), &unknown, 1, &n);
    if (n > 0)
        raise_unknown(unknown, known.history);
    checked_version = version;
    checked = true;
}

void replay_histories(const NodeState& st)
{
    bool changed = false;
    if (st.history != 0 && st.history != shared->history.load()) {
        shared->history.store(st.history);
        shared->history_began_ms = st.history_began_ms;
        changed = true;
    }
    for (int i = 0; i < st.adopted.n; i++)
        if (!shared->adopted.has(st.adopted.list[i].history)) {
            shared->adopted.add(st.adopted.list[i].history, st.adopted.list[i].at_ms);
            changed = true;
        }
    if (st.awaiting != shared->awaiting.load()) {
        shared->awaiting.store(st.awaiting);
        changed = true;
    }
    if (changed)
        shared->histories_version.fetch_add(1, std::memory_order_acq_rel);
}

void adopt_histories_locked(const NodeState& from)
{
    NodeState node = known_histories_locked();
    const bool was_awaiting = node.awaiting != 0;
    adopt_histories(node, from, wall_clock().now_ms());
    shared->adopted = node.adopted;
    shared->awaiting.store(0);
    if (was_awaiting && from.release_token != 0)
        shared->release_token.store(from.release_token);
    shared->histories_version.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace shardid::pg
