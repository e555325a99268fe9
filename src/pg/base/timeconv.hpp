// Between Unix time (what the core speaks) and timestamptz.
#pragma once

#include "pg/base/pg.hpp"

namespace shardid::pg {

// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
constexpr int64 unix_epoch_in_pg_us = int64(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;

// Floor of a finite timestamptz in Unix milliseconds; ereports for infinity.
int64 unix_ms_of(TimestampTz ts, const char* argument);

// A timestamptz for Unix milliseconds, or an ereport when out of range.
TimestampTz timestamptz_of_unix_ms(int64 unix_ms);

// The same without an error: false when out of timestamptz's range.
bool timestamptz_of_unix_ms(int64 unix_ms, TimestampTz* out);

}  // namespace shardid::pg
