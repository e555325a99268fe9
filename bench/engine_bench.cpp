// Google Benchmark over the pure C++ core: the engine's cost per ID with the
// real clock and with a fixed one (the compare-and-swap alone), threads
// contending for one node-wide state, and the codecs.
#include <benchmark/benchmark.h>

#include "core/callnum.hpp"
#include "core/clock.hpp"
#include "core/codec.hpp"
#include "core/eightbyte.hpp"
#include "core/engine.hpp"
#include "core/schemes.hpp"

using namespace shardid;

namespace {

// An uncapped layout (4M IDs per ms): the cap never binds, so this measures cost.
constexpr Layout wide = Layout::named("wide").epoch(1704067200000).unit(1).time(41).shard(0).sequence(22);
SlotState shared_slot{};

struct FixedClock {
    int64_t ms = 1795000000000;
    int64_t now_ms() const { return ms; }
    bool pause(int64_t)
    {
        ms++;
        return true;
    }
};

void BM_NextId_PreciseClock(benchmark::State& state)
{
    SystemClock clock{};
    Status st;
    uint64_t id = 0;
    for (auto _ : state) {
        next_id(wide, shared_slot, clock, 10000, 0, &id, &st);
        benchmark::DoNotOptimize(id);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NextId_PreciseClock)->Threads(1)->Threads(2);

void BM_NextId_CoarseClock_TraceId(benchmark::State& state)
{
    static SlotState slot{};
    SystemClock clock{0, true};
    Status st;
    uint64_t id = 0;
    for (auto _ : state) {
        if (!next_id(trace_layout, slot, clock, 10000, 7, &id, &st))
            state.SkipWithError(st.message);
        benchmark::DoNotOptimize(id);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NextId_CoarseClock_TraceId)->Threads(1)->Threads(2);

void BM_NextId_FixedClock(benchmark::State& state)
{
    static SlotState slot{};
    FixedClock clock;
    Status st;
    uint64_t id = 0;
    for (auto _ : state) {
        next_id(wide, slot, clock, 10000, 0, &id, &st);
        benchmark::DoNotOptimize(id);
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_NextId_FixedClock)->Threads(1)->Threads(2);

void BM_ClockRead(benchmark::State& state)
{
    SystemClock clock{0, state.range(0) != 0};
    for (auto _ : state)
        benchmark::DoNotOptimize(clock.now_ms());
}
BENCHMARK(BM_ClockRead)->Arg(0)->Arg(1);

void BM_DecodeSnowflake(benchmark::State& state)
{
    int64_t id = 912122840684196936;
    Decoded d{};
    Status st;
    for (auto _ : state) {
        layout_decode(snowflake_layout, id++, &d, &st);
        benchmark::DoNotOptimize(d);
    }
}
BENCHMARK(BM_DecodeSnowflake);

void BM_Base62Encode(benchmark::State& state)
{
    char out[max_encoded_width + 1];
    uint64_t v = 912122840684196936;
    for (auto _ : state) {
        encode_digits(base62, v++, 11, out);
        benchmark::DoNotOptimize(out);
    }
}
BENCHMARK(BM_Base62Encode);

void BM_CallNumberCompose(benchmark::State& state)
{
    const BitShuffle shuffle = BitShuffle::from_key("bench", 5);
    char out[call_chars + 1];
    int64_t seq = 0;
    Status st;
    for (auto _ : state) {
        call_number_compose(shuffle, 0, 8452, (seq++) & call_sequence_max, out, &st);
        benchmark::DoNotOptimize(out);
    }
}
BENCHMARK(BM_CallNumberCompose);

void BM_EightByteWord(benchmark::State& state)
{
    int64_t ms = 1795000000000;
    for (auto _ : state)
        benchmark::DoNotOptimize(eight_word({ms++, 5, 7, 3, EightMode::spread}));
}
BENCHMARK(BM_EightByteWord);

}  // namespace

BENCHMARK_MAIN();
