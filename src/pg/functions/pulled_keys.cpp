// A Citus worker whose ring the coordinator cannot send (PostgreSQL 16 and
// later: src/pg/citus/key_ring.cpp) takes each key from its lease of the
// coordinator's ring (src/pg/citus/key_lease.cpp) when a statement first
// uses it, and keeps it for that statement only: a key changed on the
// coordinator is used from the worker's next statement. A key beyond what
// the lease holds (a ring of more than 32 keys) is read from the
// coordinator's ring, through Citus' connection as the extension's owner.
// The secret travels in the answer, never in statement text.
#include <cstring>

#include "pg/base/pg.hpp"

extern "C" {
#if PG_VERSION_NUM >= 160000
#include "nodes/miscnodes.h"  // ErrorSaveContext
#endif
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include "pg/base/statement.hpp"
#include "pg/citus/citus.hpp"
#include "pg/citus/key_lease.hpp"
#include "pg/functions/keys.hpp"
#include "pg/functions/pulled_keys.hpp"

namespace shardid::pg {

namespace {

constexpr int max_pulled = 32;  // as many as a backend caches of its own ring
struct PulledKey {
    char name[max_name_len + 1];
    uint8_t secret[16];
    uint64 statement;  // statement_number() of the statement it was read for
};
PulledKey pulled[max_pulled];
int n_pulled = 0;

// A key's secret as the coordinator sends it (32 hex digits) into
// `secret`; false for anything else. PostgreSQL's own decoding, told not
// to raise (its error would quote a digit of the answer); 15 has no such
// form, and reads keys from the coordinator only where Citus hides its
// sending function (16 and later: key_ring_pulled()), so it compares
// digits itself.
bool decode_secret(const char* answer, uint8_t secret[16])
{
    if (strlen(answer) != 32)
        return false;
#if PG_VERSION_NUM >= 160000
    ErrorSaveContext escontext = {T_ErrorSaveContext};
    return hex_decode_safe(answer, 32, reinterpret_cast<char*>(secret), reinterpret_cast<Node*>(&escontext)) == 16 &&
           !escontext.error_occurred;
#else
    const auto digit = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    for (int i = 0; i < 16; i++) {
        const int hi = digit(answer[2 * i]), lo = digit(answer[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        secret[i] = uint8_t(hi << 4 | lo);
    }
    return true;
#endif
}

void remember_pulled(const char* name, int len, const uint8_t secret[16], uint64 statement)
{
    if (n_pulled == max_pulled)
        n_pulled = 0;
    PulledKey& key = pulled[n_pulled++];
    memcpy(key.name, name, len);
    key.name[len] = '\0';
    memcpy(key.secret, secret, 16);
    key.statement = statement;
}

}  // namespace

void pull_key(FunctionCallInfo fcinfo, const char* name, int len, int64_t statement_began_ms, uint8_t secret[16])
{
    const uint64 statement = statement_number();
    const int shown = len > max_name_len ? max_name_len : len;
    for (int i = 0; i < n_pulled; i++)
        if (pulled[i].statement == statement && int(strlen(pulled[i].name)) == len &&
            memcmp(pulled[i].name, name, len) == 0) {
            memcpy(secret, pulled[i].secret, 16);
            return;
        }
    if (len > max_name_len)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("obfuscation key \"%.*s\" does not exist", shown, name)));
    const LeaseFind leased = citus_leased_key(name, len, statement_began_ms, secret);
    if (leased == LeaseFind::absent)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("obfuscation key \"%.*s\" does not exist", shown, name),
                 errdetail("A Citus worker uses the coordinator's key ring, which has no key of this name."),
                 errhint("A superuser creates keys with create_obfuscation_key() on the coordinator.")));
    if (leased == LeaseFind::found) {
        remember_pulled(name, len, secret, statement);
        return;
    }
    const char* command = psprintf(
        "SELECT COALESCE((SELECT pg_catalog.encode(k.secret, 'hex') FROM %s k WHERE k.name OPERATOR(pg_catalog.=) "
        "%s), 'none')",
        quote_qualified_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)), "shardid_key"),
        quote_literal_cstr(pnstrdup(name, shown)));
    const char* answer = nullptr;
    if (!citus_coordinator_answer(command, &answer))
        ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                        errmsg("obfuscation key \"%.*s\" could not be read from the Citus coordinator", shown, name),
                        errdetail("On PostgreSQL %d a Citus worker reads each key from the coordinator's key ring "
                                  "when a statement first uses it.",
                                  PG_VERSION_NUM / 10000),
                        errdetail_log("The coordinator answered: %s", answer),
                        errhint("Check that the coordinator is up and in the metadata "
                                "(citus_set_coordinator_host()), and see this worker's server log.")));
    if (strcmp(answer, "none") == 0)
        ereport(ERROR,
                (errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("obfuscation key \"%.*s\" does not exist", shown, name),
                 errdetail("A Citus worker uses the coordinator's key ring, which has no key of this name."),
                 errhint("A superuser creates keys with create_obfuscation_key() on the coordinator.")));
    const bool valid = decode_secret(answer, secret);
    explicit_bzero(const_cast<char*>(answer), strlen(answer));
    if (!valid)
        ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
                        errmsg("the Citus coordinator's obfuscation key \"%.*s\" is not 16 bytes", shown, name),
                        errhint("Check that the coordinator runs the same version of shardid.")));
    remember_pulled(name, len, secret, statement);
}

}  // namespace shardid::pg
