// What a Citus worker asks its coordinator, through Citus' own connection:
// cluster-wide counters (DecimalId generator ids, call-number run ids) and,
// for the key ring and the group fence, single answers
// (src/pg/functions/keys.cpp, src/pg/citus/fence.cpp).
#include <cerrno>
#include <cstdlib>

#include "pg/citus/citus.hpp"

extern "C" {
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
}

#include "pg/base/catalog.hpp"

namespace shardid::pg {

// Through Citus' own connection to the coordinator
// (run_command_on_coordinator: a connection of its own, committed there
// whatever this transaction does), as the extension's owner in a
// security-restricted operation: nothing of the caller's runs, and the
// caller needs no right on the coordinator.
bool citus_coordinator_answer(const char* command, const char** answer)
{
    // Citus' function raises an error of its own there; refused here, at
    // once, with shardid's hint.
    if (!citus_coordinator_in_metadata()) {
        *answer = "the coordinator is not in this node's Citus metadata (pg_dist_node has no group 0)";
        return false;
    }
    const Oid owner = shardid_extension().owner;
    Oid save_user;
    int save_sec;
    GetUserIdAndSecContext(&save_user, &save_sec);
    SetUserIdAndSecContext(owner, save_sec | SECURITY_LOCAL_USERID_CHANGE | SECURITY_RESTRICTED_OPERATION);
    if (SPI_connect() != SPI_OK_CONNECT)
        elog(ERROR, "SPI_connect failed");
    Oid argtype = TEXTOID;
    Datum arg = CStringGetTextDatum(command);
    const int rc = SPI_execute_with_args("SELECT success, result FROM pg_catalog.run_command_on_coordinator($1)", 1,
                                         &argtype, &arg, nullptr, false, 0);
    bool ok = false;
    const char* result = nullptr;
    if (rc == SPI_OK_SELECT && SPI_processed == 1) {
        bool isnull = false;
        const Datum success = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
        ok = !isnull && DatumGetBool(success);
        result = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2);
        if (result != nullptr)
            result = MemoryContextStrdup(CurTransactionContext, result);
    }
    SPI_finish();
    SetUserIdAndSecContext(save_user, save_sec);
    *answer = result != nullptr ? result : "(none)";
    return ok && result != nullptr;
}

// `n` values of `which` above `above` from the coordinator (run ids for
// the key with fingerprint key_fingerprint: the coordinator keeps the
// cluster's key eras, src/core/callnum.hpp), in one request: the
// coordinator runs shardid_take_cluster_counter() n times, each flushing
// its value's record before the answer. The answer is checked before use:
// n whole numbers, each above `above` (a run id of an era: in an era) and
// within the counter's field, none twice.
void citus_counters_from_coordinator(NodeCounter which, int64 above, int64 key_fingerprint, int n, int64* out)
{
    Assert(n >= 1 && n <= 64);
    const NodeStateField& field = node_state_fields[int(which)];
    const char* schema = get_namespace_name(shardid_extension().schema);
    // Several run ids of a key era in one durable record of the
    // coordinator's (shardid_take_cluster_runs()); other counters one by one.
    const char* command =
        n == 1 ? psprintf("SELECT %s.shardid_take_cluster_counter(%s, %lld, %lld)", quote_identifier(schema),
                          quote_literal_cstr(field.keyword), (long long)above, (long long)key_fingerprint)
        : which == NodeCounter::run && key_fingerprint != 0
            ? psprintf("SELECT pg_catalog.array_to_string(%s.shardid_take_cluster_runs(%lld, %lld, %d), ' ')",
                       quote_identifier(schema), (long long)above, (long long)key_fingerprint, n)
            : psprintf("SELECT pg_catalog.string_agg(%s.shardid_take_cluster_counter(%s, %lld, %lld)::pg_catalog.text, "
                       "' ') FROM pg_catalog.generate_series(1, %d)",
                       quote_identifier(schema), quote_literal_cstr(field.keyword), (long long)above,
                       (long long)key_fingerprint, n);
    const char* answer = nullptr;
    const bool ok = citus_coordinator_answer(command, &answer);
    const char* at = answer;
    bool readable = ok;
    for (int i = 0; readable && i < n; i++) {
        char* end = nullptr;
        errno = 0;
        out[i] = strtoll(at, &end, 10);
        readable = end != at && errno == 0 && *end == (i == n - 1 ? '\0' : ' ');
        at = end + (readable && i < n - 1);
    }
    if (!readable)
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("no %s could be taken from the Citus coordinator", field.counts),
                        errdetail("On a Citus cluster the coordinator hands out every %s; this worker could not "
                                  "get one from it.",
                                  field.counts),
                        errdetail_log("The coordinator answered: %s", answer),
                        errhint("Check that the coordinator is up and in the metadata "
                                "(citus_set_coordinator_host()), and see this worker's server log.")));
    // A run id of a key era need not lie above the worker's floor (keys
    // taken in turn), only in an era (2^22 and up).
    const bool era_run = which == NodeCounter::run && key_fingerprint != 0;
    for (int i = 0; i < n; i++) {
        const int64 value = out[i];
        bool repeated = false;
        for (int j = 0; j < i; j++)
            repeated |= out[j] == value;
        if ((era_run ? value < call_era_first_run(1) : value <= above) || value > field.max || repeated)
            ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                            errmsg("the Citus coordinator handed out %s %lld%s, not one above %lld and at most %lld",
                                   field.counts, (long long)value, repeated ? " twice" : "", (long long)above,
                                   (long long)field.max),
                            errhint("Check that the coordinator runs the same version of shardid.")));
    }
}

int64 citus_counter_from_coordinator(NodeCounter which, int64 above, int64 key_fingerprint)
{
    int64 value = 0;
    citus_counters_from_coordinator(which, above, key_fingerprint, 1, &value);
    return value;
}

}  // namespace shardid::pg
