// libFuzzer target over the pure C++ core: decoders, composers, layout
// validation and the engine under arbitrary clock steps. Any invariant
// broken, or any sanitizer report, is a crash.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "core/callnum.hpp"
#include "core/codec.hpp"
#include "core/decimal.hpp"
#include "core/eightbyte.hpp"
#include "core/engine.hpp"
#include "core/etcd/wire.hpp"
#include "core/state/node_state.hpp"
#include "core/etcd/recheck.hpp"
#include "core/permute.hpp"
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

#define REQUIRE(cond)                                                                                                  \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            __builtin_trap();                                                                                          \
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
    const int64_t epoch_ms = in.take<int64_t>() % (int64_t(1) << 45);
    const int64_t unit_ms = 1 + int64_t(in.take<uint32_t>() % 86400000);
    const unsigned time_bits = in.take<uint8_t>() % 64;
    const unsigned shard_bits = in.take<uint8_t>() % 64;
    const unsigned sequence_bits = in.take<uint8_t>() % 64;
    const Layout l =
        Layout::named("fuzzed").epoch(epoch_ms).unit(unit_ms).time(time_bits).shard(shard_bits).sequence(sequence_bits);
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
    bool pause(int64_t left)
    {
        ms += left > 0 ? left : 1;
        return true;
    }
};

void fuzz_engine(Input& in)
{
    constexpr Layout small = Layout::named("small").epoch(0).unit(1).time(44).shard(2).sequence(2);
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

// Text decoders: base62, base32, call numbers. Whatever they accept must
// encode back to the same value.
void fuzz_text(Input& in)
{
    const size_t len = in.n < 20 ? in.n : 20;
    const char* text = reinterpret_cast<const char*>(in.p);
    for (const Alphabet* a : {&base62, &base32_crockford}) {
        uint64_t v = 0;
        Status st;
        if (decode_digits(*a, text, len, uint64_t(INT64_MAX), &v, &st)) {
            char again[max_encoded_width + 1];
            encode_digits(*a, v, 0, again);
            uint64_t w = 0;
            REQUIRE(decode_digits(*a, again, std::strlen(again), uint64_t(INT64_MAX), &w, &st) && w == v);
        } else {
            REQUIRE(st.error == Error::invalid_text || st.error == Error::out_of_range);
        }
    }
    static const BitShuffle shuffle = BitShuffle::from_key("fuzz", 4);
    CallParts p{};
    Status st;
    if (call_number_decode(shuffle, text, len, &p, &st)) {
        // The parts compose back to a number of the same parts; to the same
        // text, except for a 1.2 text (era 0) whose run id lies in a key
        // era: those parts make an era's number now (or none, with a
        // version other than 0).
        char again[call_chars + 1];
        CallParts q{};
        uint64_t value = 0;
        REQUIRE(decode_digits(base62, text, len, call_text_max, &value, &st));
        const bool era_run = call_era_of(p.run_id) > 0;
        if (call_number_compose(shuffle, p.version, p.run_id, p.sequence, again, &st)) {
            REQUIRE(call_number_decode(shuffle, again, call_chars, &q, &st) && call_pack(q) == call_pack(p));
            if (value >= call_era_base || !era_run)
                REQUIRE(std::memcmp(again, text, call_chars) == 0);
        } else {
            REQUIRE(st.error == Error::out_of_range && era_run && p.version != 0 && value < call_era_base);
        }
    } else {
        REQUIRE(st.error == Error::invalid_text);
    }
}

// DecimalId, eight-byte ids and keyed permutations.
void fuzz_numbers(Input& in)
{
    const int64_t id = in.take<int64_t>();
    DecimalParts d{};
    Status st;
    if (decimal_decode(id, &d, &st))
        REQUIRE(decimal_compose(d.counter, d.generator_id, d.launch_id) == id);
    const uint64_t word = uint64_t(id);
    REQUIRE(eight_word(eight_parts(word)) == word);  // every 8 bytes are some eight-byte id
    const PermutationKey key{in.take<uint64_t>(), in.take<uint64_t>()};
    const int bits = permute_bits_min + int(in.take<uint8_t>() % (permute_bits_max - permute_bits_min + 1));
    const int64_t v = int64_t(word % ((uint64_t(1) << bits) - 1)) + 1;
    REQUIRE(permute_check(v, bits, &st));
    const uint64_t p = permute_forward(key, uint64_t(v), bits);
    REQUIRE(p >= 1 && p < (uint64_t(1) << bits) && permute_inverse(key, p, bits) == uint64_t(v));
}

}  // namespace

// The node state's codec is total: any text it accepts formats to text
// that parses back to the same state, and any state it can hold (built from
// the input's bytes) round-trips.
char state_text[node_state_max_text];

void fuzz_node_state(Input& in)
{
    static NodeState parsed, back;
    if (in.n > 0 && in.p[0] % 2 == 0) {
        // Arbitrary text, often starting with a valid header.
        const char* headers[] = {"", "shardid node state v3\n", "shardid node state v2\n",
                                 "shardid high-water mark v1\n"};
        const char* h = headers[in.take<uint8_t>() % 4];
        static char text[4096 + 64];
        const size_t hn = std::strlen(h);
        std::memcpy(text, h, hn);
        const size_t n = in.n < 4096 ? in.n : 4096;
        std::memcpy(text + hn, in.p, n);
        if (!node_state_parse(text, hn + n, &parsed)) {
            REQUIRE(parsed == NodeState{});
            return;
        }
    } else {
        parsed = NodeState{};
        for (const NodeStateField& f : node_state_fields)
            parsed.*f.member = in.take<int64_t>();
        parsed.n_marks = in.take<uint8_t>() % 4;
        for (int i = 0; i < parsed.n_marks; i++) {
            LayoutMark& m = parsed.marks[i];
            const uint8_t len = uint8_t(1 + in.take<uint8_t>() % max_name_len);
            for (int k = 0; k < len; k++) {
                m.name[k] = char(in.take<uint8_t>());
                if (m.name[k] == '\0')
                    m.name[k] = ' ';
            }
            m.name[len] = '\0';
            m.shape.epoch_ms = in.take<int64_t>();
            m.shape.unit_ms = in.take<int64_t>();
            m.shape.time_bits = in.take<uint8_t>();
            m.shape.shard_bits = in.take<uint8_t>();
            m.shape.sequence_bits = in.take<uint8_t>();
            m.shape.sequence_first = in.take<uint8_t>();
            m.shape.wraps = in.take<uint8_t>() % 2;
            m.word = in.take<uint64_t>();
        }
        // Call-number eras: ascending, keys anything but 0.
        for (int i = 0, era = 0, n = in.take<uint8_t>() % 4; i < n; i++) {
            era += 1 + in.take<uint8_t>() % 20;
            const int64_t key = in.take<int64_t>();
            const int32_t low = int32_t(in.take<uint32_t>() % (uint32_t(call_era_full) + 2)) - 1;
            if (era <= call_era_max && key != 0)
                REQUIRE(parsed.call_eras.append(era, key, low));
        }
        // Adopted histories: positive, each once.
        for (int i = 0, n = in.take<uint8_t>() % 4; i < n; i++) {
            const int64_t history = in.take<int64_t>(), at_ms = in.take<int64_t>();
            if (history > 0)
                REQUIRE(parsed.adopted.add(history, at_ms));
        }
    }
    const size_t n = node_state_format(parsed, state_text, sizeof state_text);
    REQUIRE(n <= sizeof state_text);
    REQUIRE(node_state_parse(state_text, n, &back));
    REQUIRE(back == parsed);
    // A later version's line whose keyword starts with a known one ("mark_lsn",
    // "layoutx", "generators"), put after the header: skipped whole, every
    // known field survives.
    const char* known[node_state_field_count + 1];
    for (int i = 0; i < node_state_field_count; i++)
        known[i] = node_state_fields[i].keyword;
    known[node_state_field_count] = "layout";
    static char extended[node_state_max_text + 64];
    const char* eol = static_cast<const char*>(std::memchr(state_text, '\n', n));
    REQUIRE(eol != nullptr);
    const size_t head = size_t(eol - state_text) + 1;
    std::memcpy(extended, state_text, head);
    size_t at = head;
    const char* kw = known[in.take<uint8_t>() % (node_state_field_count + 1)];
    at += size_t(std::snprintf(extended + at, 32, "%s", kw));
    const int suffix = 1 + in.take<uint8_t>() % 4;
    for (int i = 0; i < suffix; i++) {
        const uint8_t c = in.take<uint8_t>() % 27;
        extended[at++] = c == 26 ? '_' : char('a' + c);
    }
    at += size_t(std::snprintf(extended + at, 32, " %u\n", unsigned(in.take<uint16_t>())));
    std::memcpy(extended + at, state_text + head, n - head);
    at += n - head;
    REQUIRE(node_state_parse(extended, at, &back));
    REQUIRE(back == parsed);
}

// A watch message from etcd is text from outside: decoded or refused, and
// what the re-check makes of a decoded one names only keys it held, each
// once, and confirms only up to its barrier.
void fuzz_watch(Input& in)
{
    const std::string line(reinterpret_cast<const char*>(in.p), in.n);
    etcd::WatchMessage m;
    std::string why;
    if (!etcd::decode_watch_message(line, &m, &why)) {
        REQUIRE(!why.empty());
        return;
    }
    etcd::HeldKeys keys;
    keys.reset(7, 10);
    keys.put("/p/shard/s/1", 1, 12);
    keys.put("/p/shard/s/2", 2, 14);
    if (!keys.begin(7, 20, &why))
        __builtin_trap();
    std::vector<int> lost;
    const etcd::HeldKeys::Step step = keys.feed(m, &lost, &why);
    REQUIRE(lost.size() <= 2 && keys.size() + lost.size() == 2);
    for (int i : lost)
        REQUIRE(i == 1 || i == 2);
    REQUIRE(keys.checked() == (step == etcd::HeldKeys::Step::done ? 20 : 10));
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size == 0)
        return 0;
    Input in{data + 1, size - 1};
    switch (data[0] % 8) {
    case 0: fuzz_trace(in); break;
    case 1: fuzz_presets(in); break;
    case 2: fuzz_layout(in); break;
    case 3: fuzz_text(in); break;
    case 4: fuzz_numbers(in); break;
    case 5: fuzz_node_state(in); break;
    case 6: fuzz_watch(in); break;
    default: fuzz_engine(in); break;
    }
    return 0;
}
