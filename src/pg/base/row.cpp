#include "pg/base/row.hpp"

extern "C" {
#include "access/htup_details.h"
#include "utils/tuplestore.h"
}

namespace shardid::pg {

namespace {

void check_columns(TupleDesc desc, int n, int oldest)
{
    if (desc->natts > n || desc->natts < oldest)
        ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR),
                        errmsg("shardid built a row of %d columns for a result of %d columns", n, desc->natts),
                        errhint("The extension's SQL and its library are of different versions: run ALTER "
                                "EXTENSION shardid UPDATE, or reinstall it.")));
}

}  // namespace

void row_overflow(int capacity)
{
    ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("shardid built a row of more than %d columns", capacity)));
}

Datum return_record(FunctionCallInfo fcinfo, Datum* values, bool* nulls, int n)
{
    TupleDesc tupdesc;
    if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("function returning record called in context that cannot accept type record")));
    check_columns(tupdesc, n, n);
    tupdesc = BlessTupleDesc(tupdesc);
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

void put_row(FunctionCallInfo fcinfo, Datum* values, bool* nulls, int n, int oldest)
{
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    check_columns(rsinfo->setDesc, n, oldest);
    tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

}  // namespace shardid::pg
