#include "pg/state/wal.hpp"

extern "C" {
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "miscadmin.h"
}

#include "pg/base/settings.hpp"
#include "pg/state/shmem.hpp"

namespace shardid::pg {

namespace {

constexpr uint8 xlog_node_state = 0x00;
bool registered = false;

void redo(XLogReaderState* record)
{
    const uint8 info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
    NodeState st;
    if (info != xlog_node_state || !node_state_parse_checked(XLogRecGetData(record), XLogRecGetDataLen(record), &st))
        elog(PANIC, "shardid redo: unknown or malformed record (info %u)", unsigned(info));
    replay_node_state(st);
}

void desc(StringInfo buf, XLogReaderState* record)
{
    NodeState st;
    if ((XLogRecGetInfo(record) & ~XLR_INFO_MASK) != xlog_node_state ||
        !node_state_parse_checked(XLogRecGetData(record), XLogRecGetDataLen(record), &st)) {
        appendStringInfoString(buf, "malformed");
        return;
    }
    for (const NodeStateField& f : node_state_fields)
        if (!node_state_field_own(f.kind))  // the data directory's own, never in WAL
            appendStringInfo(buf, "%s %lld%s; ", f.description, (long long)(st.*f.member), f.unit);
    appendStringInfo(buf, "%d layout marks", st.n_marks);
    for (int i = 0; i < st.n_marks; i++) {
        const LayoutMark& m = st.marks[i];
        const Layout layout = m.shape.layout(m.name);
        appendStringInfo(buf, "%s %s at tick %llu sequence %llu", i == 0 ? ":" : ",", m.name,
                         (unsigned long long)layout.packed_tick(m.word),
                         (unsigned long long)layout.packed_sequence(m.word));
    }
}

const char* identify(uint8 info) { return (info & ~XLR_INFO_MASK) == xlog_node_state ? "NODE_STATE" : nullptr; }

RmgrData rmgr = {
    "shardid",  // rm_name
    redo,       // rm_redo
    desc,       // rm_desc
    identify,   // rm_identify
    nullptr,    // rm_startup
    nullptr,    // rm_cleanup
    nullptr,    // rm_mask
    nullptr,    // rm_decode: logical decoding has nothing to decode in these records
};

}  // namespace

void wal_init()
{
    if (!process_shared_preload_libraries_in_progress)
        return;
    RegisterCustomRmgr(shardid_rmgr_id, &rmgr);
    registered = true;
}

bool wal_registered() { return registered; }

bool wal_logging() { return registered && wal_log_mark; }

XLogRecPtr wal_log_state(const NodeState& st)
{
    StringInfoData buf;
    initStringInfo(&buf);
    node_state_format(st, &buf);
    XLogBeginInsert();
    XLogRegisterData(buf.data, buf.len);
    const XLogRecPtr end = XLogInsert(shardid_rmgr_id, xlog_node_state);
    pfree(buf.data);
    return end;
}

void refuse_on_standby()
{
    if (RecoveryInProgress())
        ereport(ERROR,
                (errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION), errmsg("cannot generate shardid IDs on a standby server"),
                 errdetail("This server is in recovery: it replays the primary's node state and must not "
                           "issue IDs of its own."),
                 errhint("Generate IDs on the primary, or promote this server first.")));
}

}  // namespace shardid::pg
