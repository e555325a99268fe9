// Codecs, call numbers and DecimalId.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/callnum.hpp"
#include "core/codec.hpp"
#include "core/decimal.hpp"

using namespace shardid;

namespace {

std::string enc(const Alphabet& a, uint64_t v, int width = 0)
{
    char buf[max_encoded_width + 1];
    encode_digits(a, v, width, buf);
    return buf;
}

bool dec(const Alphabet& a, const std::string& s, uint64_t* v, Status* st, uint64_t max = INT64_MAX)
{
    return decode_digits(a, s.data(), s.size(), max, v, st);
}

}  // namespace

TEST(Codec, Base62KnownValues)
{
    EXPECT_EQ(enc(base62, 0), "0");
    EXPECT_EQ(enc(base62, 61), "z");
    EXPECT_EQ(enc(base62, 62), "10");
    EXPECT_EQ(enc(base62, INT64_MAX), "AzL8n0Y58m7");
    EXPECT_EQ(enc(base62, 5, 11), "00000000005");
    uint64_t v = 0;
    Status st;
    ASSERT_TRUE(dec(base62, "AzL8n0Y58m7", &v, &st));
    EXPECT_EQ(v, uint64_t(INT64_MAX));
    EXPECT_FALSE(dec(base62, "AzL8n0Y58m8", &v, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
    EXPECT_FALSE(dec(base62, "abc-", &v, &st));
    EXPECT_EQ(st.error, Error::invalid_text);
    EXPECT_NE(std::strstr(st.message, "position 4"), nullptr) << st.message;
    EXPECT_FALSE(dec(base62, "", &v, &st));
    EXPECT_EQ(st.error, Error::invalid_text);
    EXPECT_FALSE(dec(base62, std::string("a\0b", 3), &v, &st));
}

TEST(Codec, CrockfordBase32)
{
    EXPECT_EQ(enc(base32_crockford, 0), "0");
    EXPECT_EQ(enc(base32_crockford, 31), "Z");
    EXPECT_EQ(enc(base32_crockford, 32), "10");
    EXPECT_EQ(enc(base32_crockford, 1234567890), "14SC0PJ");
    EXPECT_EQ(enc(base32_crockford, INT64_MAX), "7ZZZZZZZZZZZZ");
    uint64_t v = 0;
    Status st;
    ASSERT_TRUE(dec(base32_crockford, "14sc0pj", &v, &st));  // case-insensitive
    EXPECT_EQ(v, 1234567890u);
    ASSERT_TRUE(dec(base32_crockford, "IlLoO", &v, &st));  // I, L read as 1; O as 0
    EXPECT_EQ(v, (((1u * 32 + 1) * 32 + 1) * 32 + 0) * 32 + 0);
    EXPECT_FALSE(dec(base32_crockford, "U", &v, &st));  // U is not a Crockford digit
    EXPECT_EQ(st.error, Error::invalid_text);
    EXPECT_FALSE(dec(base32_crockford, "80000000000000", &v, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
    EXPECT_FALSE(dec(base32_crockford, "9", &v, &st, 5));  // one digit above a small max
}

TEST(Codec, RoundTripsAndPaddedOrder)
{
    std::mt19937_64 rng(42);
    for (const Alphabet* a : {&base62, &base32_crockford}) {
        std::string prev;
        uint64_t prev_v = 0;
        for (int i = 0; i < 20000; i++) {
            const uint64_t v = i < 100 ? uint64_t(i) : rng() >> (rng() % 63 + 1);
            uint64_t back = 0;
            Status st;
            ASSERT_TRUE(dec(*a, enc(*a, v), &back, &st, UINT64_MAX)) << st.message;
            EXPECT_EQ(back, v);
            const std::string padded = enc(*a, v, a == &base62 ? 11 : 13);
            if (i > 0) {
                EXPECT_EQ(v < prev_v, padded < prev) << "padded encodings sort like the numbers";
            }
            prev = padded, prev_v = v;
        }
    }
}

// The spec's example: version 0, run 8452, sequence 11827.
TEST(CallNumber, SpecExampleBitForBit)
{
    const uint64_t bits = call_pack(CallParts{0, 8452, 11827});
    std::string s;
    for (int i = call_bits - 1; i >= 0; i--)
        s += char('0' + ((bits >> i) & 1));
    EXPECT_EQ(s, "00000000000000000001000010000010010111000110011");
    const CallParts p = call_unpack(bits);
    EXPECT_EQ(p.version, 0u);
    EXPECT_EQ(p.run_id, 8452u);
    EXPECT_EQ(p.sequence, 11827u);
    EXPECT_EQ(call_pack(CallParts{7, call_run_max, call_sequence_max}), (uint64_t(1) << 47) - 1);
}

TEST(CallNumber, ShuffleIsAPermutationAndStable)
{
    const BitShuffle a = BitShuffle::from_key("k1", 2), a2 = BitShuffle::from_key("k1", 2),
                     b = BitShuffle::from_key("k2", 2);
    EXPECT_EQ(std::memcmp(a.to, a2.to, call_bits), 0) << "same key, same permutation";
    EXPECT_NE(std::memcmp(a.to, b.to, call_bits), 0);
    std::set<int> targets(a.to, a.to + call_bits);
    EXPECT_EQ(targets.size(), size_t(call_bits));
    EXPECT_EQ(*targets.rbegin(), call_bits - 1);
    for (int bit = 0; bit < call_bits; bit++) {  // every single bit maps to one bit and back
        const uint64_t v = uint64_t(1) << bit;
        EXPECT_EQ(__builtin_popcountll(a.apply(v)), 1);
        EXPECT_EQ(a.invert(a.apply(v)), v);
    }
    std::mt19937_64 rng(7);
    for (int i = 0; i < 100000; i++) {
        const uint64_t v = rng() & ((uint64_t(1) << 47) - 1);
        ASSERT_EQ(a.invert(a.apply(v)), v);
        ASSERT_LT(a.apply(v), uint64_t(1) << 47);
    }
}

TEST(CallNumber, ComposeDecodeRoundTrip)
{
    const BitShuffle sh = BitShuffle::from_key("test", 4);
    std::set<std::string> seen;
    for (uint32_t seq = 0; seq < 2000; seq++) {
        char out[call_chars + 1];
        Status st;
        ASSERT_TRUE(call_number_compose(sh, 0, 8452, seq, out, &st));
        EXPECT_EQ(std::strlen(out), size_t(call_chars));
        EXPECT_TRUE(seen.insert(out).second);
        CallParts p{};
        ASSERT_TRUE(call_number_decode(sh, out, call_chars, &p, &st)) << st.message;
        EXPECT_EQ(p.run_id, 8452u);
        EXPECT_EQ(p.sequence, seq);
    }
    for (auto parts : {CallParts{7, call_run_max, call_sequence_max}, CallParts{0, 0, 0}}) {
        char out[call_chars + 1];
        Status st;
        ASSERT_TRUE(call_number_compose(sh, parts.version, parts.run_id, parts.sequence, out, &st));
        CallParts p{};
        ASSERT_TRUE(call_number_decode(sh, out, call_chars, &p, &st));
        EXPECT_EQ(call_pack(p), call_pack(parts));
    }
}

TEST(CallNumber, RejectsWhatIsNotACallNumber)
{
    const BitShuffle sh = BitShuffle::from_key("test", 4);
    CallParts p{};
    Status st;
    for (const char* bad : {"", "1234567", "123456789", "1234567-", "zzzzzzzz", "1234 567"}) {
        EXPECT_FALSE(call_number_decode(sh, bad, std::strlen(bad), &p, &st)) << bad;
        EXPECT_EQ(st.error, Error::invalid_text) << bad;
    }
    // 2^47 - 1 is the largest call number; 2^47 is text that is not one.
    char out[call_chars + 1];
    encode_digits(base62, (uint64_t(1) << 47) - 1, call_chars, out);
    EXPECT_TRUE(call_number_decode(sh, out, call_chars, &p, &st));
    encode_digits(base62, uint64_t(1) << 47, call_chars, out);
    EXPECT_FALSE(call_number_decode(sh, out, call_chars, &p, &st));
    char o[call_chars + 1];
    EXPECT_FALSE(call_number_compose(sh, 8, 0, 0, o, &st));
    EXPECT_FALSE(call_number_compose(sh, 0, int64_t(call_run_max) + 1, 0, o, &st));
    EXPECT_FALSE(call_number_compose(sh, 0, 0, -1, o, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
}

TEST(DecimalId, SpecExample)
{
    DecimalParts p{};
    Status st;
    ASSERT_TRUE(decimal_decode(14150009200065, &p, &st));
    EXPECT_EQ(p.counter, 1415);
    EXPECT_EQ(p.generator_id, 92);
    EXPECT_EQ(p.launch_id, 65);
    EXPECT_EQ(decimal_compose(1415, 92, 65), 14150009200065);
    EXPECT_EQ(decimal_compose(decimal_counter_max, decimal_generator_max, decimal_launch_max), 9223372029999999999);
    ASSERT_TRUE(decimal_decode(9223372029999999999, &p, &st));
    EXPECT_FALSE(decimal_decode(9223372030000000000, &p, &st)) << "counter 922,337,203";
    EXPECT_EQ(st.error, Error::invalid_parameter);
    EXPECT_FALSE(decimal_decode(9200065, &p, &st)) << "counter 0";
    EXPECT_FALSE(decimal_decode(0, &p, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
}

TEST(DecimalId, StateTakesGeneratorsAndNeverRepeats)
{
    DecimalState state{};
    int64_t counter = 0, gen = 0;
    EXPECT_FALSE(decimal_next(state, &counter, &gen)) << "no generator yet";
    EXPECT_TRUE(decimal_needs_generator(state));
    decimal_install_generator(state, 0);
    ASSERT_TRUE(decimal_next(state, &counter, &gen));
    EXPECT_EQ(counter, 1);
    EXPECT_EQ(gen, 0);
    state.word.store((uint64_t(1) << 30) | uint64_t(decimal_counter_max - 1));
    ASSERT_TRUE(decimal_next(state, &counter, &gen));
    EXPECT_EQ(counter, decimal_counter_max);
    EXPECT_FALSE(decimal_next(state, &counter, &gen)) << "counter used up: a new generator id is needed";
    decimal_install_generator(state, 99999);
    ASSERT_TRUE(decimal_next(state, &counter, &gen));
    EXPECT_EQ(gen, 99999);
    EXPECT_EQ(counter, 1);
}

TEST(DecimalId, ThreadsShareTheCounter)
{
    DecimalState state{};
    decimal_install_generator(state, 5);
    std::vector<std::vector<int64_t>> got(4);
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back([&, t] {
            for (int i = 0; i < 50000; i++) {
                int64_t c = 0, g = 0;
                ASSERT_TRUE(decimal_next(state, &c, &g));
                got[t].push_back(c);
            }
        });
    for (auto& t : ts)
        t.join();
    std::set<int64_t> all;
    for (auto& v : got)
        all.insert(v.begin(), v.end());
    EXPECT_EQ(all.size(), 200000u);
    EXPECT_EQ(*all.rbegin(), 200000);
}
