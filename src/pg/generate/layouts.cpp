#include <cstring>
#include <iterator>

#include "pg/generate/layouts.hpp"
#include "pg/base/invalidation.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_language_d.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_proc.h"
#include "common/int.h"
#include "miscadmin.h"
#include "nodes/value.h"
#include "parser/parse_func.h"
#include "utils/array.h"
#include "utils/syscache.h"
#include "catalog/pg_type_d.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
}

#include "core/schemes.hpp"
#include "pg/base/catalog.hpp"
#include "pg/base/guard.hpp"
#include "pg/state/shmem.hpp"
#include "pg/base/timeconv.hpp"

namespace shardid::pg {

namespace {

// The shape of a user layout (they never wrap, and count their sequence
// from 0), with its fields named. Widths are checked by the caller.
Shape user_shape(int64 epoch_ms, int64 unit_ms, int time_bits, int shard_bits, int sequence_bits)
{
    Shape shape;
    shape.epoch_ms = epoch_ms;
    shape.unit_ms = unit_ms;
    shape.time_bits = uint8_t(time_bits);
    shape.shard_bits = uint8_t(shard_bits);
    shape.sequence_bits = uint8_t(sequence_bits);
    shape.sequence_first = 0;
    shape.wraps = false;
    return shape;
}
// A user layout from its fields, checked as the engine needs it: each
// width 0..63, then Layout::validate(); false (22023) otherwise. Both
// create_layout()'s check and a dump carrier's reading go through it.
bool checked_layout(const char* name, int64 epoch_ms, int64 unit_ms, int32 time_bits, int32 shard_bits,
                    int32 sequence_bits, Layout* out, Status* status)
{
    for (int32 b : {time_bits, shard_bits, sequence_bits})
        if (!field_width_fits(b)) {
            *status =
                Status::fail(Error::invalid_parameter, "bit widths must be between 0 and %u, not %d", max_id_bits, b);
            return false;
        }
    *out = user_shape(epoch_ms, unit_ms, time_bits, shard_bits, sequence_bits).layout(name);
    return guarded(*status, [&] {
        *status = out->validate();
        return status->ok();
    });
}

// The per-backend cache of user layouts holds only committed definitions,
// by the same mechanism that keeps PostgreSQL's own caches right: a change
// of the catalog sends an invalidation (the statement trigger
// shardid_user_layout_changed on every INSERT; DROP EXTENSION drops the
// table), which other backends apply when the change commits and which
// this backend applies at once and again when its transaction or
// subtransaction rolls back. So a layout read inside a transaction that
// made it and then rolled back is forgotten at the rollback, and a layout
// another session commits is read afresh. Entries read from a carrier
// function (no catalog row yet) are forgotten on any change of pg_proc,
// which covers a carrier made, replaced or dropped, committed or rolled
// back.
LayoutEntry preset_entries[std::size(presets)];
LayoutEntry user_entries[max_slots];
int n_user_entries = 0;
int n_carried_entries = 0;        // entries read from a carrier function
Oid layout_catalog = InvalidOid;  // the relation the entries were read from
// Bumped whenever cached user layouts may be stale; fn_extra caches
// compare it.
uint64 cache_generation = 1;
bool callback_registered = false;

void forget_user_layouts()
{
    n_user_entries = 0;
    n_carried_entries = 0;
    cache_generation++;
}

// Relcache callback: only the layout catalog's invalidations (or a reset
// of every relation, InvalidOid) concern the cache.
void layout_catalog_changed(Oid relid)
{
    if (n_user_entries > 0 && (relid == InvalidOid || relid == layout_catalog))
        forget_user_layouts();
}

// Syscache callback on pg_proc: a carrier function changed, or may have.
void functions_changed(Datum, SyscacheId, uint32)
{
    if (n_carried_entries > 0)
        forget_user_layouts();
}

struct CallCache {
    uint64 generation;
    LayoutEntry* entry;
    int len;
    char name[max_name_len + 1];
};

LayoutEntry* find_user_entry(const char* name, int len)
{
    for (int i = 0; i < n_user_entries; i++)
        if (int(strlen(user_entries[i].name)) == len && memcmp(user_entries[i].name, name, len) == 0)
            return &user_entries[i];
    return nullptr;
}

constexpr const char* carrier_format = "SELECT 'shardid layout v1: name=%s epoch_ms=%lld unit_ms=%lld time_bits=%d "
                                       "shard_bits=%d sequence_bits=%d'::text";

// The schema of the layout carriers, if it is there and a superuser's.
Oid carrier_schema()
{
    const Oid nsp = get_namespace_oid(carrier_schema_name, true);
    if (!OidIsValid(nsp))
        return InvalidOid;
    HeapTuple tup = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(nsp));
    if (!HeapTupleIsValid(tup))
        return InvalidOid;
    const bool ours = superuser_arg(reinterpret_cast<Form_pg_namespace>(GETSTRUCT(tup))->nspowner);
    ReleaseSysCache(tup);
    return ours ? nsp : InvalidOid;
}

// A layout whose catalog row is not there (yet): a restore of a dump
// brings back the layout's carrier "shardid_layout$<name>"() with the
// schema, before the catalog's rows (see shardid--1.1--1.2.sql). Only a SQL
// function of that name in the superuser-owned schema shardid_carrier,
// itself owned by a superuser, counts; its body is the one
// shardid_carrier_body() wrote, read and never run.
bool carried_layout(const char* name, Layout* out)
{
    if (!valid_name(name, strlen(name)))
        return false;
    const Oid nsp = carrier_schema();
    if (!OidIsValid(nsp))
        return false;
    // Looked up in the catalog directly, as shardid's own reading: the
    // caller needs no privilege on the schema (nothing is run).
    char* fname = carrier_name(name);
    oidvector* no_args = buildoidvector(nullptr, 0);
    HeapTuple tup =
        SearchSysCache3(PROCNAMEARGSNSP, CStringGetDatum(fname), PointerGetDatum(no_args), ObjectIdGetDatum(nsp));
    if (!HeapTupleIsValid(tup))
        return false;
    const auto* form = reinterpret_cast<Form_pg_proc>(GETSTRUCT(tup));
    bool usable = form->prolang == SQLlanguageId && superuser_arg(form->proowner);
    char* body = nullptr;
    if (usable) {
        bool isnull;
        const Datum src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
        usable = !isnull;
        if (usable)
            body = TextDatumGetCString(src);
    }
    ReleaseSysCache(tup);
    long long epoch_ms = 0, unit_ms = 0;
    int time_bits = 0, shard_bits = 0, sequence_bits = 0;
    if (usable) {
        // The body must be exactly what carrier_body() writes for this
        // name: read its numbers with the same format (the name put in place
        // of its %s; names have no '%'), then write it again and compare.
        const int name_at = int(strstr(carrier_format, "%s") - carrier_format);
        const char* scan = psprintf("%.*s%s%s", name_at, carrier_format, name, carrier_format + name_at + 2);
        usable = sscanf(body, scan, &epoch_ms, &unit_ms, &time_bits, &shard_bits, &sequence_bits) == 5;
        usable =
            usable &&
            strcmp(psprintf(carrier_format, name, epoch_ms, unit_ms, time_bits, shard_bits, sequence_bits), body) == 0;
    }
    if (!usable)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("layout \"%s\" has no catalog row, and function %s is not shardid's definition of it",
                               name, fname),
                        errhint("Restore the layout catalog (shardid_user_layout) from the dump.")));
    Status status;
    if (!checked_layout(name, epoch_ms, unit_ms, time_bits, shard_bits, sequence_bits, out, &status))
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("the definition of layout \"%s\" in function %s is invalid", name, fname)));
    return true;
}

// Reads a user layout from the catalog of the schema the calling function
// lives in (the extension's schema), or returns nullptr. The row is read
// and converted in C (src/pg/base/catalog.hpp), and checked like create_layout()
// checks it, since a superuser can write the table directly.
LayoutEntry* load_user_entry(FunctionCallInfo fcinfo, const char* name, int len)
{
    if (!callback_registered) {
        on_relation_change(layout_catalog_changed);
        CacheRegisterSyscacheCallback(PROCOID, functions_changed, (Datum)0);
        callback_registered = true;
    }
    const Oid nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
    const TableRows t = rows_with_key(nsp, "shardid_user_layout", "name", name, len);
    if (t.relid != layout_catalog) {
        forget_user_layouts();
        layout_catalog = t.relid;
    }
    bool carried = false;
    char name_z[max_name_len + 1];
    memcpy(name_z, name, len);
    name_z[len] = '\0';
    Layout layout;
    if (t.rows != NIL) {
        HeapTuple row = static_cast<HeapTuple>(linitial(t.rows));
        layout = user_layout(
            name_z, DatumGetTimestampTz(row_value(t, row, "epoch")), DatumGetIntervalP(row_value(t, row, "time_unit")),
            DatumGetInt16(row_value(t, row, "time_bits")), DatumGetInt16(row_value(t, row, "shard_bits")),
            DatumGetInt16(row_value(t, row, "sequence_bits")));
    } else if (!carried_layout(name_z, &layout)) {
        return nullptr;
    } else {
        carried = true;
    }
    if (n_user_entries == int(std::size(user_entries)))
        forget_user_layouts();
    n_carried_entries += carried;
    LayoutEntry* entry = &user_entries[n_user_entries++];
    memcpy(entry->name, name_z, len + 1);
    entry->layout = layout;
    entry->layout.name = entry->name;
    entry->slot = nullptr;
    return entry;
}

}  // namespace

void check_layout_name(const char* name, int len)
{
    if (!valid_name(name, size_t(len)))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("invalid layout name \"%.*s\"", len > max_name_len ? max_name_len : len, name),
                        errdetail("Layout names are %s.", valid_name_rule)));
}

Layout user_layout(const char* name, TimestampTz epoch, const Interval* unit, int32 time_bits, int32 shard_bits,
                   int32 sequence_bits)
{
    // A superuser can write the catalog directly: its names obey the rule
    // too (the node state and messages carry them).
    check_layout_name(name, int(strlen(name)));
    const int64 epoch_ms = unix_ms_of(epoch, "epoch");
    if (timestamptz_of_unix_ms(epoch_ms) != epoch)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("epoch must be a whole millisecond")));
    if (unit->month != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("time_unit must not contain months or years"),
                        errdetail("Their length varies; use days, hours, seconds or milliseconds.")));
    int64 unit_us;
    if (pg_mul_s64_overflow(int64(unit->day), USECS_PER_DAY, &unit_us) ||
        pg_add_s64_overflow(unit_us, unit->time, &unit_us) || unit_us < 1000 || unit_us % 1000 != 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("time_unit must be a whole number of milliseconds, at least 1 ms")));
    Layout layout;
    Status status;
    if (!checked_layout(name, epoch_ms, unit_us / 1000, time_bits, shard_bits, sequence_bits, &layout, &status))
        raise(status);
    return layout;
}

char* carrier_body(const Layout& layout)
{
    return psprintf(carrier_format, layout.name, (long long)layout.epoch_ms, (long long)layout.unit_ms,
                    int(layout.time_bits), int(layout.shard_bits), int(layout.sequence_bits));
}

char* carrier_name(const char* name)
{
    constexpr const char* prefix = "shardid_layout$";
    const size_t len = strlen(name);
    if (strlen(prefix) + len < NAMEDATALEN)
        return psprintf("%s%s", prefix, name);
    // Too long for an identifier: the first 24 characters and a hash of all.
    uint64 hash = 14695981039346656037ull;  // FNV-1a
    for (size_t i = 0; i < len; i++)
        hash = (hash ^ uint8(name[i])) * 1099511628211ull;
    return psprintf("%s%.24s$%016llx", prefix, name, (unsigned long long)hash);
}

LayoutEntry& preset_entry(const Layout& preset)
{
    for (size_t i = 0; i < std::size(presets); i++)
        if (presets[i] == &preset) {
            LayoutEntry& e = preset_entries[i];
            if (e.name[0] == '\0') {
                e.layout = preset;
                strlcpy(e.name, preset.name, sizeof e.name);
            }
            return e;
        }
    elog(ERROR, "unknown shardid preset");
    pg_unreachable();
}

LayoutEntry& layout_arg(FunctionCallInfo fcinfo, int argno)
{
    if (PG_ARGISNULL(argno))
        ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("layout name must not be null")));
    text* arg = PG_GETARG_TEXT_PP(argno);
    const char* name = VARDATA_ANY(arg);
    const int len = VARSIZE_ANY_EXHDR(arg);

    auto* cache = static_cast<CallCache*>(fcinfo->flinfo->fn_extra);
    if (cache != nullptr && cache->generation == cache_generation && cache->len == len &&
        memcmp(cache->name, name, len) == 0)
        return *cache->entry;

    LayoutEntry* entry = nullptr;
    if (const Layout* preset = find_preset(name, size_t(len)))
        entry = &preset_entry(*preset);
    else if (len <= max_name_len)
        entry = find_user_entry(name, len);
    if (entry == nullptr && len <= max_name_len)
        entry = load_user_entry(fcinfo, name, len);
    if (entry == nullptr)
        ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
                        errmsg("layout \"%.*s\" does not exist", len > max_name_len ? max_name_len : len, name),
                        errhint("See SELECT name FROM shardid_layouts; create one with create_layout().")));

    if (cache == nullptr) {
        cache = static_cast<CallCache*>(MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, sizeof(CallCache)));
        fcinfo->flinfo->fn_extra = cache;
    }
    cache->generation = cache_generation;
    cache->entry = entry;
    cache->len = len;
    memcpy(cache->name, name, len);
    return *entry;
}

}  // namespace shardid::pg
