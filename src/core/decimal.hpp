// DecimalId (SPEC 2.2): id = counter * 10^10 + generator_id * 10^5 + launch_id,
// readable in decimal. The counter runs 1..922,337,202 per generator id;
// generator ids come from a durable sequence, a new one at each start and
// whenever the counter runs out.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/status.hpp"

namespace shardid {

// Each of generator_id and launch_id takes five decimal digits.
constexpr int64_t decimal_field = 100000;
// The SQL sequence's MAXVALUE repeats it (sql/rules.sql compares).
constexpr int64_t decimal_generator_max = decimal_field - 1;
constexpr int64_t decimal_launch_max = decimal_field - 1;  // shardid.launch_id's maximum
constexpr int64_t decimal_counter_scale = decimal_field * decimal_field;
// The largest counter whose IDs fit a bigint.
constexpr int64_t decimal_counter_max =
    (INT64_MAX - decimal_generator_max * decimal_field - decimal_launch_max) / decimal_counter_scale;
static_assert(decimal_counter_max == 922337202, "SPEC 2.2's counter range");

struct DecimalParts {
    int64_t counter;
    int32_t generator_id;
    int32_t launch_id;
};

constexpr int64_t decimal_compose(int64_t counter, int64_t generator_id, int64_t launch_id)
{
    return counter * decimal_counter_scale + generator_id * decimal_field + launch_id;
}

bool decimal_decode(int64_t id, DecimalParts* out, Status* status);

// Node state, one atomic word: ((generator_id + 1) << 30) | counter, 0
// before a generator id was taken.
struct DecimalState {
    std::atomic<uint64_t> word;
};

// Takes the next counter. Returns false when a (new) generator id is
// needed first: none yet, or the counter is used up.
inline bool decimal_next(DecimalState& state, int64_t* counter, int64_t* generator_id)
{
    uint64_t word = state.word.load(std::memory_order_acquire);
    for (;;) {
        const uint64_t gen_plus_one = word >> 30;
        const int64_t used = int64_t(word & ((uint64_t(1) << 30) - 1));
        if (gen_plus_one == 0 || used >= decimal_counter_max)
            return false;
        if (state.word.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
            *counter = used + 1;
            *generator_id = int64_t(gen_plus_one) - 1;
            return true;
        }
    }
}

// Does the state still need a generator id (to be called under the lock
// that serializes taking one)?
inline bool decimal_needs_generator(const DecimalState& state)
{
    const uint64_t word = state.word.load(std::memory_order_acquire);
    return (word >> 30) == 0 || int64_t(word & ((uint64_t(1) << 30) - 1)) >= decimal_counter_max;
}

inline void decimal_install_generator(DecimalState& state, int64_t generator_id)
{
    state.word.store(uint64_t(generator_id + 1) << 30, std::memory_order_release);
}

}  // namespace shardid
