// The key ring: 16-byte secrets by name, read as the ring's owner and
// cached per backend.
#pragma once

#include <cstdint>

#include "pg/base/pg.hpp"

namespace shardid::pg {

// The secret of key `name`; ereports if there is none. `fcinfo` locates the
// extension's schema (the calling function's).
void key_secret(FunctionCallInfo fcinfo, const char* name, int len, uint8_t secret[16]);

}  // namespace shardid::pg
