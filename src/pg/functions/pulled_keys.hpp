// A Citus worker whose ring the coordinator cannot send (PostgreSQL 16 and
// later) takes each key from the coordinator when a statement first uses
// it (src/pg/functions/pulled_keys.cpp), for that statement only. The key
// ring itself: src/pg/functions/keys.hpp.
#pragma once

#include <cstdint>

#include "pg/base/pg.hpp"

namespace shardid::pg {

// Whether this backend takes its keys from the coordinator in the current
// statement (decided once per statement).
bool pulls_keys();
// Fence clock: when the current statement first needed a key (a key's
// lease is judged against it).
int64_t key_statement_began_ms();
// The secret of key `name` from the coordinator; ereports if there is none
// or it cannot be read. `fcinfo` locates the extension's schema.
void pull_key(FunctionCallInfo fcinfo, const char* name, int len, uint8_t secret[16]);

}  // namespace shardid::pg
