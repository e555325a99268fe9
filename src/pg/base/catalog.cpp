#include <cstring>

#include "pg/base/catalog.hpp"

extern "C" {
#include "access/genam.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "utils/fmgroids.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace shardid::pg {

TableRows rows_with_key(Oid nsp, const char* table, const char* column, const char* key, int len, bool latest)
{
    const Oid relid = get_relname_relid(table, nsp);
    if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_RELATION)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE), errmsg("table \"%s\" of shardid is missing", table),
                        errhint("Reinstall the extension.")));
    Relation rel = table_open(relid, AccessShareLock);
    TableRows out{relid, CreateTupleDescCopy(RelationGetDescr(rel)), NIL};
    const AttrNumber att = get_attnum(relid, column);
    if (att == InvalidAttrNumber || TupleDescAttr(out.desc, att - 1)->atttypid != TEXTOID)
        elog(ERROR, "column \"%s\" of shardid table \"%s\" is missing", column, table);

    Snapshot snapshot = RegisterSnapshot(latest ? GetLatestSnapshot() : GetTransactionSnapshot());
#if PG_VERSION_NUM >= 190000
    // 19 added the caller's scan flags.
    TableScanDesc scan = table_beginscan(rel, snapshot, 0, nullptr, SO_NONE);
#else
    TableScanDesc scan = table_beginscan(rel, snapshot, 0, nullptr);
#endif
    HeapTuple tuple;
    while ((tuple = heap_getnext(scan, ForwardScanDirection)) != nullptr) {
        bool isnull;
        const Datum d = heap_getattr(tuple, att, out.desc, &isnull);
        if (isnull)
            continue;
        text* t = DatumGetTextPP(d);
        if (key == nullptr || (int(VARSIZE_ANY_EXHDR(t)) == len && memcmp(VARDATA_ANY(t), key, len) == 0))
            out.rows = lappend(out.rows, heap_copytuple(tuple));
    }
    table_endscan(scan);
    UnregisterSnapshot(snapshot);
    table_close(rel, AccessShareLock);
    return out;
}

Datum row_value(const TableRows& t, HeapTuple row, const char* column)
{
    for (int i = 0; i < t.desc->natts; i++) {
        Form_pg_attribute a = TupleDescAttr(t.desc, i);
        if (!a->attisdropped && strcmp(NameStr(a->attname), column) == 0) {
            bool isnull;
            const Datum d = heap_getattr(row, a->attnum, t.desc, &isnull);
            if (isnull)
                ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED), errmsg("shardid catalog row has a null %s", column)));
            return d;
        }
    }
    elog(ERROR, "column \"%s\" of a shardid table is missing", column);
    pg_unreachable();
}

ExtensionRow shardid_extension()
{
    ScanKeyData key;
    ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ, CStringGetDatum("shardid"));
    Relation rel = table_open(ExtensionRelationId, AccessShareLock);
    SysScanDesc scan = systable_beginscan(rel, ExtensionNameIndexId, true, nullptr, 1, &key);
    const HeapTuple tuple = systable_getnext(scan);
    ExtensionRow row{InvalidOid, InvalidOid};
    if (HeapTupleIsValid(tuple)) {
        const auto* form = reinterpret_cast<Form_pg_extension>(GETSTRUCT(tuple));
        row = ExtensionRow{form->extnamespace, form->extowner};
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    if (!OidIsValid(row.schema))
        elog(ERROR, "extension shardid is not installed");
    return row;
}

}  // namespace shardid::pg
