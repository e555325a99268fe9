// Explicit shards on a Citus worker, declared to the coordinator
// (src/pg/citus/declared.hpp).
//
// Order: the fence's worker stores a new declaration before it raises the
// window, and a generator reads the window before the declaration, so a
// generator under an older declaration that sees the new window sees the
// new declaration too and stops: every explicit-shard ID has a tick below
// a window end the coordinator recorded with a declaration holding it,
// which is the floor a server later confirmed under that value issues
// above.
#include "pg/base/shard_declaration.hpp"  // C++ standard headers: before PostgreSQL's
#include "pg/citus/declared.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "pg/base/settings.hpp"
#include "pg/citus/fence.hpp"

extern "C" {
#include "utils/elog.h"
}

namespace shardid::pg {

bool citus_declaration_usable(uint64_t value, uint64_t* print, Status* status)
{
    *print = shard_declaration().fingerprint;
    const CitusFence* fence = citus_fence_of_database();
    if (fence == nullptr || fence->declared_refused.load() != *print)
        return true;
    *status =
        Status::fail(Error::not_configured, "shard %llu is declared in a shardid.shards the Citus coordinator refused",
                     (unsigned long long)value)
            .with_detail("shardid.shards = '%s' lists %lld, the Citus group id of another node, which writes it into "
                         "the same field.",
                         shards_setting, (long long)fence->declared_conflict.load())
            .with_hint("Remove that node's group id from shardid.shards in postgresql.conf and reload; declare shards "
                       "above the highest group id the cluster will use.");
    return false;
}

bool citus_declaration_holds(const CitusFence* fence, uint64_t print, Status* status)
{
    if (print == 0 || fence->declared.load(std::memory_order_seq_cst) == print)
        return true;
    *status = Status::fail(Error::not_claimed, "the Citus coordinator has not recorded this node's shardid.shards")
                  .with_detail("A Citus worker issues an explicit shard only under a declaration the coordinator has "
                               "recorded, so that a server added later under that value is refused.")
                  .with_hint("The fence's worker sends it within a second of a reload; shardid_coordination() shows "
                             "the fence's last error.");
    return false;
}

const char* citus_fence_declaration(CitusFence* f, uint64_t declared, long long overlap)
{
    if (overlap < 0) {
        f->declared_refused.store(0);
        f->declared.store(declared, std::memory_order_seq_cst);
        return "";
    }
    f->declared.store(0, std::memory_order_seq_cst);
    const char* why = psprintf("shardid.shards lists %lld, the Citus group id of another node: explicit shards are "
                               "refused until it no longer does",
                               overlap);
    f->declared_conflict.store(overlap);
    if (f->declared_refused.exchange(declared) != declared)
        ereport(WARNING, (errmsg("shardid citus fence: %s", why)));
    return why;
}

const char* citus_declared_by(const char* answer, int64_t group)
{
    if (strncmp(answer, "declared ", 9) != 0)
        return nullptr;
    char* end = nullptr;
    errno = 0;
    const long long declarer = strtoll(answer + 9, &end, 10);
    if (end == answer + 9 || *end != '\0' || errno != 0 || declarer < 0 || declarer > INT32_MAX)
        return nullptr;  // not an answer shardid gives: the caller's last case
    return psprintf(
        "this server's group %lld is an explicit shard that Citus group %lld declares in its shardid.shards",
        (long long)group, declarer);
}

}  // namespace shardid::pg
