#include "core/schemes.hpp"

#include <limits>

namespace shardid {

Status Layout::validate() const
{
    if (unit_ms < 1)
        return Status::fail(Error::invalid_parameter, "time unit of layout %s must be at least 1 ms", name);
    if (time_bits < 1 || sequence_bits < 1)
        return Status::fail(Error::invalid_parameter, "layout %s needs at least 1 time bit and 1 sequence bit",
                            name);
    if (total_bits() > 63)
        return Status::fail(Error::invalid_parameter, "layout %s has %u bits, more than the 63 of a positive bigint",
                            name, total_bits())
            .with_detail("time_bits + shard_bits + sequence_bits must be at most 63.");
    if (sequence_first > sequence_max())
        return Status::fail(Error::invalid_parameter, "layout %s starts its sequence beyond its field", name);
    if (epoch_ms < 0)
        return Status::fail(Error::invalid_parameter, "epoch of layout %s is before 1970", name);
    // The last tick must be representable in Unix milliseconds, and a wrapping
    // layout's unbounded tick must still fit the packed state word.
    const uint64_t last_tick = wraps ? (uint64_t(1) << (64 - sequence_bits)) - 1 : time_max();
    if (last_tick > uint64_t(std::numeric_limits<int64_t>::max() - epoch_ms) / uint64_t(unit_ms))
        return Status::fail(Error::invalid_parameter, "layout %s spans more time than a bigint of milliseconds",
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

bool trace_decode(int64_t id, int64_t near_unix_s, TraceParts* out, Status* status)
{
    if (id <= 0) {
        *status = Status::fail(Error::out_of_range, "trace id %lld is out of range: trace ids are positive",
                               (long long)id);
        return false;
    }
    const Fields f = trace_layout.decompose(uint64_t(id));
    if (f.sequence == 0) {
        *status = Status::fail(Error::invalid_parameter, "%lld is not a trace id", (long long)id)
                      .with_detail("Its counter field is 0; trace id counters start at 1.");
        return false;
    }
    // Latest second s <= near + 1 day with s mod 2^25 == tick.
    const int64_t period = int64_t(1) << trace_layout.time_bits;
    const int64_t limit = near_unix_s + 86400;
    int64_t back = (limit - int64_t(f.tick)) % period;
    if (back < 0)
        back += period;
    out->unix_s = limit - back;
    out->node_no = uint32_t(f.shard);
    out->counter = uint32_t(f.sequence);
    return true;
}

}  // namespace shardid
