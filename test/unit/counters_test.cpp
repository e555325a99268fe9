// Codecs, call numbers and DecimalId.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/callnum.hpp"
#include "core/etcd/rules.hpp"
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
    for (auto parts :
         {CallParts{7, uint32_t(call_era_first_run(1) - 1), call_sequence_max}, CallParts{0, 0, 0},
          CallParts{0, uint32_t(call_era_first_run(1)), 0}, CallParts{0, call_run_max, call_sequence_max}}) {
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
    // 2^47 + 255 * 2^36 - 1 is the largest call number (era 255's last); the
    // next value is text that is not one.
    char out[call_chars + 1];
    encode_digits(base62, call_text_max, call_chars, out);
    EXPECT_TRUE(call_number_decode(sh, out, call_chars, &p, &st));
    EXPECT_EQ(call_era_of(p.run_id), call_era_max);
    encode_digits(base62, call_text_max + 1, call_chars, out);
    EXPECT_FALSE(call_number_decode(sh, out, call_chars, &p, &st));
    char o[call_chars + 1];
    EXPECT_FALSE(call_number_compose(sh, 8, 0, 0, o, &st));
    EXPECT_FALSE(call_number_compose(sh, 1, call_era_first_run(1), 0, o, &st)) << "an era's texts have no version";
    EXPECT_EQ(st.error, Error::out_of_range);
    EXPECT_FALSE(call_number_compose(sh, 0, int64_t(call_run_max) + 1, 0, o, &st));
    EXPECT_FALSE(call_number_compose(sh, 0, 0, -1, o, &st));
    EXPECT_EQ(st.error, Error::out_of_range);
}

// Era texts: 8 characters, above every era-0 text (2^47), each era in its
// own range, and back.
TEST(CallNumber, EraTextsLieAboveEraZeroAndApart)
{
    const BitShuffle sh = BitShuffle::from_key("test", 4);
    EXPECT_LT(call_text_max, uint64_t(62) * 62 * 62 * 62 * 62 * 62 * 62 * 62);
    std::mt19937_64 rng(11);
    for (int i = 0; i < 200000; i++) {
        const int64_t run = int64_t(rng() % (uint64_t(call_run_max) + 1));
        const int64_t seq = int64_t(rng() % (call_sequence_max + 1));
        char out[call_chars + 1];
        Status st;
        ASSERT_TRUE(call_number_compose(sh, 0, run, seq, out, &st)) << st.message;
        uint64_t v = 0;
        ASSERT_TRUE(dec(base62, out, &v, &st, UINT64_MAX));
        const int era = call_era_of(run);
        if (era == 0) {
            ASSERT_LT(v, call_era_base);
        } else {
            ASSERT_GE(v, call_era_base + (uint64_t(era - 1) << call_era_bits));
            ASSERT_LT(v, call_era_base + (uint64_t(era) << call_era_bits));
        }
        CallParts p{};
        ASSERT_TRUE(call_number_decode(sh, out, call_chars, &p, &st)) << st.message;
        ASSERT_EQ(p.run_id, uint64_t(run));
        ASSERT_EQ(p.sequence, uint64_t(seq));
    }
}

// The eras, case by case.
TEST(CallNumber, EraTakes)
{
    CallEras eras;
    const int64_t k1 = 111, k2 = 222, k3 = 333;
    int64_t run = 0;
    // Nothing recorded: 1.2's era 0 is never continued (its runs may have
    // been made with any key).
    ASSERT_TRUE(call_era_take(eras, k1, -1, 5, &run));
    EXPECT_EQ(run, call_era_first_run(1));
    ASSERT_TRUE(call_era_take(eras, k1, -1, run, &run));
    EXPECT_EQ(run, call_era_first_run(1) + 1);
    // Another key: an era of its own, and each key goes on in its own in
    // turn (two databases' keys at once).
    ASSERT_TRUE(call_era_take(eras, k2, -1, run, &run));
    EXPECT_EQ(run, call_era_first_run(2));
    ASSERT_TRUE(call_era_take(eras, k1, -1, run, &run));
    EXPECT_EQ(run, call_era_first_run(1) + 2);
    ASSERT_TRUE(call_era_take(eras, k2, -1, run, &run));
    EXPECT_EQ(run, call_era_first_run(2) + 1);
    EXPECT_EQ(eras.n, 2);
    // Above a floor (a Citus worker's own): the key's era is left for a new one.
    ASSERT_TRUE(call_era_take(eras, k1, call_era_first_run(2) + 5, -1, &run));
    EXPECT_EQ(run, call_era_first_run(3));
    // A new era lies above the highest run id taken anywhere (eras a
    // record forgot).
    ASSERT_TRUE(call_era_take(eras, k3, -1, call_era_first_run(7) + 9, &run));
    EXPECT_EQ(run, call_era_first_run(8));
    // Closed eras (a record that may have lost run ids): each key anew.
    eras.close_all();
    ASSERT_TRUE(call_era_take(eras, k3, -1, run, &run));
    EXPECT_EQ(run, call_era_first_run(9));
    // An era used up: the key's next.
    CallEras one;
    ASSERT_TRUE(one.append(4, k1, call_era_full - 1));
    ASSERT_TRUE(call_era_take(one, k1, -1, -1, &run));
    EXPECT_EQ(run, call_era_first_run(5) - 1);
    ASSERT_TRUE(call_era_take(one, k1, -1, -1, &run));
    EXPECT_EQ(run, call_era_first_run(5));
    // The last era taken: no new one, the list unchanged; its key goes on.
    CallEras full;
    for (int e = 1; e <= call_era_max; e++)
        ASSERT_TRUE(full.append(e, 1000 + e));
    EXPECT_FALSE(full.append(call_era_max, 5));
    const CallEras before = full;
    EXPECT_FALSE(call_era_take(full, k3, -1, -1, &run));
    EXPECT_TRUE(full == before);
    ASSERT_TRUE(call_era_take(full, 1000 + call_era_max, -1, -1, &run));
    EXPECT_EQ(call_era_of(run), call_era_max);
    // Malformed lists are refused whole; what is formatted parses back.
    CallEras back;
    for (const char* bad :
         {"1:0:-1", "0:5:-1", "256:5:-1", "2:5:-1 1:6:-1", "1:5:-1 1:6:-1", "1:5:-1  2:6:-1", "1:5", "1:5:", ":5:1",
          "1:5:-1 ", "1:x:1", "1:99999999999999999999:1", "-1:5:1", "1:5:-2", "1:5:16777216", "1:5:--1"})
        EXPECT_FALSE(etcd::call_eras_parse(bad, std::strlen(bad), &back)) << bad;
    full.list[3].low = call_era_full;
    full.list[4].low = 77;
    const std::string text = etcd::call_eras_format(full);
    ASSERT_TRUE(etcd::call_eras_parse(text.data(), text.size(), &back));
    EXPECT_TRUE(back == full);
    ASSERT_TRUE(etcd::call_eras_parse("", 0, &back));
    EXPECT_EQ(back.n, 0);
}

// The review's case (issue 65): six keys, each used for four whole runs of
// 16,384 numbers, then each again for one, in turn. Taken in eras, no text
// comes twice; made as 1.2 made them (one run-id counter, era 0, any key),
// some do.
TEST(CallNumber, NoTextTwiceAcrossKeyChanges)
{
    auto issue = [](bool eras_rule) {
        std::set<std::string> seen;
        size_t twice = 0;
        CallEras eras;
        int64_t counter = 0;  // 1.2's run-id counter: each value handed out once
        auto numbers = [&](const std::string& secret, int64_t key, int runs) {
            const BitShuffle sh = BitShuffle::from_key(secret.data(), secret.size());
            for (int r = 0; r < runs; r++) {
                int64_t run = ++counter;
                if (eras_rule) {
                    EXPECT_TRUE(call_era_take(eras, key, -1, counter, &run));
                }
                counter = std::max(counter, run);
                for (int64_t seq = 0; seq <= int64_t(call_sequence_max); seq++) {
                    char out[call_chars + 1];
                    Status st;
                    EXPECT_TRUE(call_number_compose(sh, 0, run, seq, out, &st));
                    twice += !seen.insert(out).second;
                }
            }
        };
        for (int k = 0; k < 6; k++)
            numbers("secret-" + std::to_string(k), 1000 + k, 4);
        for (int k = 0; k < 6; k++)
            numbers("secret-" + std::to_string(k), 1000 + k, 1);
        return twice;
    };
    EXPECT_EQ(issue(true), 0u);
    EXPECT_GT(issue(false), 0u) << "the control: 1.2's texts repeat across keys";
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
