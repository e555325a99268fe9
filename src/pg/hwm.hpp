// The persisted high-water mark: a small file in the data directory holding
// a Unix-ms time that every issued ID's tick starts before. Written ahead of
// use (a lease), so a restart resumes above every ID the node ever issued.
#pragma once

#include "pg/pg.hpp"

namespace shardid::pg {

constexpr const char* hwm_path = "shardid.hwm";

enum class HwmRead { missing, ok, corrupt };

// Reads the mark; *ms is 0 unless the file is there and well formed.
HwmRead hwm_read(int64* ms);

// Writes the mark durably (temporary file, fsync, rename, fsync of the
// directory); ereports on failure.
void hwm_write(int64 ms);

}  // namespace shardid::pg
