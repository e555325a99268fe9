// Explicit shards on a Citus worker (shardid.shards), declared to the
// coordinator: the fence's worker sends this server's declaration with
// each request (src/pg/citus/fence.cpp), the coordinator records it
// unless it lists a group already confirmed (shardid_citus_confirm(),
// table shardid_citus_declared), and refuses a server whose group a live
// declaration holds. A worker issues an explicit shard only under the
// declaration the coordinator recorded with the current window.
#pragma once

#include <cstdint>

#include "core/status.hpp"
#include "pg/citus/shared.hpp"

namespace shardid::pg {

// In hold_value(): this backend's declaration (*print, its fingerprint),
// unless the coordinator refused it (then false, with why in *status).
bool citus_declaration_usable(uint64_t value, uint64_t* print, Status* status);

// In confirm(), after the fence's window was read: the declaration a shard
// was held under is the one recorded with that window.
bool citus_declaration_holds(const CitusFence* fence, uint64_t print, Status* status);

// In the fence's worker, on "ok <floor> [overlap <group>]": publishes the
// declaration `declared` as recorded (overlap < 0) or refused, before the
// new window. Returns "" or why it was refused.
const char* citus_fence_declaration(CitusFence* fence, uint64_t declared, long long overlap);

// On "declared <group>" (another node's live declaration holds this
// server's group): why, for the log and shardid_coordination(); nullptr
// for any other answer.
const char* citus_declared_by(const char* answer, int64_t group);

}  // namespace shardid::pg
