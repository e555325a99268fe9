// Reading Citus' node metadata in pg_catalog without SQL (works on a
// standby and in a read-only transaction): src/pg/citus/metadata.cpp,
// and the group id's source that keeps what it read
// (src/pg/citus/source.cpp).
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_namespace.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

namespace shardid::pg {

// One int4 column of each row of a Citus metadata table in pg_catalog,
// passed to `each` until it returns false. False when the table or the
// column is missing. *uncommitted is set when a row passed was written by
// this transaction (what it says may yet roll back).
template <class Each>
bool scan_int_column(const char* table, const char* column, bool* uncommitted, Each each)
{
    const Oid relid = get_relname_relid(table, PG_CATALOG_NAMESPACE);
    if (!OidIsValid(relid))
        return false;
    const AttrNumber att = get_attnum(relid, column);
    if (att == InvalidAttrNumber)
        return false;
    Relation rel = table_open(relid, AccessShareLock);
    SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, nullptr, 0, nullptr);
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
        bool isnull;
        const Datum d = heap_getattr(tuple, att, RelationGetDescr(rel), &isnull);
        if (isnull)
            continue;
        if (TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tuple->t_data)))
            *uncommitted = true;
        if (!each(DatumGetInt32(d)))
            break;
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return true;
}

// pg_dist_local_group's group id and how many rows it has (up to 2);
// false without Citus.
bool local_group(int64* local, int* rows, bool* uncommitted);

}  // namespace shardid::pg
