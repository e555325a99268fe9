// The key ring: 16-byte secrets by name, read as the ring's owner and
// cached per backend.
#pragma once

#include <cstdint>

#include "pg/base/pg.hpp"

namespace shardid::pg {

// The secret of key `name`; ereports if there is none. `fcinfo` locates the
// extension's schema (the calling function's).
void key_secret(FunctionCallInfo fcinfo, const char* name, int len, uint8_t secret[16]);

// On a Citus coordinator, sends the key ring to every worker; nothing
// elsewhere (src/pg/functions/citus_keys.cpp; the utility hook calls it after CREATE
// EXTENSION shardid).
void key_ring_created();

// On a Citus worker where the ring cannot be sent (PostgreSQL 16 and later:
// src/pg/functions/citus_keys.cpp), whether this worker reads each key
// from the coordinator instead of its own ring.
bool key_ring_pulled();

}  // namespace shardid::pg
