// The node state's codec: total (every value it writes reads back), strict
// on what it knows, tolerant of lines it does not know, and still reading
// the formats of earlier versions.
#include <gtest/gtest.h>

#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "core/state/node_state.hpp"
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
    st.history = INT64_MAX;
    st.history_began_ms = INT64_MIN;
    st.awaiting = 1;
    for (int i = 0; i < Histories::max; i++)
        ASSERT_TRUE(st.adopted.add(INT64_MAX - i, i % 2 ? INT64_MIN : INT64_MAX));
    EXPECT_FALSE(st.adopted.add(1, 0));  // full
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

// Every field of the table (src/core/state/node_state.hpp) round-trips, at its
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

// The histories (1.4): written and read back, each adopted history once,
// and what may be adopted.
TEST(NodeState, HistoriesRoundTripAndAreRefusedWhenMalformed)
{
    NodeState st;
    st.mark_ms = 1000;
    st.history = 0x1234abcd5678ef90;
    st.history_began_ms = 1764000000000;
    st.awaiting = 1;
    ASSERT_TRUE(st.adopted.add(77, 1764000000001));
    ASSERT_TRUE(st.adopted.add(78, 1764000000002));
    EXPECT_TRUE(st.adopted.add(77, 5));  // there already: unchanged
    EXPECT_EQ(st.adopted.n, 2);
    EXPECT_FALSE(st.adopted.add(0, 5));
    const std::string text = format(st);
    EXPECT_NE(text.find("\nadopted 77 1764000000001\n"), std::string::npos) << text;
    NodeState back;
    ASSERT_TRUE(parse(text, &back)) << text;
    EXPECT_TRUE(back == st);
    for (const char* bad : {"adopted 77 1\n", "adopted 0 1\n", "adopted -5 1\n", "adopted 9\n", "adopted 9 1 2\n"})
        EXPECT_FALSE(parse(text + bad, &back)) << bad;
    // A reader of 1.3 skips the new lines (the rule for what a reader does
    // not know): a 1.3 file reads in 1.4 with no history.
    ASSERT_TRUE(parse("shardid node state v3\nmark 5\n", &back));
    EXPECT_EQ(back.history, 0);
    EXPECT_EQ(back.adopted.n, 0);
    st.awaiting = 2;
    EXPECT_FALSE(node_state_check(st).ok());
}

TEST(NodeState, HistoryTextIsSixteenHexDigits)
{
    char t[history_text_len + 1];
    history_text(0x0123456789abcdef, t);
    EXPECT_STREQ(t, "0123456789abcdef");
    int64_t h = 0;
    ASSERT_TRUE(history_parse(t, 16, &h));
    EXPECT_EQ(h, 0x0123456789abcdef);
    history_text(INT64_MAX, t);
    ASSERT_TRUE(history_parse(t, 16, &h));
    EXPECT_EQ(h, INT64_MAX);
    for (const char* bad : {"0000000000000000", "8000000000000000", "0123456789ABCDEF", "0123456789abcde",
                            "0123456789abcdef0", "0123456789abcdeg"})
        EXPECT_FALSE(history_parse(bad, std::strlen(bad), &h)) << bad;
}

TEST(NodeState, AdoptingRecordsEveryHistoryOnceAndEndsTheWait)
{
    NodeState node;
    node.history = 10;
    node.awaiting = 1;
    NodeState old;
    old.history = 20;
    ASSERT_TRUE(old.adopted.add(30, 1));
    ASSERT_TRUE(old.adopted.add(10, 1));  // the old one had adopted this node's own: not listed again
    EXPECT_FALSE(history_known(node, 20));
    ASSERT_TRUE(adopt_check(node, old).ok());
    adopt_histories(node, old, 99);
    EXPECT_EQ(node.awaiting, 0);
    EXPECT_TRUE(history_known(node, 10));
    EXPECT_TRUE(history_known(node, 20));
    EXPECT_TRUE(history_known(node, 30));
    EXPECT_FALSE(history_known(node, 40));
    EXPECT_FALSE(history_known(node, 0));
    EXPECT_EQ(node.adopted.n, 2);
    EXPECT_EQ(node.adopted.list[0].at_ms, 99);
    // Adopting again changes nothing.
    adopt_histories(node, old, 100);
    EXPECT_EQ(node.adopted.n, 2);
}

TEST(NodeState, AdoptionRefusesAStateThatAwaitsOrIsTheWaitersOwn)
{
    NodeState node;
    node.history = 10;
    node.awaiting = 1;
    NodeState target;  // another upgraded server's state, still waiting
    target.history = 20;
    target.awaiting = 1;
    Status s = adopt_check(node, target);
    EXPECT_EQ(s.error, Error::invalid_parameter);
    EXPECT_NE(std::string(s.message).find("awaits"), std::string::npos) << s.message;
    NodeState own = node;
    own.awaiting = 0;
    s = adopt_check(node, own);
    EXPECT_EQ(s.error, Error::invalid_parameter);
    EXPECT_NE(std::string(s.message).find("own"), std::string::npos) << s.message;
    // A node that does not wait may merge a state of its own history (an
    // export of itself): nothing to add.
    node.awaiting = 0;
    EXPECT_TRUE(adopt_check(node, own).ok());
    // Full: a history that is not listed yet does not fit.
    for (int i = 0; i < Histories::max; i++)
        ASSERT_TRUE(node.adopted.add(100 + i, 0));
    NodeState other;
    other.history = 5;
    EXPECT_EQ(adopt_check(node, other).error, Error::limit_exceeded);
    other.history = 100;  // listed already: fits
    EXPECT_TRUE(adopt_check(node, other).ok());
}
