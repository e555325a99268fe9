#include "core/schemes.hpp"

#include <cstring>
#include <limits>

namespace shardid {

Status Layout::validate() const
{
    if (unit_ms < 1)
        return Status::fail(Error::invalid_parameter, "time unit of layout \"%s\" must be at least 1 ms", name);
    if (time_bits < 1 || sequence_bits < 1)
        return Status::fail(Error::invalid_parameter, "layout \"%s\" needs at least 1 time bit and 1 sequence bit",
                            name);
    if (total_bits() > max_id_bits)
        return Status::fail(Error::invalid_parameter,
                            "layout \"%s\" has %u bits, more than the 63 of a positive bigint", name, total_bits())
            .with_detail("time_bits + shard_bits + sequence_bits must be at most 63.");
    if (sequence_first > sequence_max())
        return Status::fail(Error::invalid_parameter, "layout \"%s\" starts its sequence beyond its field", name);
    if (epoch_ms < 0)
        return Status::fail(Error::invalid_parameter, "epoch of layout \"%s\" is before 1970", name);
    // The last tick must be representable in Unix milliseconds, and a wrapping
    // layout's unbounded tick must still fit the packed state word.
    const uint64_t last_tick = wraps ? (uint64_t(1) << (64 - sequence_bits)) - 1 : time_max();
    if (last_tick > uint64_t(std::numeric_limits<int64_t>::max() - epoch_ms) / uint64_t(unit_ms))
        return Status::fail(Error::invalid_parameter, "layout \"%s\" spans more time than a bigint of milliseconds",
                            name);
    return Status();
}

bool check_shard(const Layout& layout, int64_t shard, const char* what, Status* status)
{
    if (shard >= 0 && uint64_t(shard) <= layout.shard_max())
        return true;
    *status = Status::fail(Error::out_of_range, "%s %lld is out of range for %s: allowed 0..%llu", what,
                           (long long)shard, layout.name, (unsigned long long)layout.shard_max())
                  .with_detail("The %s layout stores it in %u bits.", layout.name, unsigned(layout.shard_bits));
    return false;
}

bool valid_name(const char* name, size_t len)
{
    if (len < 1 || len > size_t(max_name_len))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
            return false;
    return true;
}

const Layout* find_preset(const char* name, size_t len)
{
    for (const Layout* p : presets)
        if (std::strlen(p->name) == len && std::memcmp(p->name, name, len) == 0)
            return p;
    return nullptr;
}

bool reserved_layout_name(const char* name, size_t len)
{
    if (find_preset(name, len) != nullptr)
        return true;
    for (const char* r : reserved_layout_names)
        if (std::strlen(r) == len && std::memcmp(r, name, len) == 0)
            return true;
    return false;
}

bool layout_decode(const Layout& layout, int64_t id, Decoded* out, Status* status)
{
    if (id <= 0) {
        *status = Status::fail(Error::out_of_range, "%s id %lld is out of range: ids are positive", layout.name,
                               (long long)id);
        return false;
    }
    if (layout.total_bits() < max_id_bits && (uint64_t(id) >> layout.total_bits()) != 0) {
        *status = Status::fail(Error::invalid_parameter, "%lld is not a %s id", (long long)id, layout.name)
                      .with_detail("It has bits set above the layout's %u bits.", layout.total_bits());
        return false;
    }
    const Fields f = layout.decompose(uint64_t(id));
    out->unix_ms = layout.ms_of_tick(int64_t(f.tick));
    out->shard = int64_t(f.shard);
    out->sequence = int64_t(f.sequence);
    return true;
}

// The tick of unix_ms, which must lie within the layout's time range.
static bool tick_in_range(const Layout& layout, int64_t unix_ms, int64_t* tick, Status* status)
{
    if (unix_ms < layout.epoch_ms) {
        *status =
            Status::fail(Error::out_of_range, "time is before the %s epoch", layout.name)
                .with_detail("The layout's time starts at %lld ms after the Unix epoch.", (long long)layout.epoch_ms);
        return false;
    }
    *tick = layout.tick_of(unix_ms);  // no overflow: unix_ms >= epoch_ms >= 0
    if (uint64_t(*tick) > layout.time_max()) {
        *status =
            Status::fail(Error::out_of_range, "time is past the end of the %s layout", layout.name)
                .with_detail("Its %u-bit time field ends %lld ms after the Unix epoch.", unsigned(layout.time_bits),
                             (long long)layout.ms_of_tick(int64_t(layout.time_max()) + 1));
        return false;
    }
    return true;
}

bool layout_compose(const Layout& layout, int64_t unix_ms, int64_t shard, int64_t sequence, int64_t* id, Status* status)
{
    int64_t tick;
    if (!tick_in_range(layout, unix_ms, &tick, status) || !check_shard(layout, shard, "shard", status))
        return false;
    if (sequence < 0 || uint64_t(sequence) > layout.sequence_max()) {
        *status = Status::fail(Error::out_of_range, "sequence %lld is out of range for %s: allowed 0..%llu",
                               (long long)sequence, layout.name, (unsigned long long)layout.sequence_max());
        return false;
    }
    *id = int64_t(layout.compose(uint64_t(tick), uint64_t(shard), uint64_t(sequence)));
    return true;
}

bool layout_min_id(const Layout& layout, int64_t unix_ms, int64_t* id, Status* status)
{
    if (unix_ms < layout.epoch_ms) {
        *id = 0;
        return true;
    }
    int64_t tick;
    if (!tick_in_range(layout, unix_ms, &tick, status))
        return false;
    *id = int64_t(layout.compose(uint64_t(tick), 0, 0));
    return true;
}

void layout_range_ids(const Layout& layout, bool has_lower, int64_t lower_ms, bool has_upper, int64_t upper_ms,
                      int64_t* min_id, int64_t* max_id)
{
    const int64_t last_tick = int64_t(layout.time_max());
    *min_id = 1;
    *max_id = int64_t(layout.compose(uint64_t(last_tick), layout.shard_max(), layout.sequence_max()));
    if (has_lower && lower_ms >= layout.epoch_ms) {
        const int64_t tick = layout.tick_of(lower_ms);
        if (tick > last_tick) {  // after the layout's end: nothing
            *min_id = 1, *max_id = 0;
            return;
        }
        *min_id = int64_t(layout.compose(uint64_t(tick), 0, 0));
    }
    if (has_upper) {
        if (upper_ms < layout.epoch_ms) {
            *max_id = 0;  // before the layout's start: nothing
        } else {
            const int64_t tick = layout.tick_of(upper_ms);
            if (tick < last_tick)
                *max_id = int64_t(layout.compose(uint64_t(tick), layout.shard_max(), layout.sequence_max()));
        }
    }
}

void trace_range_ids(bool has_lower, int64_t lower_ms, bool has_upper, int64_t upper_ms, int64_t* min_id,
                     int64_t* max_id)
{
    *min_id = 1;
    *max_id = INT64_MAX;
    if (!has_lower || !has_upper)
        return;
    const int64_t lower_s = floor_div(lower_ms, 1000);
    const int64_t upper_s = floor_div(upper_ms, 1000);
    if (upper_s < lower_s) {
        *min_id = 1, *max_id = 0;
        return;
    }
    const uint64_t lo = uint64_t(lower_s) & trace_layout.time_max(), hi = uint64_t(upper_s) & trace_layout.time_max();
    if (upper_s - lower_s >= trace_period_s || lo > hi)
        return;  // crosses a wrap: no single ID range
    *min_id = int64_t(trace_layout.compose(lo, 0, 1));
    *max_id = int64_t(trace_layout.compose(hi, trace_layout.shard_max(), trace_layout.sequence_max()));
}

bool trace_decode(int64_t id, int64_t near_unix_s, TraceParts* out, Status* status)
{
    if (id <= 0) {
        *status =
            Status::fail(Error::out_of_range, "trace id %lld is out of range: trace ids are positive", (long long)id);
        return false;
    }
    const Fields f = trace_layout.decompose(uint64_t(id));
    if (f.sequence == 0) {
        *status = Status::fail(Error::invalid_parameter, "%lld is not a trace id", (long long)id)
                      .with_detail("Its counter field is 0; trace id counters start at 1.");
        return false;
    }
    // Latest second s <= near + 1 day with s mod 2^25 == tick. (Any near a
    // timestamptz can hold is far inside this bound.)
    constexpr int64_t near_limit = int64_t(1) << 50;
    if (near_unix_s > near_limit || near_unix_s < -near_limit) {
        *status = Status::fail(Error::out_of_range, "reference time is out of range for decoding a trace id");
        return false;
    }
    const int64_t limit = near_unix_s + trace_near_slack_s;
    out->unix_s = limit - floor_mod(limit - int64_t(f.tick), trace_period_s);
    out->node_no = uint32_t(f.shard);
    out->counter = uint32_t(f.sequence);
    return true;
}

}  // namespace shardid
