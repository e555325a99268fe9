// A Citus worker whose ring the coordinator cannot send (PostgreSQL 16 and
// later) takes each key from the coordinator when a statement first uses
// it (src/pg/functions/pulled_keys.cpp), for that statement only; whether
// it does is decided per statement with the key ring
// (src/pg/functions/keys.cpp).
#pragma once

#include <cstdint>

#include "pg/base/pg.hpp"

namespace shardid::pg {

// The secret of key `name` from the coordinator, for the current statement
// (statement_began_ms, fence clock: when it first needed a key; the
// lease's keys are judged against it); ereports if there is none or it
// cannot be read. `fcinfo` locates the extension's schema.
void pull_key(FunctionCallInfo fcinfo, const char* name, int len, int64_t statement_began_ms, uint8_t secret[16]);

}  // namespace shardid::pg
