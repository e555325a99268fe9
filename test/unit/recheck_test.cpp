// The re-check of held shard keys (src/core/etcd/recheck.hpp), the watch
// stream's messages (src/core/etcd/wire.hpp) and etcd's history under
// a prefix (src/core/etcd/rules.hpp): what the holder does with each
// answer, fed by hand.
#include <gtest/gtest.h>

#include "core/etcd/continuity.hpp"
#include "core/etcd/rules.hpp"
#include "core/etcd/wire.hpp"
#include "core/etcd/recheck.hpp"

using namespace shardid;

namespace {

std::string b64(const std::string& s) { return etcd::base64_encode(s); }

// A watch message of events "PUT key rev [lease]" / "DELETE key rev".
std::string events(uint64_t cluster, const std::vector<std::tuple<bool, std::string, int64_t, int64_t>>& list)
{
    std::string e;
    for (const auto& [del, key, rev, lease] : list) {
        if (!e.empty())
            e += ",";
        e += del ? R"({"type":"DELETE","kv":{"key":")" + b64(key) + R"(","mod_revision":")" + std::to_string(rev) +
                       R"("}})"
                 : R"({"kv":{"key":")" + b64(key) + R"(","create_revision":")" + std::to_string(rev) +
                       R"(","mod_revision":")" + std::to_string(rev) + R"(","version":"1","value":")" + b64("v") +
                       R"(","lease":")" + std::to_string(lease) + R"("}})";
    }
    return R"({"result":{"header":{"cluster_id":")" + std::to_string(cluster) + R"(","revision":"99"},"events":[)" + e +
           "]}}";
}

etcd::WatchMessage decode(const std::string& line)
{
    etcd::WatchMessage m;
    std::string why;
    EXPECT_TRUE(etcd::decode_watch_message(line, &m, &why)) << why << " " << line;
    return m;
}

}  // namespace

// The gateway's stream, as etcd 3.4 sends it (seen on etcd 3.4.23): the
// creation, events (a PUT has no type), a cancellation for a compacted
// start; an error object; anything else is refused.
TEST(Watch, DecodesTheStreamEtcdSends)
{
    etcd::WatchMessage m = decode(
        R"({"result":{"header":{"cluster_id":"324952591200643719","member_id":"3319814642761637952","revision":"4","raft_term":"2"},"created":true}})");
    EXPECT_TRUE(m.created);
    EXPECT_EQ(m.header.cluster_id, 324952591200643719u);
    EXPECT_EQ(m.header.revision, 4);
    m = decode(
        R"({"result":{"header":{"cluster_id":"18446744073709551615","revision":"4"},"events":[{"kv":{"key":"L3Avc2hhcmQvYS8x","create_revision":"2","mod_revision":"2","version":"1","value":"aGVsbG8=","lease":"7"}},{"type":"DELETE","kv":{"key":"L3Avc2hhcmQvYS8x","mod_revision":"4"}}]}})");
    EXPECT_EQ(m.header.cluster_id, UINT64_MAX);
    ASSERT_EQ(m.events.size(), 2u);
    EXPECT_FALSE(m.events[0].deleted);
    EXPECT_EQ(m.events[0].kv.key, "/p/shard/a/1");
    EXPECT_EQ(m.events[0].kv.lease, "7");
    EXPECT_TRUE(m.events[1].deleted);
    EXPECT_EQ(m.events[1].kv.mod_revision, 4);
    m = decode(R"({"result":{"header":{"cluster_id":"3","raft_term":"2"},"canceled":true,"compact_revision":"6"}})");
    EXPECT_TRUE(m.canceled);
    EXPECT_EQ(m.compact_revision, 6);
    std::string why;
    for (const char* bad :
         {R"({"error":{"grpc_code":16,"http_code":401,"message":"etcdserver: invalid auth token"}})",
          "<html>502</html>", R"({"result":{"events":[{"type":"EXPIRE","kv":{"key":"YQ==","mod_revision":"3"}}]}})",
          R"({"result":{"events":[{"kv":{"key":"YQ=="}}]}})", R"({"result":{"events":{}}})",
          R"({"result":{"header":{"revision":"-4"}}})", R"({"result":{"header":{"cluster_id":"x"}}})", "[]",
          R"({"result":{"compact_revision":"a"}})", R"({"result":{"header":{"cluster_id":"18446744073709551616"}}})"})
        EXPECT_FALSE(etcd::decode_watch_message(bad, &m, &why)) << bad;
    EXPECT_FALSE(etcd::decode_watch_message(R"({"error":{"grpc_code":16,"message":"etcdserver: invalid auth token"}})",
                                            &m, &why));
    EXPECT_NE(why.find("invalid auth token"), std::string::npos) << why;
}

// A held key deleted or rewritten after this node wrote it is lost; a
// change at or before its own write is history the claim came after; the
// check is done once the ping's revision has come.
TEST(Recheck, FindsAHeldKeyDeletedOrRewritten)
{
    etcd::HeldKeys k;
    k.reset(7, 10);
    k.put("/p/shard/s/5", 3, 12);
    k.put("/p/shard/s/6", 4, 12);
    k.put("/p/shard/s/7", 5, 14);
    std::string why;
    ASSERT_TRUE(k.begin(7, 20, &why)) << why;
    std::vector<int> lost;
    // Before the barrier: more to come.
    EXPECT_EQ(k.feed(decode(events(7, {{false, "/p/shard/s/5", 12, 1}, {true, "/p/shard/s/9", 13, 0}})), &lost, &why),
              etcd::HeldKeys::Step::more);
    EXPECT_TRUE(lost.empty());
    // Deleted by hand (15), rewritten without the lease (16), and the ping (20).
    EXPECT_EQ(
        k.feed(decode(events(
                   7, {{true, "/p/shard/s/5", 15, 0}, {false, "/p/shard/s/7", 16, 0}, {false, "/p/shard/~/1", 20, 1}})),
               &lost, &why),
        etcd::HeldKeys::Step::done);
    EXPECT_EQ(lost, (std::vector<int>{3, 5}));
    EXPECT_EQ(k.checked(), 20);
    EXPECT_EQ(k.size(), 1u);
    EXPECT_EQ(k.index_of("/p/shard/s/6"), 4);
    // The next check starts after the barrier.
    ASSERT_TRUE(k.begin(7, 25, &why));
    lost.clear();
    EXPECT_EQ(k.feed(decode(events(7, {{false, "/p/shard/~/1", 25, 1}})), &lost, &why), etcd::HeldKeys::Step::done);
    EXPECT_TRUE(lost.empty());
}

// What the check cannot trust fails it: another cluster, revisions that go
// back, events out of order, a canceled watch; a compacted start asks for
// a listing instead.
TEST(Recheck, RefusesWhatNoEtcdOfTheClusterSends)
{
    etcd::HeldKeys k;
    k.reset(7, 10);
    k.put("/p/shard/s/5", 3, 12);
    std::string why;
    std::vector<int> lost;
    EXPECT_FALSE(k.begin(8, 20, &why));  // etcd replaced by a new cluster
    EXPECT_NE(why.find("replaced"), std::string::npos) << why;
    EXPECT_FALSE(k.begin(7, 9, &why));  // a ping at or before what was checked
    ASSERT_TRUE(k.begin(7, 20, &why));
    EXPECT_EQ(k.feed(decode(events(8, {{false, "/p/shard/~/1", 20, 1}})), &lost, &why), etcd::HeldKeys::Step::failed);
    EXPECT_EQ(k.feed(decode(events(7, {{false, "/p/shard/a", 15, 1}, {false, "/p/shard/b", 14, 1}})), &lost, &why),
              etcd::HeldKeys::Step::failed);
    EXPECT_EQ(k.feed(decode(events(7, {{false, "/p/shard/a", 9, 1}})), &lost, &why), etcd::HeldKeys::Step::failed);
    EXPECT_EQ(k.feed(decode(R"({"result":{"header":{"cluster_id":"7"},"canceled":true,"compact_revision":"18"}})"),
                     &lost, &why),
              etcd::HeldKeys::Step::compacted);
    EXPECT_EQ(k.feed(decode(R"({"result":{"header":{"cluster_id":"7"},"canceled":true}})"), &lost, &why),
              etcd::HeldKeys::Step::failed);
    EXPECT_TRUE(lost.empty());
    EXPECT_EQ(k.checked(), 10);  // nothing confirmed
}

// The listing that replaces a compacted watch: a held key is kept only as
// this node wrote it, under its lease.
TEST(Recheck, AListingFindsWhatTheWatchWould)
{
    etcd::HeldKeys k;
    k.reset(7, 10);
    k.put("/p/shard/s/1", 1, 12);
    k.put("/p/shard/s/2", 2, 12);
    k.put("/p/shard/s/3", 3, 13);
    k.put("/p/shard/s/4", 4, 13);
    std::vector<etcd::KeyValue> listed(3);
    listed[0].key = "/p/shard/s/1", listed[0].mod_revision = 12, listed[0].lease = "55";
    listed[1].key = "/p/shard/s/3", listed[1].mod_revision = 17, listed[1].lease = "55";  // rewritten
    listed[2].key = "/p/shard/s/4", listed[2].mod_revision = 13, listed[2].lease = "56";  // another lease
    std::vector<int> lost;
    k.full(listed, "55", 40, &lost);
    std::sort(lost.begin(), lost.end());
    EXPECT_EQ(lost, (std::vector<int>{2, 3, 4}));
    EXPECT_EQ(k.size(), 1u);
    EXPECT_EQ(k.checked(), 40);
}

// The node marks a batch of claims reads at once are found by their key
// (a claim above a holder that did not release needs its node mark).
TEST(History, MarkKeysNameTheirIds)
{
    EXPECT_EQ(etcd::mark_id_of_key("/p", "/p/mark/7"), 7);
    EXPECT_EQ(etcd::mark_id_of_key("/p", "/p/node/7"), -1);
    EXPECT_EQ(etcd::node_id_of_key("/p", "/p/node/7"), 7);
    EXPECT_EQ(etcd::mark_id_of_key("/p", "/p/mark/x"), -1);
    EXPECT_EQ(etcd::mark_id_of_key("/p", "/q/mark/1"), -1);
}

// The keys of the watched range shardid writes: pings and claims; anything
// else is named when the watch cannot be read.
TEST(HeldKeys, KeysShardidWrites)
{
    EXPECT_TRUE(etcd::shardid_key("/p", "/p/shard/~/7587888420312957957"));
    EXPECT_TRUE(etcd::shardid_key("/p", "/p/shard/e1314220021721u1t40s13q10/8191"));
    EXPECT_TRUE(etcd::shardid_key("/p", "/p/shard/e0u1000t25s16q22wf1/3"));
    EXPECT_TRUE(etcd::shardid_key("/p", "/p/shard/e-86400000u60000t32s10q20/5"));
    for (const char* k :
         {"/p/shard/zz-junk/0001", "/p/shard/~/", "/p/shard/~/12x", "/p/shard/e1u1t1s1q1", "/p/shard/e1u1t1s1q1/",
          "/p/shard/e1u1t1s1q1/5/6", "/p/shard/e1u1t1s1/5", "/p/shard/e1u1t1s1q1x/5", "/p/shardmark/e1u1t1s1q1/5",
          "/q/shard/e1u1t1s1q1/5", "/p/shard/e1u1t1s1q1f/5"})
        EXPECT_FALSE(etcd::shardid_key("/p", k)) << k;
}
