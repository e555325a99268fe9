#include "pg/base/timeconv.hpp"

#include "core/layout.hpp"

extern "C" {
#include "common/int.h"
}

namespace shardid::pg {

int64 unix_ms_of(TimestampTz ts, const char* argument)
{
    if (TIMESTAMP_NOT_FINITE(ts))
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("%s must be a finite timestamp", argument)));
    // Milliseconds first: ts + unix_epoch_in_pg_us would overflow near the
    // end of timestamptz's range (year 294276).
    const int64 pg_ms = floor_div(ts, 1000);
    return pg_ms + unix_epoch_in_pg_us / 1000;
}

bool timestamptz_of_unix_ms(int64 unix_ms, TimestampTz* out)
{
    int64 us;
    if (pg_mul_s64_overflow(unix_ms, 1000, &us) || pg_sub_s64_overflow(us, unix_epoch_in_pg_us, &us) ||
        !IS_VALID_TIMESTAMP(us))
        return false;
    *out = us;
    return true;
}

TimestampTz timestamptz_of_unix_ms(int64 unix_ms)
{
    TimestampTz ts;
    if (!timestamptz_of_unix_ms(unix_ms, &ts))
        ereport(ERROR, (errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE), errmsg("timestamp out of range"),
                        errdetail("%lld ms after the Unix epoch is beyond the range of timestamp with time zone.",
                                  (long long)unix_ms)));
    return ts;
}

}  // namespace shardid::pg
