// Time filters that plan as index range scans and prune partitions:
// id_created_within() and its per-scheme forms, with a planner support
// function that adds "id >= <first ID of the range> AND id <= <last ID of
// the range>" to the call (which stays, so the bounds of the range,
// inclusive or not, are exact).
#include "pg/base/pg.hpp"

extern "C" {
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/xact.h"
#include "catalog/pg_collation_d.h"
#include "catalog/pg_opfamily_d.h"
#include "catalog/pg_type_d.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "catalog/pg_language_d.h"
#include "catalog/pg_proc.h"
#include "utils/syscache.h"
#include "optimizer/optimizer.h"
#include "parser/parse_func.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rangetypes.h"
#include "utils/typcache.h"
#include "utils/uuid.h"
}

#include "core/schemes.hpp"
#include "core/uuidv7.hpp"
#include "pg/generate/layouts.hpp"
#include "pg/base/timeconv.hpp"

using namespace shardid;
using namespace shardid::pg;

extern "C" {
PG_FUNCTION_INFO_V1(shardid_id_created_within);
PG_FUNCTION_INFO_V1(shardid_snowflake_created_within);
PG_FUNCTION_INFO_V1(shardid_instagram_created_within);
PG_FUNCTION_INFO_V1(shardid_trace_id_created_within);
PG_FUNCTION_INFO_V1(shardid_id_range_min);
PG_FUNCTION_INFO_V1(shardid_id_range_max);
PG_FUNCTION_INFO_V1(shardid_trace_id_range_min);
PG_FUNCTION_INFO_V1(shardid_trace_id_range_max);
PG_FUNCTION_INFO_V1(shardid_uuidv7_created_within);
PG_FUNCTION_INFO_V1(shardid_uuidv7_range_min);
PG_FUNCTION_INFO_V1(shardid_uuidv7_range_max);
PG_FUNCTION_INFO_V1(shardid_created_within_support);
}

namespace {

struct Period {
    RangeType* range;
    TypeCacheEntry* typcache;
    bool empty, has_lower, has_upper;
    int64 lower_ms, upper_ms;
};

// One bound of a period: unbounded, a time in Unix ms, or (an infinite
// timestamp on the side where it holds no finite time) nothing at all.
void read_bound(const RangeBound& bound, bool* has, int64* ms, bool* empty)
{
    if (bound.infinite)
        return;
    const TimestampTz ts = DatumGetTimestampTz(bound.val);
    const bool beyond_this_side = bound.lower ? TIMESTAMP_IS_NOBEGIN(ts) : TIMESTAMP_IS_NOEND(ts);
    const bool beyond_the_other = bound.lower ? TIMESTAMP_IS_NOEND(ts) : TIMESTAMP_IS_NOBEGIN(ts);
    if (beyond_the_other)
        *empty = true;
    else if (!beyond_this_side) {
        *has = true;
        *ms = unix_ms_of(ts, "period");
    }
}

// A period's bounds in Unix ms. Infinite timestamps are read as what they
// mean: a lower bound of -infinity (an upper one of infinity) leaves that
// side unbounded, and a lower bound of infinity (an upper one of
// -infinity) holds no finite time, so no ID.
Period period_arg(FunctionCallInfo fcinfo, int argno)
{
    Period p{};
    p.range = PG_GETARG_RANGE_P(argno);
    p.typcache = lookup_type_cache(RangeTypeGetOid(p.range), TYPECACHE_RANGE_INFO);
    RangeBound lower, upper;
    range_deserialize(p.typcache, p.range, &lower, &upper, &p.empty);
    if (p.empty)
        return p;
    read_bound(lower, &p.has_lower, &p.lower_ms, &p.empty);
    read_bound(upper, &p.has_upper, &p.upper_ms, &p.empty);
    if (p.empty)
        p.has_lower = p.has_upper = false;
    return p;
}

// Is the ID (of the layout) created within the period? IDs the layout
// cannot have issued are not.
Datum layout_within(FunctionCallInfo fcinfo, const Layout& layout, int id_arg, int period_arg_no)
{
    const int64 id = PG_GETARG_INT64(id_arg);
    const Period p = period_arg(fcinfo, period_arg_no);
    Decoded d{};
    Status status;
    if (p.empty || !layout_decode(layout, id, &d, &status))
        PG_RETURN_BOOL(false);
    // A layout may outlive timestamptz: an ID made after its last finite
    // instant is created at "infinity" as far as a period can tell (a filter
    // answers, it does not fail the query; the decoders give the error).
    TimestampTz created;
    if (!timestamptz_of_unix_ms(d.unix_ms, &created))
        TIMESTAMP_NOEND(created);
    PG_RETURN_BOOL(range_contains_elem_internal(p.typcache, p.range, TimestampTzGetDatum(created)));
}

Datum range_bound(FunctionCallInfo fcinfo, const Layout* layout, int period_arg_no, bool want_max)
{
    const Period p = period_arg(fcinfo, period_arg_no);
    int64_t lo = 1, hi = 0;
    if (!p.empty) {
        if (layout)
            layout_range_ids(*layout, p.has_lower, p.lower_ms, p.has_upper, p.upper_ms, &lo, &hi);
        else
            trace_range_ids(p.has_lower, p.lower_ms, p.has_upper, p.upper_ms, &lo, &hi);
    }
    PG_RETURN_INT64(want_max ? hi : lo);
}

}  // namespace

extern "C" Datum shardid_id_created_within(PG_FUNCTION_ARGS)
{
    return layout_within(fcinfo, layout_arg(fcinfo, 0).layout, 1, 2);
}
extern "C" Datum shardid_snowflake_created_within(PG_FUNCTION_ARGS)
{
    return layout_within(fcinfo, snowflake_layout, 0, 1);
}
extern "C" Datum shardid_instagram_created_within(PG_FUNCTION_ARGS)
{
    return layout_within(fcinfo, instagram_layout, 0, 1);
}

// TraceId: its time is resolved near the period's end (or now(), when the
// period has no end), as trace_id_timestamp(id, near) does: right for IDs
// made within the 2^25 seconds (about 388 days) before near + 1 day, since
// the ID holds its time only modulo 2^25 s. A period that reaches back
// further cannot be answered from the ID: every TraceId would resolve into
// it. Such periods are refused rather than answered wrongly.
extern "C" Datum shardid_trace_id_created_within(PG_FUNCTION_ARGS)
{
    const int64 id = PG_GETARG_INT64(0);
    const Period p = period_arg(fcinfo, 1);
    if (p.empty)
        PG_RETURN_BOOL(false);
    const int64 near_ms = p.has_upper ? p.upper_ms : unix_ms_of(GetCurrentTransactionStartTimestamp(), "now");
    const int64 window_start_ms = near_ms + (trace_near_slack_s - trace_period_s) * 1000;
    if (!p.has_lower || p.lower_ms < window_start_ms)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("period reaches back further than a trace id's time can tell"),
                        errdetail("A trace id holds its time in seconds modulo 2^25 (about 388 days): it is read "
                                  "as the latest such time not after the period's end (or now) plus one day, so a "
                                  "period must start after %s.",
                                  timestamptz_to_str(timestamptz_of_unix_ms(window_start_ms))),
                        errhint("Query a shorter period, or keep the creation time in a column of its own.")));
    TraceParts parts{};
    Status status;
    if (!trace_decode(id, floor_div(near_ms, 1000), &parts, &status))
        PG_RETURN_BOOL(false);
    const Datum created = TimestampTzGetDatum(timestamptz_of_unix_ms(parts.unix_s * 1000));
    PG_RETURN_BOOL(range_contains_elem_internal(p.typcache, p.range, created));
}

extern "C" Datum shardid_id_range_min(PG_FUNCTION_ARGS)
{
    return range_bound(fcinfo, &layout_arg(fcinfo, 0).layout, 1, false);
}
extern "C" Datum shardid_id_range_max(PG_FUNCTION_ARGS)
{
    return range_bound(fcinfo, &layout_arg(fcinfo, 0).layout, 1, true);
}
// A UUID created within the period: version 7 (variant 10), its unix_ts_ms
// within the period. Other UUIDs are not (the decoders give the error).
extern "C" Datum shardid_uuidv7_created_within(PG_FUNCTION_ARGS)
{
    Uuid u;
    memcpy(u.bytes, PG_GETARG_UUID_P(0)->data, 16);
    const Period p = period_arg(fcinfo, 1);
    Uuidv7Fields f{};
    Status status;
    if (p.empty || !uuidv7_decode(u, 0, &f, &status))
        PG_RETURN_BOOL(false);
    PG_RETURN_BOOL(
        range_contains_elem_internal(p.typcache, p.range, TimestampTzGetDatum(timestamptz_of_unix_ms(f.unix_ms))));
}

namespace {
Datum uuidv7_range_bound(FunctionCallInfo fcinfo, bool want_max)
{
    const Period p = period_arg(fcinfo, 0);
    Uuid lo{}, hi{};
    if (p.empty)
        uuidv7_range(true, 1, true, 0, &lo, &hi);
    else
        uuidv7_range(p.has_lower, p.lower_ms, p.has_upper, p.upper_ms, &lo, &hi);
    auto* out = static_cast<pg_uuid_t*>(palloc(sizeof(pg_uuid_t)));
    memcpy(out->data, (want_max ? hi : lo).bytes, 16);
    return UUIDPGetDatum(out);
}
}  // namespace

extern "C" Datum shardid_uuidv7_range_min(PG_FUNCTION_ARGS) { return uuidv7_range_bound(fcinfo, false); }
extern "C" Datum shardid_uuidv7_range_max(PG_FUNCTION_ARGS) { return uuidv7_range_bound(fcinfo, true); }
extern "C" Datum shardid_trace_id_range_min(PG_FUNCTION_ARGS) { return range_bound(fcinfo, nullptr, 0, false); }
extern "C" Datum shardid_trace_id_range_max(PG_FUNCTION_ARGS) { return range_bound(fcinfo, nullptr, 0, true); }

namespace {

// A call of the bound function `name` of the predicate's schema.
Expr* bound_call(Oid nsp, const char* name, List* args, Oid result = INT8OID)
{
    Oid argtypes[2];
    int nargs = 0;
    ListCell* lc;
    foreach (lc, args)
        argtypes[nargs++] = exprType(static_cast<Node*>(lfirst(lc)));
    List* qualified = list_make2(makeString(get_namespace_name(nsp)), makeString(pstrdup(name)));
    const Oid fn = LookupFuncName(qualified, nargs, argtypes, false);
    return reinterpret_cast<Expr*>(makeFuncExpr(fn, result, args, InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL));
}

// copyObject() relies on GCC's typeof, which C++ does not have.
template <class T>
T* copy_node(T* node)
{
    return static_cast<T*>(copyObjectImpl(node));
}

bool usable_as_bound(Node* arg) { return !contain_var_clause(arg) && !contain_volatile_functions(arg); }

// The ID range a *_created_within call implies: the ID argument's position,
// and calls of the bound functions for the first and last ID of its period.
// False when the period (or the layout name) is not usable as a bound: it
// refers to a column, or is volatile.
// Which *_created_within a function is: read from the C function it calls
// (pg_proc.prosrc), not from its name, so that any other function given
// this support function is left alone rather than taken for one of them.
enum class Within { none, layout_named, snowflake, instagram, trace, uuidv7 };

Within within_kind(Oid funcid)
{
    HeapTuple tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(funcid));
    if (!HeapTupleIsValid(tup))
        return Within::none;
    const auto* form = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tup));
    Within kind = Within::none;
    bool isnull;
    const Datum src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
    if (form->prolang == ClanguageId && !isnull) {
        const char* symbol = TextDatumGetCString(src);
        static const struct {
            const char* symbol;
            Within kind;
            int nargs;
        } known[] = {{"shardid_id_created_within", Within::layout_named, 3},
                     {"shardid_snowflake_created_within", Within::snowflake, 2},
                     {"shardid_instagram_created_within", Within::instagram, 2},
                     {"shardid_trace_id_created_within", Within::trace, 2},
                     {"shardid_uuidv7_created_within", Within::uuidv7, 2}};
        for (const auto& k : known)
            if (strcmp(symbol, k.symbol) == 0 && form->pronargs == k.nargs)
                kind = k.kind;
    }
    ReleaseSysCache(tup);
    return kind;
}

bool implied_range(Oid funcid, List* args, int* id_pos, Expr** lo, Expr** hi)
{
    const Within kind = within_kind(funcid);
    if (kind == Within::none)
        return false;
    const Oid nsp = get_func_namespace(funcid);
    // (layout, id, period) or (id, period).
    const bool named_layout = kind == Within::layout_named;
    *id_pos = named_layout ? 1 : 0;
    if (exprType(static_cast<Node*>(list_nth(args, *id_pos))) != (kind == Within::uuidv7 ? UUIDOID : INT8OID))
        return false;
    Node* period = static_cast<Node*>(list_nth(args, *id_pos + 1));
    if (!usable_as_bound(period))
        return false;
    if (kind == Within::uuidv7) {
        *lo = bound_call(nsp, "uuidv7_range_min", list_make1(copy_node(period)), UUIDOID);
        *hi = bound_call(nsp, "uuidv7_range_max", list_make1(copy_node(period)), UUIDOID);
        return true;
    }
    if (kind == Within::trace) {
        *lo = bound_call(nsp, "trace_id_range_min", list_make1(copy_node(period)));
        *hi = bound_call(nsp, "trace_id_range_max", list_make1(copy_node(period)));
        return true;
    }
    Node* layout;
    if (named_layout) {
        layout = static_cast<Node*>(list_nth(args, 0));
        if (!usable_as_bound(layout))
            return false;
    } else {
        const char* preset = kind == Within::instagram ? "instagram" : "snowflake";
        layout = reinterpret_cast<Node*>(
            makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1, CStringGetTextDatum(preset), false, false));
    }
    *lo = bound_call(nsp, "id_range_min", list_make2(copy_node(layout), copy_node(period)));
    *hi = bound_call(nsp, "id_range_max", list_make2(copy_node(layout), copy_node(period)));
    return true;
}

// "column >= lo" and "column <= hi" with the btree operators of bigint
// (or uuid).
List* range_clauses(Expr* column, Expr* lo, Expr* hi)
{
    const bool uuid = exprType(reinterpret_cast<Node*>(column)) == UUIDOID;
    const Oid family = uuid ? lookup_type_cache(UUIDOID, TYPECACHE_BTREE_OPFAMILY)->btree_opf : INTEGER_BTREE_FAM_OID;
    const Oid type = uuid ? UUIDOID : INT8OID;
    const Oid ge = get_opfamily_member(family, type, type, BTGreaterEqualStrategyNumber);
    const Oid le = get_opfamily_member(family, type, type, BTLessEqualStrategyNumber);
    if (!OidIsValid(ge) || !OidIsValid(le))
        return NIL;
    auto* lower = reinterpret_cast<OpExpr*>(make_opclause(ge, BOOLOID, false, column, lo, InvalidOid, InvalidOid));
    auto* upper = reinterpret_cast<OpExpr*>(
        make_opclause(le, BOOLOID, false, static_cast<Expr*>(copy_node(column)), hi, InvalidOid, InvalidOid));
    set_opfuncid(lower);
    set_opfuncid(upper);
    return list_make2(lower, upper);
}

}  // namespace

// The planner support of every *_created_within function. While planning
// (SupportRequestSimplify) the call becomes
//     call AND id >= <first ID of the period> AND id <= <last ID>,
// the same predicate (the call implies the range; the call stays, so the
// bounds of the period, inclusive or not, are exact) in a form the planner
// uses for an index range scan on the ID and for partition pruning on it.
// A constant period's bounds are folded to constants here (the planner
// prunes); a now()-relative one's are evaluated when the executor starts
// (and prunes then).
extern "C" Datum shardid_created_within_support(PG_FUNCTION_ARGS)
{
    Node* raw = reinterpret_cast<Node*>(PG_GETARG_POINTER(0));
    if (!IsA(raw, SupportRequestSimplify))
        PG_RETURN_DATUM(Datum(0));
    auto* req = reinterpret_cast<SupportRequestSimplify*>(raw);
    if (req->root == nullptr)
        PG_RETURN_DATUM(Datum(0));
    FuncExpr* call = req->fcall;
    int id_pos;
    Expr *lo, *hi;
    if (!implied_range(call->funcid, call->args, &id_pos, &lo, &hi))
        PG_RETURN_DATUM(Datum(0));
    lo = reinterpret_cast<Expr*>(eval_const_expressions(req->root, reinterpret_cast<Node*>(lo)));
    hi = reinterpret_cast<Expr*>(eval_const_expressions(req->root, reinterpret_cast<Node*>(hi)));
    List* range = range_clauses(static_cast<Expr*>(copy_node(list_nth(call->args, id_pos))), lo, hi);
    if (range == NIL)
        PG_RETURN_DATUM(Datum(0));
    // A new node for the call itself: simplification does not revisit what
    // a support function returns, so this does not recurse.
    PG_RETURN_POINTER(make_andclause(lcons(copy_node(call), range)));
}
