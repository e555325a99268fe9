// The layout carriers' dependency on the extension (sql/shardid--1.2.sql,
// shardid_make_carrier(); their reading: src/pg/generate/layouts.cpp). A carrier
// normally depends on shardid as ALTER FUNCTION ... DEPENDS ON EXTENSION
// records it, which pg_dump carries. On Citus the carrier is a distributed
// function (Citus creates it on every node, and on nodes added later), and
// Citus refuses that dependency for one; so it gets an automatic
// dependency on the extension instead, recorded here, and DROP EXTENSION
// shardid still drops it with the extension. On a Citus worker, where the
// carrier arrives by Citus, DROP EXTENSION shardid records the same
// dependency first (carriers_before_drop(), called by the utility hook in
// src/pg/module.cpp) for every carrier that has no
// dependency on an extension: without it, the carriers, which depend on
// the extension's schema shardid_carrier, would make the drop fail.
#include "pg/generate/layouts.hpp"

extern "C" {
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/indexing.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_proc.h"
#include "commands/extension.h"
#include "nodes/parsenodes.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

extern "C" {
PG_FUNCTION_INFO_V1(shardid_carrier_depend);
}

namespace shardid::pg {

namespace {

// Does function `fn` depend on an extension, in any way?
bool depends_on_extension(Oid fn)
{
    ScanKeyData key[2];
    ScanKeyInit(&key[0], Anum_pg_depend_classid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(ProcedureRelationId));
    ScanKeyInit(&key[1], Anum_pg_depend_objid, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(fn));
    Relation rel = table_open(DependRelationId, AccessShareLock);
    SysScanDesc scan = systable_beginscan(rel, DependDependerIndexId, true, nullptr, 2, key);
    bool found = false;
    HeapTuple tuple;
    while (!found && HeapTupleIsValid(tuple = systable_getnext(scan))) {
        const Form_pg_depend d = (Form_pg_depend)GETSTRUCT(tuple);
        found = d->refclassid == ExtensionRelationId;
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    return found;
}

// Records that function `fn` is dropped with extension `ext` (unless it
// depends on an extension already).
void depend_on(Oid fn, Oid ext)
{
    if (depends_on_extension(fn))
        return;
    const ObjectAddress dependent = {ProcedureRelationId, fn, 0};
    const ObjectAddress referenced = {ExtensionRelationId, ext, 0};
    recordDependencyOn(&dependent, &referenced, DEPENDENCY_AUTO);
}

// Every function of the carriers' schema (none when there is no schema).
void depend_all_carriers(Oid ext)
{
    const Oid nsp = get_namespace_oid(carrier_schema_name, true);
    if (!OidIsValid(nsp))
        return;
    Relation rel = table_open(ProcedureRelationId, AccessShareLock);
    SysScanDesc scan = systable_beginscan(rel, InvalidOid, false, nullptr, 0, nullptr);
    HeapTuple tuple;
    while (HeapTupleIsValid(tuple = systable_getnext(scan))) {
        const Form_pg_proc p = (Form_pg_proc)GETSTRUCT(tuple);
        if (p->pronamespace == nsp)
            depend_on(p->oid, ext);
    }
    systable_endscan(scan);
    table_close(rel, AccessShareLock);
    CommandCounterIncrement();
}

}  // namespace

// DROP EXTENSION naming shardid (not IF EXISTS of a missing one): its
// carriers go with it, wherever they came from.
void carriers_before_drop(Node* stmt)
{
    if (!IsA(stmt, DropStmt) || castNode(DropStmt, stmt)->removeType != OBJECT_EXTENSION)
        return;
    ListCell* lc;
    foreach (lc, castNode(DropStmt, stmt)->objects) {
        const char* name = strVal(lfirst(lc));
        const Oid ext = strcmp(name, "shardid") == 0 ? get_extension_oid(name, true) : InvalidOid;
        if (OidIsValid(ext))
            depend_all_carriers(ext);
    }
}

}  // namespace shardid::pg

// shardid_carrier_depend(carrier regprocedure): the automatic dependency
// above, for a carrier Citus distributed (shardid_make_carrier() calls it;
// superusers only).
extern "C" Datum shardid_carrier_depend(PG_FUNCTION_ARGS)
{
    const Oid fn = PG_GETARG_OID(0);
    const Oid nsp = get_func_namespace(fn);
    const char* nspname = OidIsValid(nsp) ? get_namespace_name(nsp) : nullptr;
    if (nspname == nullptr || strcmp(nspname, shardid::pg::carrier_schema_name) != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("function %u is not a layout carrier", fn),
                        errdetail("Layout carriers are the functions of the schema shardid_carrier.")));
    shardid::pg::depend_on(fn, get_extension_oid("shardid", false));
    PG_RETURN_VOID();
}
