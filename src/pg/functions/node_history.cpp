// The node's history in SQL (src/pg/state/lineage.hpp): shardid_node_history()
// says where the node's floors came from, shardid_export_state() gives the
// node state as its file holds it, and shardid_adopt_state() merges the
// state of the server a database came from (docs/install.md, "Upgrading
// PostgreSQL").
#include "core/clock.hpp"
#include "pg/base/guard.hpp"
#include "pg/base/pg.hpp"
#include "pg/base/row.hpp"
#include "pg/base/settings.hpp"
#include "pg/base/timeconv.hpp"
#include "pg/state/lineage.hpp"
#include "pg/state/shared.hpp"
#include "pg/state/shmem.hpp"
#include "pg/state/state_file.hpp"
#include "pg/state/wal.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_node_history);
PG_FUNCTION_INFO_V1(shardid_export_state);
PG_FUNCTION_INFO_V1(shardid_adopt_state);
}

namespace {

Datum history_datum(int64_t history)
{
    char h[history_text_len + 1];
    history_text(history, h);
    return CStringGetTextDatum(h);
}

Datum history_array(const int64_t* histories, int n)
{
    Datum* elems = static_cast<Datum*>(palloc(sizeof(Datum) * size_t(n > 0 ? n : 1)));
    for (int i = 0; i < n; i++)
        elems[i] = history_datum(histories[i]);
    return PointerGetDatum(construct_array(elems, n, TEXTOID, -1, false, TYPALIGN_INT));
}

// Where the node's floors came from, in words.
const char* floors_from(const NodeState& known)
{
    if (known.awaiting != 0)
        return "awaiting the node state of the server pg_upgrade upgraded this one from: nothing is issued until a "
               "superuser adopts it (shardid_adopt_state())";
    if (known.history == 0)
        return "no history yet: a standby takes its primary's from WAL";
    if (known.adopted.n == 0)
        return "this data directory's own node state";
    return psprintf("this data directory's own node state and the adopted state of %d other histor%s", known.adopted.n,
                    known.adopted.n == 1 ? "y" : "ies");
}

void refuse_unless_superuser(const char* function)
{
    if (!superuser())
        ereport(ERROR,
                (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE), errmsg("permission denied for function %s", function),
                 errdetail("Adopting another server's node state raises every floor of this node; only a superuser "
                           "decides which server this one continues.")));
}

}  // namespace

// One row: the node's history, when it began, whether it awaits its
// predecessor's state, the histories it adopted, those this database
// names that it does not continue (generation here is refused while there
// are any), and where its floors came from.
extern "C" Datum shardid_node_history(PG_FUNCTION_ARGS)
{
    attach_if_needed();
    const NodeState known = known_histories();
    int64_t adopted[Histories::max];
    for (int i = 0; i < known.adopted.n; i++)
        adopted[i] = known.adopted.list[i].history;
    int64_t unknown[Histories::max];
    int n_unknown = 0;
    unknown_histories(get_func_namespace(fcinfo->flinfo->fn_oid), unknown, Histories::max, &n_unknown);
    Row<6> row;
    known.history != 0 ? row.add(history_datum(known.history)) : row.add_null();
    known.history_began_ms != 0 ? row.add(TimestampTzGetDatum(timestamptz_of_unix_ms(known.history_began_ms)))
                                : row.add_null();
    row.add(BoolGetDatum(known.awaiting != 0));
    row.add(history_array(adopted, known.adopted.n));
    row.add(history_array(unknown, n_unknown));
    row.add(CStringGetTextDatum(floors_from(known)));
    return return_row(fcinfo, row);
}

// The node state as shardid.hwm holds it now: it covers every ID this node
// issued so far (the state is written ahead of use).
extern "C" Datum shardid_export_state(PG_FUNCTION_ARGS)
{
    refuse_unless_superuser("shardid_export_state");
    attach_if_needed();
    raise_if_corrupt();
    LWLockAcquire(&shared->state_lock, LW_EXCLUSIVE);  // persisted_state() retires marks
    const NodeState st = persisted_state();
    LWLockRelease(&shared->state_lock);
    StringInfoData buf;
    initStringInfo(&buf);
    node_state_format(st, &buf);
    PG_RETURN_TEXT_P(cstring_to_text_with_len(buf.data, buf.len));
}

// Merges the state of the server a database came from into this node's:
// every mark and floor only raised, its history recorded as adopted, the
// wait of a pg_upgrade target ended. Returns where the floors come from now.
extern "C" Datum shardid_adopt_state(PG_FUNCTION_ARGS)
{
    refuse_unless_superuser("shardid_adopt_state");
    refuse_on_standby();
    attach_if_needed();
    raise_if_corrupt();
    // The file's text, or the same without its last newline (what $(cat
    // FILE) and psql's variables make of it).
    text* t = PG_GETARG_TEXT_PP(0);
    StringInfoData in;
    initStringInfo(&in);
    appendBinaryStringInfo(&in, VARDATA_ANY(t), int(VARSIZE_ANY_EXHDR(t)));
    if (in.len > 0 && in.data[in.len - 1] != '\n')
        appendStringInfoChar(&in, '\n');
    NodeState from;
    if (!node_state_parse_checked(in.data, size_t(in.len), &from))
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION), errmsg("the text given is not a shardid node state"),
                 errdetail("A node state is what shardid.hwm holds, or what shardid_export_state() returns, "
                           "whole (its first line is \"shardid node state v3\")."),
                 errhint("Pass the whole contents of the old server's shardid.hwm.")));
    Status status;
    const NodeState known = known_histories();
    if (!guarded(status, [&] {
            status = adopt_check(known, from);
            return status.ok();
        }))
        raise(status);
    replay_node_state(from, true);
    char h[history_text_len + 1];
    history_text(from.history, h);
    ereport(NOTICE, (errmsg("shardid adopted the node state of history %s", from.history != 0 ? h : "(none)"),
                     errdetail("Every ID this node issues from now on lies above what that state covers.")));
    PG_RETURN_TEXT_P(cstring_to_text(floors_from(known_histories())));
}
