// libFuzzer target over the pure C++ core: decoders, composers, layout
// validation and the engine under arbitrary clock steps. Any invariant
// broken, or any sanitizer report, is a crash.
#include <cstdint>
#include <cstring>

#include "core/engine.hpp"
#include "core/schemes.hpp"

using namespace shardid;

namespace {

struct Input {
    const uint8_t* p;
    size_t n;
    template <class T>
    T take()
    {
        T v{};
        const size_t k = n < sizeof(T) ? n : sizeof(T);
        std::memcpy(&v, p, k);
        p += k;
        n -= k;
        return v;
    }
};

#define REQUIRE(cond)            \
    do {                         \
        if (!(cond))             \
            __builtin_trap();    \
    } while (0)

void fuzz_trace(Input& in)
{
    const int64_t id = in.take<int64_t>();
    const int64_t near = in.take<int64_t>() % (int64_t(1) << 52);
    TraceParts p{};
    Status st;
    if (!trace_decode(id, near, &p, &st)) {
        REQUIRE(st.error == Error::out_of_range || st.error == Error::invalid_parameter);
        REQUIRE(st.message[0] != '\0');
        return;
    }
    REQUIRE(id > 0 && p.counter > 0);
    REQUIRE(int64_t(trace_layout.compose(uint64_t(p.unix_s), p.node_no, p.counter)) == id);
    REQUIRE(p.unix_s <= near + 86400 && p.unix_s > near + 86400 - (int64_t(1) << 25));
}

void fuzz_presets(Input& in)
{
    const int64_t id = in.take<int64_t>();
    for (const Layout* layout : presets) {
        Decoded d{};
        Status st;
        if (!layout_decode(*layout, id, &d, &st)) {
            REQUIRE(id <= 0);
            continue;
        }
        int64_t again = 0;
        REQUIRE(layout_compose(*layout, d.unix_ms, d.shard, d.sequence, &again, &st));
        REQUIRE(again == id);
        int64_t min = 0;
        REQUIRE(layout_min_id(*layout, d.unix_ms, &min, &st));
        REQUIRE(min <= id);
    }
}

void fuzz_layout(Input& in)
{
    Layout l{"fuzzed", in.take<int64_t>() % (int64_t(1) << 45), 1 + int64_t(in.take<uint32_t>() % 86400000),
             uint8_t(in.take<uint8_t>() % 64), uint8_t(in.take<uint8_t>() % 64), uint8_t(in.take<uint8_t>() % 64),
             false, 0};
    if (!l.validate().ok())
        return;
    const int64_t ms = in.take<int64_t>();
    const int64_t shard = in.take<int64_t>();
    const int64_t seq = in.take<int64_t>();
    int64_t id = 0;
    Status st;
    if (layout_compose(l, ms, shard, seq, &id, &st)) {
        REQUIRE(id >= 0);
        Decoded d{};
        if (id > 0) {
            REQUIRE(layout_decode(l, id, &d, &st));
            REQUIRE(d.shard == shard && d.sequence == seq);
            REQUIRE(d.unix_ms <= ms && ms - d.unix_ms < l.unit_ms);
        }
        int64_t min = 0;
        REQUIRE(layout_min_id(l, ms, &min, &st) && min <= id);
    } else {
        REQUIRE(st.error == Error::out_of_range);
    }
    Decoded d{};
    (void)layout_decode(l, in.take<int64_t>(), &d, &st);
}

struct FuzzClock {
    int64_t ms;
    Input* in;
    int64_t now_ms() const { return ms; }
    void pause(int64_t left) { ms += left > 0 ? left : 1; }
};

void fuzz_engine(Input& in)
{
    constexpr Layout small{"small", 0, 1, 44, 2, 2, false, 0};
    SlotState slot{};
    resume_above(small, slot, in.take<uint32_t>());
    FuzzClock clock{int64_t(in.take<uint32_t>()), &in};
    uint64_t prev = 0;
    for (int i = 0; i < 64 && in.n > 0; i++) {
        clock.ms += int64_t(in.take<int8_t>());  // steps either way
        if (clock.ms < 0)
            clock.ms = 0;
        uint64_t id = 0;
        Status st;
        int64_t tick_ms = 0;
        if (next_id(small, slot, clock, 50, 1, &id, &st, &tick_ms)) {
            REQUIRE(id > prev);  // strictly increasing whatever the clock does
            REQUIRE(small.ms_of_tick(int64_t(small.decompose(id).tick)) == tick_ms);
            prev = id;
        } else {
            REQUIRE(st.error == Error::clock_lead_exceeded);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size == 0)
        return 0;
    Input in{data + 1, size - 1};
    switch (data[0] % 4) {
    case 0: fuzz_trace(in); break;
    case 1: fuzz_presets(in); break;
    case 2: fuzz_layout(in); break;
    default: fuzz_engine(in); break;
    }
    return 0;
}
