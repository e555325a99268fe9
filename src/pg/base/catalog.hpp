// Reading shardid's own tables (the layout catalog, the key ring) without
// SQL: a heap scan of the table in the extension's schema, keys compared in
// C. Nothing is resolved through anyone's search_path, no operator or
// function of anyone's runs, and no identity is switched (the extension's
// functions read these rows on the caller's behalf and return only what
// they compute from them).
#pragma once

#include "pg/base/pg.hpp"

extern "C" {
#include "access/htup.h"
#include "access/tupdesc.h"
#include "nodes/pg_list.h"
}

namespace shardid::pg {

struct TableRows {
    Oid relid;       // the table read
    TupleDesc desc;  // a copy, valid with the rows
    List* rows;      // HeapTuple copies whose text column matched
};

// The rows of table `table` in schema `nsp` whose text column `column`
// equals key[0..len) (every row with a non-null `column`: key nullptr), as
// of the transaction's snapshot (latest: of a snapshot taken now, whatever
// the isolation level). ereports if the table is missing.
TableRows rows_with_key(Oid nsp, const char* table, const char* column, const char* key, int len, bool latest = false);

// Column `column` of a row from rows_with_key(); ereports on NULL.
Datum row_value(const TableRows& t, HeapTuple row, const char* column);

// Extension shardid's row of pg_extension: its schema and its owner
// (PostgreSQL 15 exports no lookup of either). ereports when shardid is
// not installed in this database.
struct ExtensionRow {
    Oid schema;
    Oid owner;
};
ExtensionRow shardid_extension();

}  // namespace shardid::pg
