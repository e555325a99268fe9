#include "core/eightbyte.hpp"

namespace shardid {

bool eight_check(const EightParts& p, int64_t sequence, int64_t generator_id, int64_t cluster_id, Status* status)
{
    if (p.unix_ms < 0 || p.unix_ms > eight_time_max) {
        *status = Status::fail(Error::out_of_range, "time is out of range for an eight-byte id")
                      .with_detail("Eight-byte ids hold 42 bits of milliseconds since 1970: up to 2109-05-15.");
        return false;
    }
    struct Field {
        const char* name;
        int64_t value;
        uint32_t max;
    } fields[] = {{"sequence", sequence, eight_sequence_max},
                  {"generator_id", generator_id, eight_generator_max},
                  {"cluster_id", cluster_id, eight_cluster_max}};
    for (const Field& f : fields)
        if (f.value < 0 || f.value > int64_t(f.max)) {
            *status = Status::fail(Error::out_of_range, "eight-byte id %s %lld is out of range: allowed 0..%u",
                                   f.name, (long long)f.value, f.max);
            return false;
        }
    return true;
}

}  // namespace shardid
