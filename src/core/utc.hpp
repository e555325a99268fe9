// A Unix time in milliseconds as PostgreSQL's ISO output writes it in UTC
// ("2024-01-01 00:17:28.576+00", "2020-01-01 00:00:04+00"), for messages of the core: no locale, no
// time zone database, any int64 (years before 1 or after 9999 are written
// with their sign and width as they come).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace shardid {

struct UtcText {
    char text[48];
};

// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
// civil_from_days), for any day an int64 of milliseconds can name.
inline void civil_from_days(int64_t days, int64_t* year, unsigned* month, unsigned* day)
{
    days += 719468;
    const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    const uint64_t doe = uint64_t(days - era * 146097);                          // [0, 146096]
    const uint64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
    const uint64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);                // [0, 365]
    const uint64_t mp = (5 * doy + 2) / 153;                                     // [0, 11]
    *day = unsigned(doy - (153 * mp + 2) / 5 + 1);
    *month = unsigned(mp < 10 ? mp + 3 : mp - 9);
    *year = int64_t(yoe) + era * 400 + (*month <= 2 ? 1 : 0);
}

inline UtcText utc_text(int64_t unix_ms)
{
    constexpr int64_t ms_per_day = 86400000;
    int64_t days = unix_ms / ms_per_day, in_day = unix_ms % ms_per_day;
    if (in_day < 0) {
        in_day += ms_per_day;
        days -= 1;
    }
    int64_t year;
    unsigned month, day;
    civil_from_days(days, &year, &month, &day);
    const unsigned ms = unsigned(in_day % 1000), s = unsigned(in_day / 1000);
    UtcText out;
    int n = snprintf(out.text, sizeof out.text, "%04lld-%02u-%02u %02u:%02u:%02u", (long long)year, month, day,
                     s / 3600, s / 60 % 60, s % 60);
    if (ms != 0 && n > 0 && size_t(n) + 4 < sizeof out.text) {  // ".576", ".5" for 500 ms, as PostgreSQL
        n += snprintf(out.text + n, sizeof out.text - size_t(n), ".%03u", ms);
        while (out.text[n - 1] == '0')
            n--;
    }
    if (n > 0 && size_t(n) < sizeof out.text)
        snprintf(out.text + n, sizeof out.text - size_t(n), "+00");
    return out;
}

}  // namespace shardid
