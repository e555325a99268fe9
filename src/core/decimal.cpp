#include "core/decimal.hpp"

namespace shardid {

bool decimal_decode(int64_t id, DecimalParts* out, Status* status)
{
    if (id <= 0) {
        *status = Status::fail(Error::out_of_range, "decimal id %lld is out of range: decimal ids are positive",
                               (long long)id);
        return false;
    }
    const int64_t counter = id / decimal_counter_scale;
    if (counter == 0 || counter > decimal_counter_max) {
        *status = Status::fail(Error::invalid_parameter, "%lld is not a decimal id", (long long)id)
                      .with_detail("Its counter (the digits above the last ten) is %lld; decimal id counters run "
                                   "from 1 to %lld.",
                                   (long long)counter, (long long)decimal_counter_max);
        return false;
    }
    out->counter = counter;
    out->generator_id = int32_t((id / decimal_field) % decimal_field);
    out->launch_id = int32_t(id % decimal_field);
    return true;
}

}  // namespace shardid
