// The coordination rules (src/core/etcd/rules.hpp) and the etcd answer decoders
// (src/core/etcd/wire.hpp), without an etcd: what a broken proxy, a truncated
// body or a hand-edited key looks like must be refused, never crash.
#include <gtest/gtest.h>

#include <climits>

#include "core/etcd/rules.hpp"
#include "core/etcd/wire.hpp"

using namespace shardid;

TEST(EtcdRules, FenceStopsBeforeTheLeaseCanExpire)
{
    for (int64_t ttl : {2000, 3000, 10000, 60000, 300000}) {
        const int64_t sent = 123456;
        // etcd renews the lease for ttl from when the request reached it,
        // which is after `sent`: the holder stops a margin earlier.
        EXPECT_LE(etcd::fence_deadline_ms(sent, ttl), sent + ttl - 1000) << ttl;
        EXPECT_GE(etcd::fence_margin_ms(ttl), ttl / 5);
        // A keepalive every third of the TTL, each bounded by a timeout,
        // renews the fence before it passes.
        EXPECT_LT(etcd::keepalive_every_ms(ttl) + etcd::request_timeout_ms(ttl), etcd::fence_deadline_ms(0, ttl))
            << ttl;
    }
}

TEST(EtcdRules, WindowCoversTheFenceAndEndsBeforeTheLeaseCanExpire)
{
    const int64_t span = etcd::window_span_ms;
    for (int64_t ttl : {2000, 3000, 10000, 60000, 300000}) {
        // Right after a renewal sent at `sent` (wall and fence clocks
        // aligned here): the window covers every tick before the fence...
        const int64_t sent = 1000000, now = sent + 50;
        const int64_t fence = etcd::fence_deadline_ms(sent, ttl);
        const int64_t end = etcd::window_target(now, fence - now, ttl, -1, 0, 0);
        EXPECT_GE(end, fence) << ttl;
        // ...and ends before etcd can expire the lease (TTL after the
        // renewal reached it, which was after it was sent), so a new holder
        // with a synchronised clock starts past it.
        EXPECT_LT(end, sent + ttl) << ttl;
        // Between renewals it need not move; a renewal that moves the fence
        // to its end does (the next renewal after half a margin).
        EXPECT_FALSE(etcd::window_due(now + 500, fence - now - 500, end, -1)) << ttl;
        const int64_t later = end - etcd::fence_deadline_ms(0, ttl);
        EXPECT_EQ(etcd::fence_deadline_ms(later, ttl), end) << ttl;
        EXPECT_TRUE(etcd::window_due(later, etcd::fence_deadline_ms(later, ttl) - later, end, -1)) << ttl;
    }
    // A generator that needs a tick at or beyond the end moves it a span beyond.
    EXPECT_TRUE(etcd::window_due(1000, 5000, 9000, 9000));
    EXPECT_EQ(etcd::window_target(1000, 5000, 10000, 20000, 0, 9000), 20000 + span);
    // A node whose clock is 60 s behind the previous holder's mark starts
    // its window above that mark, not at its own clock.
    EXPECT_EQ(etcd::window_target(1000, 8000, 10000, -1, 61000, 61000), 61000 + span);
    // Never below what was recorded; a fence already passed adds nothing.
    EXPECT_EQ(etcd::window_target(1000, 8000, 10000, -1, 0, 90000), 90000);
    EXPECT_EQ(etcd::window_target(1000, -5000, 10000, -1, 0, 0), 1000 + etcd::fence_margin_ms(10000) / 2);
}

TEST(EtcdRules, RenewalsLateBeforeTheFence)
{
    for (int64_t ttl : {2000, 3000, 10000, 60000}) {
        const int64_t full = etcd::fence_deadline_ms(0, ttl);
        // On time: a keepalive every TTL/5 leaves at least full - TTL/5.
        EXPECT_FALSE(etcd::renewal_late(full, ttl)) << ttl;
        EXPECT_FALSE(etcd::renewal_late(full - etcd::keepalive_every_ms(ttl), ttl)) << ttl;
        // A renewal that failed and timed out: late, while IDs still flow.
        const int64_t after_timeout = full - etcd::keepalive_every_ms(ttl) - etcd::request_timeout_ms(ttl);
        EXPECT_TRUE(etcd::renewal_late(after_timeout, ttl)) << ttl;
        EXPECT_GT(after_timeout, 0) << ttl;
    }
}

TEST(EtcdRules, EpisodesLogOnceWhenTheyStartAndOnceWhenTheyEnd)
{
    etcd::Episode e;
    EXPECT_FALSE(e.ok(0));      // nothing to end
    EXPECT_TRUE(e.fail(1000));  // starts: a line
    for (int i = 0; i < 40; i++)
        EXPECT_FALSE(e.fail(1000 + 100 * i));  // every retry: no line
    EXPECT_TRUE(e.ok(5200));                   // ends: a line with how long and how many
    EXPECT_EQ(e.lasted_ms(), 4200);
    EXPECT_EQ(e.failures(), 41);
    // Back within 10 s of its last starting line: counted, not logged.
    EXPECT_FALSE(e.fail(6000));
    EXPECT_FALSE(e.ok(6500));
    EXPECT_FALSE(e.fail(7000));
    EXPECT_FALSE(e.ok(7100));
    // Back later: a line again, and its end says two episodes had none.
    EXPECT_TRUE(e.fail(11500));
    EXPECT_TRUE(e.ok(12000));
    EXPECT_EQ(e.unreported(), 2);
    // A condition that lasts: one line at its start, however long it lasts.
    int lines = 0;
    for (int64_t t = 30000; t < 90000; t += 50)
        lines += e.fail(t);
    EXPECT_EQ(lines, 1);
}

TEST(EtcdRules, AnEpisodeLastsFromTheLastAnswer)
{
    // etcd answered at 1000, stopped, and the first request failed after
    // its 2 s timeout: the end line counts from the answer, not the failure.
    etcd::Episode e;
    EXPECT_TRUE(e.fail(4300, 1000));
    EXPECT_TRUE(e.ok(31000));
    EXPECT_EQ(e.lasted_ms(), 30000);
    // No answer before (a start with etcd down), or one from the future:
    // the failure itself.
    etcd::Episode f;
    EXPECT_TRUE(f.fail(5000));
    EXPECT_TRUE(f.ok(6000));
    EXPECT_EQ(f.lasted_ms(), 1000);
    etcd::Episode g;
    EXPECT_TRUE(g.fail(5000, 9000));
    EXPECT_TRUE(g.ok(6000));
    EXPECT_EQ(g.lasted_ms(), 1000);
}

TEST(EtcdRules, LowestFreeId)
{
    EXPECT_EQ(etcd::lowest_free({}, 0, 1023), 0);
    EXPECT_EQ(etcd::lowest_free({0, 1, 3}, 0, 1023), 2);
    EXPECT_EQ(etcd::lowest_free({3, 1, 0, 2}, 0, 1023), 4);
    EXPECT_EQ(etcd::lowest_free({5, 6}, 5, 7), 7);
    EXPECT_EQ(etcd::lowest_free({5, 6, 7}, 5, 7), -1);
    EXPECT_EQ(etcd::lowest_free({100}, 5, 7), 5);
}

TEST(EtcdRules, ChoosesTheIdToClaim)
{
    using Keys = std::vector<std::pair<std::string, std::string>>;
    const Keys held = {{"/p/node/0", "11"}, {"/p/node/1", "12"}, {"/p/mark/2", ""}, {"/q/node/2", "13"}};
    // The lowest free id; marks and other prefixes do not count.
    EXPECT_EQ(etcd::choose_id("/p", held, "99", -1, 0, 1023), 2);
    // The id its own lease holds already, even when it held another before.
    EXPECT_EQ(etcd::choose_id("/p", held, "12", 5, 0, 1023), 1);
    // The id it held last, when free again; not when another holds it.
    EXPECT_EQ(etcd::choose_id("/p", held, "99", 7, 0, 1023), 7);
    EXPECT_EQ(etcd::choose_id("/p", held, "99", 0, 0, 1023), 2);
    // An empty lease matches no key without one; the range bounds the choice.
    EXPECT_EQ(etcd::choose_id("/p", {{"/p/node/0", ""}}, "", -1, 0, 1023), 1);
    EXPECT_EQ(etcd::choose_id("/p", held, "99", -1, 0, 1), -1);
}

TEST(EtcdRules, Keys)
{
    EXPECT_EQ(etcd::node_key("/shardid", 7), "/shardid/node/7");
    EXPECT_EQ(etcd::mark_key("/p", 0), "/p/mark/0");
    EXPECT_EQ(etcd::counter_key("/p", "run"), "/p/counter/run");
    EXPECT_EQ(etcd::prefix_end("/p/node"), "/p/node0");
    EXPECT_EQ(etcd::node_id_of_key("/p", "/p/node/12"), 12);
    EXPECT_EQ(etcd::node_id_of_key("/p", "/p/node/x"), -1);
    EXPECT_EQ(etcd::node_id_of_key("/p", "/p/node/-1"), -1);
    EXPECT_EQ(etcd::node_id_of_key("/p", "/q/node/1"), -1);
    EXPECT_EQ(etcd::node_id_of_key("/p", "/p/node/99999999999"), -1);
}

TEST(EtcdRules, CountsAreDigitsOnly)
{
    int64_t v = -1;
    EXPECT_TRUE(etcd::parse_count("0", &v));
    EXPECT_EQ(v, 0);
    EXPECT_TRUE(etcd::parse_count("9223372036854775807", &v));
    EXPECT_EQ(v, INT64_MAX);
    for (const char* bad :
         {"", "-1", "+1", " 1", "1 ", "1e3", "banana", "9223372036854775808", "99999999999999999999", "0x10", "1.5"})
        EXPECT_FALSE(etcd::parse_count(bad, &v)) << bad;
}

TEST(EtcdRules, Holders)
{
    etcd::HolderRecord h{"db1", 5432, "7311", "2026-11-23T10:00:00Z"};
    EXPECT_EQ(etcd::describe_holder(etcd::holder_value(h)),
              "host db1 port 5432, system identifier 7311, since 2026-11-23T10:00:00Z");
    EXPECT_EQ(etcd::describe_holder("nonsense\x01"), "an unknown holder (the key holds \"nonsense?\")");
    EXPECT_EQ(etcd::describe_holder("{\"host\":1}"), "an unknown holder (the key holds \"{\"host\":1}\")");
}

TEST(EtcdRules, SameNodeIsHostPortAndSystemIdentifier)
{
    etcd::HolderRecord me;
    me.host = "db1";
    me.port = 5432;
    me.system_identifier = "7312";
    me.since = "2026-01-01T00:00:00Z";
    etcd::HolderRecord later = me;
    later.since = "2026-01-02T00:00:00Z";
    EXPECT_TRUE(etcd::same_node(etcd::holder_value(later), me));  // its own lease from before a restart
    etcd::HolderRecord clone = me;
    clone.port = 5433;
    EXPECT_FALSE(etcd::same_node(etcd::holder_value(clone), me));  // a clone elsewhere is another node
    etcd::HolderRecord other = me;
    other.system_identifier = "9999";
    EXPECT_FALSE(etcd::same_node(etcd::holder_value(other), me));
    for (const char* bad : {"", "{", "[]", "{\"host\":1}", "null"}) {
        EXPECT_FALSE(etcd::same_node(bad, me)) << bad;
        EXPECT_FALSE(etcd::is_holder(bad)) << bad;
    }
    EXPECT_TRUE(etcd::is_holder(etcd::holder_value(clone)));
}

TEST(EtcdRules, Endpoints)
{
    std::vector<std::string> e;
    std::string why;
    EXPECT_TRUE(etcd::parse_endpoints("http://127.0.0.1:2379", &e, &why));
    EXPECT_EQ(e, std::vector<std::string>{"http://127.0.0.1:2379"});
    EXPECT_TRUE(etcd::parse_endpoints("http://a:1, https://b.example:2379/", &e, &why));
    EXPECT_EQ(e, (std::vector<std::string>{"http://a:1", "https://b.example:2379"}));
    for (const char* bad : {"", "127.0.0.1:2379", "http://a", "http://a:0", "http://a:70000", "http://a:1/v3",
                            "ftp://a:1", "http://a:1,,http://b:2", "http://:1", "http://a b:1"})
        EXPECT_FALSE(etcd::parse_endpoints(bad, &e, &why)) << bad;
    EXPECT_TRUE(etcd::valid_prefix("/shardid", &why));
    for (const char* bad : {"", "/", "shardid", "/shardid/", "/a b"})
        EXPECT_FALSE(etcd::valid_prefix(bad, &why)) << bad;
}

TEST(Etcd, Base64RoundTrip)
{
    for (const std::string& s :
         std::vector<std::string>{"", "a", "ab", "abc", "abcd", "/shardid/node/7", std::string("\0\xff\x10", 3)}) {
        std::string back;
        ASSERT_TRUE(etcd::base64_decode(etcd::base64_encode(s), &back));
        EXPECT_EQ(back, s);
    }
    std::string out;
    EXPECT_EQ(etcd::base64_encode("/x/mark/1"), "L3gvbWFyay8x");
    for (const char* bad : {"a", "abc", "ab=c", "a===", "!!!!", "L3gv\nbWFy"})
        EXPECT_FALSE(etcd::base64_decode(bad, &out)) << bad;
}

TEST(Etcd, DecodesWhatTheGatewaySends)
{
    std::string why;
    etcd::Grant g;
    ASSERT_TRUE(etcd::decode_grant(R"({"header":{"revision":"1"},"ID":"2324035566609714949","TTL":"10"})", &g, &why));
    EXPECT_EQ(g.id, "2324035566609714949");
    EXPECT_EQ(g.ttl_s, 10);

    int64_t ttl = 0;
    bool alive = false;
    ASSERT_TRUE(etcd::decode_keepalive(R"({"result":{"header":{},"ID":"5","TTL":"10"}})", &ttl, &alive, &why));
    EXPECT_TRUE(alive);
    EXPECT_EQ(ttl, 10);
    ASSERT_TRUE(etcd::decode_keepalive(R"({"result":{"header":{},"ID":"5"}})", &ttl, &alive, &why));
    EXPECT_FALSE(alive);  // etcd no longer knows the lease

    etcd::Txn t;
    ASSERT_TRUE(
        etcd::decode_txn(R"({"header":{},"succeeded":true,"responses":[{"response_put":{"header":{}}}]})", &t, &why));
    EXPECT_TRUE(t.succeeded);
    ASSERT_TRUE(etcd::decode_txn(
        R"({"header":{},"responses":[{"response_range":{"header":{},"kvs":[{"key":"L3gvbm9kZS8x","create_revision":"2","mod_revision":"3","version":"1","value":"aGk=","lease":"77"}],"count":"1"}}]})",
        &t, &why));
    EXPECT_FALSE(t.succeeded);  // etcd leaves "succeeded" out when false
    ASSERT_EQ(t.kvs.size(), 1u);
    EXPECT_EQ(t.kvs[0].key, "/x/node/1");
    EXPECT_EQ(t.kvs[0].value, "hi");
    EXPECT_EQ(t.kvs[0].lease, "77");
    EXPECT_EQ(t.kvs[0].mod_revision, 3);

    std::vector<etcd::KeyValue> kvs;
    ASSERT_TRUE(etcd::decode_range(R"({"header":{}})", &kvs, &why));
    EXPECT_TRUE(kvs.empty());
}

TEST(Etcd, DecodesTheKeysOfALease)
{
    // As etcd 3.4's gateway answers LeaseTimeToLive with keys.
    std::vector<std::string> keys;
    bool alive = false;
    std::string why;
    ASSERT_TRUE(
        etcd::decode_lease_keys(R"({"header":{"revision":"2"},"ID":"7587899185568010757","TTL":"29","grantedTTL":"30",)"
                                R"("keys":["YS9zaGFyZC8x"]})",
                                &keys, &alive, &why))
        << why;
    EXPECT_TRUE(alive);
    ASSERT_EQ(keys.size(), 1u);
    EXPECT_EQ(keys[0], "a/shard/1");
    ASSERT_TRUE(etcd::decode_lease_keys(R"({"header":{"revision":"2"},"ID":"12345","TTL":"-1"})", &keys, &alive, &why));
    EXPECT_FALSE(alive);
    EXPECT_TRUE(keys.empty());
    EXPECT_EQ(etcd::encode_lease_keys("12"), R"({"ID":"12","keys":true})");
    for (const char* bad : {R"({"ID":"1","TTL":"5"})", R"({"header":{},"TTL":"5","keys":"x"})",
                            R"({"header":{},"TTL":"5","keys":["%%%"]})", R"({"header":{},"TTL":"5","keys":[3]})"}) {
        EXPECT_FALSE(etcd::decode_lease_keys(bad, &keys, &alive, &why)) << bad;
        EXPECT_FALSE(why.empty());
    }
}

TEST(Etcd, RefusesWhatTheApiDoesNotPromise)
{
    const char* bodies[] = {
        "<html><body>502 Bad Gateway</body></html>",
        R"({"header":{},"ID":"23240355666)",  // truncated
        "",
        "[]",
        "null",
        R"({"error":"etcdserver: requested lease not found","code":5,"message":"etcdserver: requested lease not found"})",
        R"({"header":{},"ID":"abc","TTL":"10"})",
        R"({"header":{},"ID":"5","TTL":"-3"})",
        R"({"header":{},"succeeded":"yes"})",
        R"({"header":{},"kvs":[{"key":"!!!","value":"aGk="}]})",
        R"({"header":{},"kvs":{"key":"L3g="}})",
        R"({"header":{},"kvs":[{"key":"L3g=","mod_revision":"99999999999999999999999"}]})",
        R"({"result":"x"})",
    };
    for (const char* body : bodies) {
        std::string why;
        etcd::Grant g;
        etcd::Txn t;
        std::vector<etcd::KeyValue> kvs;
        int64_t ttl;
        bool alive;
        EXPECT_FALSE(etcd::decode_grant(body, &g, &why)) << body;
        EXPECT_FALSE(why.empty());
        const bool txn_ok = etcd::decode_txn(body, &t, &why);
        const bool range_ok = etcd::decode_range(body, &kvs, &why);
        EXPECT_FALSE(etcd::decode_keepalive(body, &ttl, &alive, &why)) << body;
        // Without etcd's header no answer is a transaction's or a range's;
        // a range with malformed kvs is refused.
        const bool header = std::string(body).find("\"header\"") != std::string::npos;
        EXPECT_FALSE(txn_ok && !header) << body;
        EXPECT_FALSE(range_ok && (!header || std::string(body).find("kvs") != std::string::npos)) << body;
    }
    std::string why;
    etcd::Txn t;
    EXPECT_FALSE(etcd::decode_txn(R"({"header":{},"responses":{}})", &t, &why));
    EXPECT_FALSE(
        etcd::decode_txn(R"({"header":{},"responses":[{"response_range":{"kvs":[{"key":"%%"}]}}]})", &t, &why));
    etcd::Grant g;
    EXPECT_FALSE(etcd::decode_grant("<html><body>502 Bad Gateway</body></html>", &g, &why));
    EXPECT_EQ(why, "the answer is not JSON: \"<html><body>502 Bad Gateway</body></html>\"");
}

TEST(Etcd, EncodesTransactions)
{
    const std::string body = etcd::encode_txn({{etcd::Compare::Target::create, "/p/node/1", 0, ""}},
                                              {{true, "/p/node/1", "v", "42"}}, {{false, "/p/node/1", "", ""}});
    EXPECT_EQ(body, R"({"compare":[{"create_revision":"0","key":"L3Avbm9kZS8x","result":"EQUAL","target":"CREATE"}],)"
                    R"("failure":[{"request_range":{"key":"L3Avbm9kZS8x"}}],)"
                    R"("success":[{"request_put":{"key":"L3Avbm9kZS8x","lease":"42","value":"dg=="}}]})");
}

// Values from etcd are checked against what shardid could have written, and
// the arithmetic on them never overflows: every function here is driven
// with int64's extremes.
TEST(EtcdRules, ArithmeticOnOutsideValuesSaturates)
{
    EXPECT_EQ(etcd::sat_add(INT64_MAX, 1), INT64_MAX);
    EXPECT_EQ(etcd::sat_add(INT64_MAX, INT64_MAX), INT64_MAX);
    EXPECT_EQ(etcd::sat_add(INT64_MIN, -1), INT64_MIN);
    EXPECT_EQ(etcd::sat_add(INT64_MIN, INT64_MAX), -1);
    EXPECT_EQ(etcd::sat_add(40, 2), 42);
    EXPECT_EQ(etcd::fence_deadline_ms(INT64_MAX, 10000), INT64_MAX);
    for (int64_t v : {int64_t(0), int64_t(1), INT64_MAX - 1, INT64_MAX}) {
        EXPECT_EQ(etcd::window_target(v, INT64_MAX, 10000, v, v, 0), INT64_MAX) << v;
        EXPECT_GE(etcd::window_target(1000, 5000, 10000, -1, v, 0), v) << v;
        EXPECT_TRUE(etcd::window_due(v, INT64_MAX, v, -1)) << v;
    }
}

TEST(EtcdRules, TheFenceUsesTheTtlAskedForAtMost)
{
    EXPECT_EQ(etcd::fenced_ttl_s(3, 3600), 3);  // a gateway granting more: fenced at what was asked
    EXPECT_EQ(etcd::fenced_ttl_s(10, 10), 10);
    EXPECT_EQ(etcd::fenced_ttl_s(10, 5), 5);  // less: fenced at what was granted
    EXPECT_EQ(etcd::fenced_ttl_s(10, INT64_MAX), 10);
    for (int64_t bad : {int64_t(0), int64_t(-1), INT64_MIN})
        EXPECT_EQ(etcd::fenced_ttl_s(10, bad), 0) << bad;
}

TEST(EtcdRules, MarksRoundTripAndRefuseWhatShardidNeverWrites)
{
    etcd::Mark m{1795609959750, 0x0123456789abcdefull, 10000, true}, back;
    EXPECT_EQ(etcd::mark_value(m), "1795609959750 0123456789abcdef 10000 released");
    ASSERT_TRUE(etcd::parse_mark(etcd::mark_value(m), &back));
    EXPECT_EQ(back.end_ms, m.end_ms);
    EXPECT_EQ(back.token, m.token);
    EXPECT_EQ(back.ttl_ms, m.ttl_ms);
    EXPECT_TRUE(back.released);
    m.released = false;
    m.end_ms = INT64_MAX;
    ASSERT_TRUE(etcd::parse_mark(etcd::mark_value(m), &back));
    EXPECT_EQ(back.end_ms, INT64_MAX);
    EXPECT_FALSE(back.released);
    // A plain number: shardid 1.2's format, or a key set by hand.
    ASSERT_TRUE(etcd::parse_mark("1795609959750", &back));
    EXPECT_EQ(back.end_ms, 1795609959750);
    EXPECT_EQ(back.token, 0u);
    EXPECT_EQ(back.ttl_ms, 0);
    EXPECT_FALSE(back.released);
    for (const char* bad :
         {"", "banana", "-1", "9223372036854775808", "1 0123456789abcdef 10000", "1 0123456789abcdef 10000 held x",
          "1 0123456789ABCDEF 10000 held", "1 0000000000000000 10000 held", "1 0123456789abcdef 1000 held",
          "1 0123456789abcdef 300001 held", "1 0123456789abcde 10000 held", "1 0123456789abcdef 10000 gone",
          "1  0123456789abcdef 10000 held", "-1 0123456789abcdef 10000 held"})
        EXPECT_FALSE(etcd::parse_mark(bad, &back)) << bad;
}

TEST(EtcdRules, MarksBeyondAHoldersReachAreRefused)
{
    std::string why;
    const int64_t now = 1795609959750, lead = 10000, ttl = 10000;
    EXPECT_TRUE(etcd::mark_plausible(0, now, lead, ttl, &why));
    EXPECT_TRUE(etcd::mark_plausible(now + ttl, now, lead, ttl, &why));
    EXPECT_TRUE(etcd::mark_plausible(now + 2 * lead + ttl + etcd::window_span_ms, now, lead, ttl, &why));
    EXPECT_FALSE(etcd::mark_plausible(now + 2 * lead + ttl + etcd::window_span_ms + 1, now, lead, ttl, &why));
    EXPECT_FALSE(etcd::mark_plausible(4102444800000, now, lead, ttl, &why));  // the year 2100
    EXPECT_NE(why.find("ahead of this node's clock"), std::string::npos) << why;
    EXPECT_FALSE(etcd::mark_plausible(INT64_MAX, now, lead, ttl, &why));
    EXPECT_TRUE(
        etcd::mark_plausible(INT64_MAX, now, INT64_MAX / 2, INT64_MAX / 2, &why));  // the reach saturates, never wraps
    EXPECT_TRUE(etcd::mark_plausible(INT64_MAX, INT64_MAX, 0, 0, &why));
}

TEST(EtcdRules, ATakeoverWaitsOutThePreviousHoldersFence)
{
    etcd::Mark held{1000, 7, 10000, false}, released{1000, 7, 10000, true}, legacy{1000, 0, 0, false};
    EXPECT_EQ(etcd::takeover_wait_ms(false, {}, false, 3000), 0);        // a new id
    EXPECT_EQ(etcd::takeover_wait_ms(true, held, true, 3000), 0);        // its own mark
    EXPECT_EQ(etcd::takeover_wait_ms(true, released, false, 3000), 0);   // a clean release
    EXPECT_EQ(etcd::takeover_wait_ms(true, held, false, 3000), 8000);    // the previous TTL - margin
    EXPECT_EQ(etcd::takeover_wait_ms(true, legacy, false, 3000), 2000);  // unknown TTL: this node's
    // Never shorter than the fence the previous holder could still have.
    for (int64_t ttl = etcd::min_lease_ttl_s * 1000; ttl <= etcd::max_lease_ttl_s * 1000; ttl += 500) {
        held.ttl_ms = ttl;
        EXPECT_GE(etcd::takeover_wait_ms(true, held, false, 2000), etcd::fence_deadline_ms(0, ttl)) << ttl;
    }
}

TEST(EtcdRules, CountersBeyondWhatShardidWroteAreRefused)
{
    std::string why;
    int64_t next = 0;
    // Written by takes only: the value is the number of writes.
    ASSERT_TRUE(etcd::counter_next(5, 5, 0, -1, 99999, &next, &why));
    EXPECT_EQ(next, 6);
    ASSERT_TRUE(etcd::counter_next(0, 0, 0, -1, 99999, &next, &why));  // absent
    EXPECT_EQ(next, 1);
    // Above this node's floor.
    ASSERT_TRUE(etcd::counter_next(5, 5, 0, 40, 99999, &next, &why));
    EXPECT_EQ(next, 41);
    // Raised to a node's floor once (etcd lost its data): the raise explains it.
    ASSERT_TRUE(etcd::counter_next(1003, 4, 1000, -1, 99999, &next, &why));
    EXPECT_EQ(next, 1004);
    // Edited by hand: refused, the value unused.
    EXPECT_FALSE(etcd::counter_next(99998, 2, 0, -1, 99999, &next, &why));
    EXPECT_NE(why.find("99998 after 2 writes"), std::string::npos) << why;
    EXPECT_FALSE(etcd::counter_next(INT64_MAX, 3, 0, -1, 99999, &next, &why));
    EXPECT_FALSE(etcd::counter_next(INT64_MAX, INT64_MAX - 1, 0, -1, INT64_MAX, &next, &why));
    EXPECT_FALSE(etcd::counter_next(5, 5, 100000, -1, 99999, &next, &why));  // a raise beyond the field
    EXPECT_FALSE(etcd::counter_next(-1, 5, 0, -1, 99999, &next, &why));
    // Nothing left: max + 1, which the caller refuses without writing it.
    ASSERT_TRUE(etcd::counter_next(99999, 99999, 0, -1, 99999, &next, &why));
    EXPECT_EQ(next, 100000);
    ASSERT_TRUE(etcd::counter_next(INT64_MAX, INT64_MAX, 0, -1, INT64_MAX, &next, &why));
    EXPECT_EQ(next, INT64_MAX);  // saturated, never wrapped to a negative value
    ASSERT_TRUE(etcd::counter_next(5, INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX, &next, &why));
    EXPECT_EQ(next, INT64_MAX);
}

TEST(EtcdRules, EndpointsWithCredentialsAreRefusedWithoutQuotingThem)
{
    std::vector<std::string> e;
    std::string why;
    EXPECT_FALSE(etcd::parse_endpoints("http://a:1,http://root:s3cret@b:2379", &e, &why));
    EXPECT_NE(why.find("endpoint 2 has credentials"), std::string::npos) << why;
    EXPECT_EQ(why.find("s3cret"), std::string::npos) << why;
    EXPECT_EQ(why.find("root"), std::string::npos) << why;
    EXPECT_FALSE(etcd::parse_endpoints("https://user@b:2379", &e, &why));
}
