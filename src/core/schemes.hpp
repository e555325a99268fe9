// The schemes of shardid, as descriptions on top of Layout and the engine.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/layout.hpp"
#include "core/status.hpp"

namespace shardid {

// TraceId (SPEC 2.1): 25-bit Unix seconds (wrapping about every 388 days),
// 16-bit node number, 22-bit counter starting at 1 in every second.
inline constexpr Layout trace_layout =
    Layout::named("TraceId").epoch(0).unit(1000).time(25).shard(16).sequence(22).wrapping().first_sequence(1);
// A TraceId's time repeats every 2^25 s; it is read as the latest second
// with those low bits not after a reference time plus a day (the slack lets
// IDs of a clock slightly ahead decode near now()).
inline constexpr int64_t trace_period_s = int64_t(1) << trace_layout.time_bits;
inline constexpr int64_t trace_near_slack_s = 86400;

// Snowflake-family presets (SPEC 2.3, 2.4): time | shard | sequence, time in
// milliseconds since each system's epoch.
//   snowflake: shardid's own, epoch 2020-01-01 00:00:00 UTC, lasts to 2089
//   twitter:   1288834974657 (2010-11-04 01:42:54.657 UTC)
//   icicle:    1455788600316 (2016-02-18 09:43:20.316 UTC)
//   discord:   1420070400000 (2015-01-01), shard = worker (5) | process (5)
//   instagram: 1314220021721 (2011-08-24 21:07:01.721 UTC), 13-bit shard,
//              10-bit sequence; the time field is bits 62..23, i.e. 40 bits:
//              Instagram's "41st" time bit is the sign bit, reached in 2046.
inline constexpr Layout snowflake_layout =
    Layout::named("snowflake").epoch(1577836800000).unit(1).time(41).shard(10).sequence(12);
inline constexpr Layout twitter_layout =
    Layout::named("twitter").epoch(1288834974657).unit(1).time(41).shard(10).sequence(12);
inline constexpr Layout icicle_layout =
    Layout::named("icicle").epoch(1455788600316).unit(1).time(41).shard(10).sequence(12);
inline constexpr Layout discord_layout =
    Layout::named("discord").epoch(1420070400000).unit(1).time(41).shard(10).sequence(12);
inline constexpr Layout instagram_layout =
    Layout::named("instagram").epoch(1314220021721).unit(1).time(40).shard(13).sequence(10);

inline constexpr const Layout* presets[] = {&snowflake_layout, &twitter_layout, &icicle_layout, &discord_layout,
                                            &instagram_layout};

// The preset of that name, or nullptr.
const Layout* find_preset(const char* name, size_t len);

// Names kept for presets of later versions: create_layout() refuses them,
// so a preset added later never shadows a user's layout (presets are looked
// up first). A version that turns one of these into a preset also checks,
// in its upgrade script, for a layout of that name made before 1.2, when
// the names were not reserved.
inline constexpr const char* reserved_layout_names[] = {"uuidv7",   "sonyflake",  "tsid",      "ulid",       "mastodon",
                                                        "trace_id", "decimal_id", "eightbyte", "call_number"};
// A preset's name, or one kept for later presets.
bool reserved_layout_name(const char* name, size_t len);

// The rule for the names of user layouts and keys: 1 to 63 characters,
// lowercase letters, digits and '_' (the SQL CHECK of the key ring repeats
// it).
bool valid_name(const char* name, size_t len);
inline constexpr const char* valid_name_rule = "1 to 63 characters: lowercase letters, digits and '_'";

// The fields of an ID of a non-wrapping layout.
struct Decoded {
    int64_t unix_ms;  // start of the ID's tick
    int64_t shard;
    int64_t sequence;
};

// Splits `id` into its fields. Fails for ids <= 0 and for ids with bits set
// above the layout's width (they cannot come from it).
bool layout_decode(const Layout& layout, int64_t id, Decoded* out, Status* status);

// The ID for a time (floored to its tick), shard and sequence; each must fit
// its field.
bool layout_compose(const Layout& layout, int64_t unix_ms, int64_t shard, int64_t sequence, int64_t* id,
                    Status* status);

// The smallest ID the layout can give at or after unix_ms: times before the
// epoch give 0; times past the layout's last tick are an error.
bool layout_min_id(const Layout& layout, int64_t unix_ms, int64_t* id, Status* status);

// The IDs a layout can issue within a time range, as one inclusive range
// of IDs [*min_id, *max_id] (empty when *min_id > *max_id). Whole ticks:
// an ID range is a superset, to be rechecked against the exact times.
// has_lower/has_upper false: unbounded on that side.
void layout_range_ids(const Layout& layout, bool has_lower, int64_t lower_ms, bool has_upper, int64_t upper_ms,
                      int64_t* min_id, int64_t* max_id);

// The same for TraceId, whose 25-bit time wraps: a range that crosses a
// wrap (or is unbounded) gives every TraceId, 1 .. 2^63 - 1.
void trace_range_ids(bool has_lower, int64_t lower_ms, bool has_upper, int64_t upper_ms, int64_t* min_id,
                     int64_t* max_id);

struct TraceParts {
    int64_t unix_s;  // creation time, seconds since the Unix epoch
    uint32_t node_no;
    uint32_t counter;
};

// Decodes a TraceId. Its 25-bit time is resolved to the latest second not
// after near_unix_s + 1 day whose low 25 bits match.
bool trace_decode(int64_t id, int64_t near_unix_s, TraceParts* out, Status* status);

// The checks every use of a node or shard number makes against a layout's
// shard field; `what` names the value's source for the message.
bool check_shard(const Layout& layout, int64_t shard, const char* what, Status* status);

}  // namespace shardid
