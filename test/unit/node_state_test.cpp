// The node state's codec: total (every value it writes reads back), strict
// on what it knows, tolerant of lines it does not know, and still reading
// the formats of earlier versions.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "core/coord/node_state.hpp"
#include "core/schemes.hpp"

using namespace shardid;

namespace {

std::string format(const NodeState& st)
{
    std::vector<char> buf(node_state_max_text);
    const size_t n = node_state_format(st, buf.data(), buf.size());
    EXPECT_LE(n, buf.size());
    return std::string(buf.data(), n);
}

bool parse(const std::string& text, NodeState* st) { return node_state_parse(text.data(), text.size(), st); }

LayoutMark mark(const char* name, const Layout& layout, uint64_t word)
{
    LayoutMark m;
    std::strncpy(m.name, name, max_name_len);
    m.shape = Shape::of(layout);
    m.word = word;
    return m;
}

const Layout hourly = Layout::named("hourly").epoch(1577836800000).unit(3600000).time(30).shard(4).sequence(8);

}  // namespace

TEST(NodeState, RoundTripsNamesWithSpacesNewlinesAndPercent)
{
    NodeState st;
    st.mark_ms = 1763900000000;
    st.retired_ms = 1763899000000;
    st.generator_floor = 41;
    st.run_floor = -1;
    const char* names[] = {"hourly orders", "line\nbreak", "100%", "tab\there", "\x7f\xff\x01", "plain_name"};
    for (const char* n : names)
        st.marks[st.n_marks++] = mark(n, hourly, 12345);
    const std::string text = format(st);
    NodeState back;
    ASSERT_TRUE(parse(text, &back)) << text;
    EXPECT_TRUE(back == st);
    EXPECT_NE(text.find("layout hourly%20orders "), std::string::npos) << text;
    EXPECT_NE(text.find("layout 100%25 "), std::string::npos) << text;
}

TEST(NodeState, RoundTripsTheExtremesOfEveryField)
{
    NodeState st;
    st.mark_ms = INT64_MAX;
    st.retired_ms = INT64_MIN;
    st.generator_floor = INT64_MIN;
    st.run_floor = INT64_MAX;
    for (int i = 0; i < NodeState::max_marks; i++) {
        LayoutMark& m = st.marks[st.n_marks++];
        std::memset(m.name, 'a' + i % 26, max_name_len);  // the longest names
        m.name[0] = char(0x80 + i % 64);                  // escaped first bytes
        m.shape.epoch_ms = i % 2 ? INT64_MIN : INT64_MAX;
        m.shape.unit_ms = i % 2 ? INT64_MAX : INT64_MIN;
        m.shape.time_bits = uint8_t(255 - i);
        m.shape.shard_bits = uint8_t(i);
        m.shape.sequence_bits = 255;
        m.shape.sequence_first = uint8_t(i);
        m.shape.wraps = i % 3 == 0;
        m.word = UINT64_MAX - uint64_t(i);
    }
    for (int era = 1; era <= call_era_max; era++)
        ASSERT_TRUE(st.call_eras.append(era, era % 2 ? INT64_MIN : INT64_MAX, era % 3 ? call_era_full : call_era_none));
    const std::string text = format(st);
    EXPECT_LE(text.size(), node_state_max_text);
    NodeState back;
    ASSERT_TRUE(parse(text, &back));
    EXPECT_TRUE(back == st);
}

TEST(NodeState, SkipsLinesItDoesNotKnowAndRefusesMalformedOnes)
{
    NodeState st;
    st.mark_ms = 1000;
    st.marks[st.n_marks++] = mark("hourly", hourly, 77);
    const std::string text = format(st);
    NodeState back;
    // A newer minor version's line: skipped, everything else applied.
    ASSERT_TRUE(parse(text + "lease_holder node-7 since 12\n", &back));
    EXPECT_TRUE(back == st);
    ASSERT_TRUE(parse(text + "future_flag\n", &back));
    // Keywords are whole words: a later line whose keyword starts with a
    // known one is not that one (it was, once, and the whole state was refused).
    for (const char* later : {"mark_lsn 7\n", "runner 7\n", "retired_at 9\n", "generators 3\n",
                              "layoutx hourly 1 2 3\n", "run_floor_next x y\n"}) {
        ASSERT_TRUE(parse(text + later, &back)) << later;
        EXPECT_TRUE(back == st) << later;
        // Before the known lines too.
        ASSERT_TRUE(parse("shardid node state v3\n" + std::string(later) + text.substr(text.find('\n') + 1), &back))
            << later;
        EXPECT_TRUE(back == st) << later;
    }
    // Lines that are not lines of the format, or known lines that do not parse.
    for (const char* bad : {"Mark 5\n", "mark 5\n", "9lives 1\n", "layout hourly 1 2\n", "generator\n", "run 1x\n",
                            "retired 01\n", "no newline"})
        EXPECT_FALSE(parse(text + bad, &back)) << bad;
    EXPECT_TRUE(back == NodeState{});
    // A known value out of its range.
    EXPECT_FALSE(parse("shardid node state v3\nmark 9223372036854775808\n", &back));
    EXPECT_FALSE(parse("shardid node state v3\nmark 1\nlayout x 0 1 2 3 4 0 2 5\n", &back));     // wraps is 0 or 1
    EXPECT_FALSE(parse("shardid node state v3\nmark 1\nlayout x%41 0 1 2 3 4 0 0 5\n", &back));  // 'A' needs no %
    EXPECT_FALSE(parse("shardid node state v3\nmark 1\nlayout x%0 0 1 2 3 4 0 0 5\n", &back));
    // No mark, a NUL byte, a version from the future.
    EXPECT_FALSE(parse("shardid node state v3\nrun 5\n", &back));
    EXPECT_FALSE(parse(std::string("shardid node state v3\nmark 1\0\n", 29), &back));
    EXPECT_FALSE(parse("shardid node state v4\nmark 1\n", &back));
}

TEST(NodeState, ReadsVersionsOneAndTwo)
{
    NodeState back;
    ASSERT_TRUE(parse("shardid high-water mark v1\n1700000000000\n", &back));
    EXPECT_EQ(back.mark_ms, 1700000000000);
    EXPECT_EQ(back.generator_floor, -1);
    ASSERT_TRUE(parse("shardid node state v2\nmark 1700000000000\ngenerator 4\nrun 9\n"
                      "slot hourly 1577836800000 3600000 30 4 8 0 0 12345\n",
                      &back));
    EXPECT_EQ(back.mark_ms, 1700000000000);
    EXPECT_EQ(back.generator_floor, 4);
    EXPECT_EQ(back.run_floor, 9);
    ASSERT_EQ(back.n_marks, 1);
    EXPECT_STREQ(back.marks[0].name, "hourly");
    EXPECT_TRUE(back.marks[0].shape == Shape::of(hourly));
    EXPECT_EQ(back.marks[0].word, 12345u);
    // Version 2 had no "retired" line: there it is a line of a later version.
    ASSERT_TRUE(parse("shardid node state v2\nmark 1\nretired 5\n", &back));
    EXPECT_EQ(back.retired_ms, 0);
}

TEST(NodeState, CheckRefusesMarksTheEngineCannotUse)
{
    NodeState st;
    st.marks[st.n_marks++] = mark("hourly", hourly, 77);
    EXPECT_TRUE(node_state_check(st).ok());
    st.marks[0].shape.unit_ms = 0;
    EXPECT_FALSE(node_state_check(st).ok());
    st.marks[0] = mark("hourly", hourly, uint64_t(1) << 40);  // beyond 30 + 8 bits
    EXPECT_FALSE(node_state_check(st).ok());
    st.marks[0] = mark("", hourly, 1);
    EXPECT_FALSE(node_state_check(st).ok());
}

TEST(Names, OneRuleForLayoutAndKeyNames)
{
    EXPECT_TRUE(valid_name("orders_2", 8));
    EXPECT_TRUE(valid_name(std::string(63, 'a').c_str(), 63));
    EXPECT_FALSE(valid_name(std::string(64, 'a').c_str(), 64));
    EXPECT_FALSE(valid_name("", 0));
    EXPECT_FALSE(valid_name("hourly orders", 13));
    EXPECT_FALSE(valid_name("Orders", 6));
    EXPECT_FALSE(valid_name("a\nb", 3));
}

// Every field of the table (src/core/coord/node_state.hpp) round-trips, at its
// extremes, alone: a field added there is covered without another edit.
TEST(NodeState, EveryFieldOfTheTableRoundTripsAtItsExtremes)
{
    for (const NodeStateField& f : node_state_fields) {
        for (int64_t v : {INT64_MIN, int64_t(-1), int64_t(0), int64_t(1795000000000), INT64_MAX}) {
            NodeState st;
            st.*f.member = v;
            static char text[node_state_max_text];
            const size_t len = node_state_format(st, text, sizeof text);
            ASSERT_LE(len, sizeof text);
            NodeState back;
            ASSERT_TRUE(node_state_parse(text, len, &back)) << f.keyword;
            EXPECT_EQ(back.*f.member, v) << f.keyword;
            EXPECT_TRUE(back == st) << f.keyword;
        }
    }
}
