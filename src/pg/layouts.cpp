#include <cstring>
#include <iterator>

#include "pg/layouts.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
}

#include "core/schemes.hpp"
#include "pg/guard.hpp"
#include "pg/settings.hpp"
#include "pg/shmem.hpp"

namespace shardid::pg {

namespace {

constexpr int max_name_len = 63;

LayoutEntry preset_entries[std::size(presets)];
LayoutEntry user_entries[max_slots];
int n_user_entries = 0;
// Bumped whenever cached user layouts may be stale (the catalog table was
// invalidated, e.g. by DROP EXTENSION); fn_extra caches compare it.
uint64 cache_generation = 1;
bool callback_registered = false;

void invalidate_user_layouts(Datum, Oid)
{
    n_user_entries = 0;
    cache_generation++;
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

// Reads a user layout from the catalog of the schema the calling function
// lives in (the extension's schema), or returns nullptr.
LayoutEntry* load_user_entry(FunctionCallInfo fcinfo, const char* name, int len)
{
    if (!callback_registered) {
        CacheRegisterRelcacheCallback(invalidate_user_layouts, (Datum)0);
        callback_registered = true;
    }
    if (n_user_entries == max_slots)
        invalidate_user_layouts((Datum)0, InvalidOid);
    const char* schema = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
    const char* query = psprintf(
        "SELECT (extract(epoch FROM epoch) * 1000)::bigint, (extract(epoch FROM time_unit) * 1000)::bigint, "
        "time_bits, shard_bits, sequence_bits FROM %s.shardid_user_layout WHERE name = $1",
        quote_identifier(schema));
    Oid argtypes[1] = {TEXTOID};
    Datum args[1] = {PointerGetDatum(cstring_to_text_with_len(name, len))};

    SPI_connect();
    if (SPI_execute_with_args(query, 1, argtypes, args, NULL, true, 1) != SPI_OK_SELECT)
        elog(ERROR, "could not read shardid_user_layout");
    LayoutEntry* entry = nullptr;
    if (SPI_processed == 1) {
        HeapTuple row = SPI_tuptable->vals[0];
        TupleDesc desc = SPI_tuptable->tupdesc;
        bool isnull;
        entry = &user_entries[n_user_entries];
        memcpy(entry->name, name, len);
        entry->name[len] = '\0';
        entry->layout = Layout{entry->name,
                               DatumGetInt64(SPI_getbinval(row, desc, 1, &isnull)),
                               DatumGetInt64(SPI_getbinval(row, desc, 2, &isnull)),
                               uint8_t(DatumGetInt16(SPI_getbinval(row, desc, 3, &isnull))),
                               uint8_t(DatumGetInt16(SPI_getbinval(row, desc, 4, &isnull))),
                               uint8_t(DatumGetInt16(SPI_getbinval(row, desc, 5, &isnull))),
                               false,
                               0};
        entry->slot = nullptr;
        n_user_entries++;
    }
    SPI_finish();
    return entry;
}

}  // namespace

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

Datum generate(FunctionCallInfo fcinfo, const Layout& layout, SlotState*& slot_cache, int shard_arg)
{
    PG_RETURN_INT64(int64(generate_raw(fcinfo, layout, slot_cache, shard_arg)));
}

uint64_t generate_raw(FunctionCallInfo fcinfo, const Layout& layout, SlotState*& slot_cache, int shard_arg)
{
    if (slot_cache == nullptr)
        slot_cache = slot_for(layout);
    SlotState& slot = *slot_cache;
    const bool shard_given = shard_arg >= 0 && !PG_ARGISNULL(shard_arg);
    const int32 shard = shard_given ? PG_GETARG_INT32(shard_arg) : 0;

    Status status;
    uint64_t id = 0;
    int64_t tick_ms = 0;
    const bool ok = guarded(status, [&] {
        uint64_t field;
        if (shard_given) {
            if (!check_shard(layout, shard, "shard", &status))
                return false;
            field = uint64_t(shard);
        } else if (!node_shard(layout, &field, &status)) {
            return false;
        }
        SystemClock clock = wall_clock(layout.unit_ms >= 1000 && SystemClock::coarse_suits(layout.unit_ms));
        return next_id(layout, slot, clock, max_clock_lead_ms, field, &id, &status, &tick_ms);
    });
    if (!ok)
        raise(status);
    cover_tick(tick_ms);  // never hand out an ID the persisted high-water mark does not cover
    return id;
}

Datum return_record(FunctionCallInfo fcinfo, Datum* values, bool* nulls)
{
    TupleDesc tupdesc;
    if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("function returning record called in context that cannot accept type record")));
    tupdesc = BlessTupleDesc(tupdesc);
    PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

}  // namespace shardid::pg
