#include "core/eightbyte.hpp"

namespace shardid {

bool eight_check(const EightParts& p, int64_t sequence, int64_t generator_id, int64_t cluster_id, Status* status)
{
    if (p.unix_ms < 0 || p.unix_ms > eight_time_max) {
        *status = Status::fail(Error::out_of_range, "time is out of range for an eight-byte id")
                      .with_detail("Eight-byte ids hold 42 bits of milliseconds since 1970: up to 2109-05-15.");
        return false;
    }
    const FieldRange fields[] = {{"sequence", sequence, eight_sequence_max},
                                 {"generator_id", generator_id, eight_generator_max},
                                 {"cluster_id", cluster_id, eight_cluster_max}};
    if (!check_ranges("eight-byte id", fields, status))
        return false;
    return true;
}

}  // namespace shardid
