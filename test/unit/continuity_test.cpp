// etcd's history under a prefix and how a node tells that etcd went back on
// it (src/core/etcd/continuity.hpp): the history's format and the fleet's
// TTL, keys older than the history, revisions, and the witness every write
// under the lease carries, fed by hand.
#include <gtest/gtest.h>

#include "core/etcd/continuity.hpp"
#include "core/etcd/recheck.hpp"

using namespace shardid;

TEST(History, RoundTripsAndIsChecked)
{
    const etcd::History h{0x0123456789abcdefull, 1795000000000, 60000};
    etcd::History back;
    ASSERT_TRUE(etcd::parse_history(etcd::history_value(h), &back));
    EXPECT_EQ(back.token, h.token);
    EXPECT_EQ(back.settled_ms, h.settled_ms);
    EXPECT_EQ(back.ttl_ms, h.ttl_ms);
    for (const char* bad :
         {"", "1795000000000", "0123456789abcdef", "0123456789abcdef 5", "0000000000000000 5 3000",
          "0123456789ABCDEF 5 3000", "0123456789abcdef -5 3000", "0123456789abcdef 5 3000 6", "0123456789abcde 5 3000",
          "0123456789abcdef  5 3000", "0123456789abcdef 5 1999", "0123456789abcdef 5 300001",
          "0123456789abcdef 5 -3000", "0123456789abcdef 5 9223372036854775808"})
        EXPECT_FALSE(etcd::parse_history(bad, &back)) << bad;
    std::string why;
    const int64_t now = 1795000000000;
    EXPECT_TRUE(etcd::history_plausible(now + etcd::settle_ms(300000), now, 0, &why));
    EXPECT_FALSE(etcd::history_plausible(now + 3600000, now, 10000, &why));
    EXPECT_NE(why.find("s after this node's clock"), std::string::npos) << why;
    EXPECT_FALSE(etcd::history_plausible(INT64_MAX, now, 10000, &why));
    EXPECT_TRUE(etcd::history_plausible(INT64_MAX, INT64_MAX, INT64_MAX, &why));  // saturates, never wraps
    EXPECT_EQ(etcd::settle_ms(10000), 12000);
    EXPECT_EQ(etcd::settle_ms(3000), 4000);
}

// The settling outlasts every fence a node of the fleet may still run
// under, for every TTL a node accepts: a node of TTL t stops at its fence,
// t - margin after its last renewal (before the loss), or at its next
// renewal, t/5 after the loss at the latest; the settling starts after the
// loss and lasts settle_ms() of the longest TTL the fleet knows.
TEST(History, SettlingOutlastsEveryFence)
{
    for (int64_t longest = etcd::min_lease_ttl_s * 1000; longest <= etcd::max_lease_ttl_s * 1000; longest += 1000) {
        const int64_t settle = etcd::settle_ms(etcd::fleet_ttl_ms(etcd::min_lease_ttl_s * 1000, 0, longest));
        for (int64_t ttl = etcd::min_lease_ttl_s * 1000; ttl <= longest; ttl += 1000) {
            EXPECT_GT(settle, etcd::fence_deadline_ms(0, ttl)) << "TTL " << ttl << ", longest " << longest;
            EXPECT_GT(settle, etcd::keepalive_every_ms(ttl) + etcd::request_timeout_ms(ttl)) << ttl;
        }
    }
    // The TTL a node settles for: the longest it knows, within what a node
    // accepts.
    EXPECT_EQ(etcd::fleet_ttl_ms(3000, 0, 0), 3000);
    EXPECT_EQ(etcd::fleet_ttl_ms(3000, 60000, 10000), 60000);
    EXPECT_EQ(etcd::fleet_ttl_ms(3000, 0, 300000), 300000);
    EXPECT_EQ(etcd::fleet_ttl_ms(3000, INT64_MAX, 0), 300000);
    EXPECT_EQ(etcd::fleet_ttl_ms(0, 0, 0), 2000);
}

// A history read with a shorter TTL than the node knows is raised; while
// it settles, its settling lasts that TTL's from now.
TEST(History, ExtendedToTheFleetsTTL)
{
    const int64_t now = 1795000000000;
    const etcd::History h{7, now + 4000, 3000};
    etcd::History out;
    EXPECT_FALSE(etcd::history_extended(h, 3000, true, now, &out));
    EXPECT_FALSE(etcd::history_extended(h, 2000, true, now, &out));
    ASSERT_TRUE(etcd::history_extended(h, 60000, true, now + 1000, &out));
    EXPECT_EQ(out.token, 7u);
    EXPECT_EQ(out.ttl_ms, 60000);
    EXPECT_EQ(out.settled_ms, now + 1000 + 72000);
    ASSERT_TRUE(etcd::history_extended(h, 60000, false, now + 1000, &out));
    EXPECT_EQ(out.settled_ms, now + 4000);  // settled already: the TTL only
    ASSERT_TRUE(etcd::history_extended(h, 60000, true, INT64_MAX, &out));
    EXPECT_EQ(out.settled_ms, INT64_MAX);  // saturates
}

TEST(History, KeysBeforeTheHistory)
{
    EXPECT_TRUE(etcd::before_history(10, 11));
    EXPECT_FALSE(etcd::before_history(11, 11));
    EXPECT_FALSE(etcd::before_history(12, 11));
    EXPECT_FALSE(etcd::before_history(0, 11));  // absent
    EXPECT_FALSE(etcd::before_history(10, 0));  // no history known
}

namespace {
etcd::Header header(uint64_t cluster, int64_t revision)
{
    etcd::Header h;
    h.cluster_id = cluster;
    h.revision = revision;
    return h;
}
}  // namespace

// Revisions never go back, and one cluster answers.
TEST(Revisions, WentBackOrAnotherCluster)
{
    etcd::Revisions r;
    std::string why;
    EXPECT_TRUE(r.see(header(5, 100), &why));
    EXPECT_TRUE(r.see(header(5, 100), &why));  // a read: the same revision
    EXPECT_TRUE(r.see(header(5, 140), &why));
    EXPECT_TRUE(r.see(header(0, 0), &why));  // no header: says nothing
    EXPECT_FALSE(r.see(header(5, 139), &why));
    EXPECT_NE(why.find("revision 139, after answering at revision 140"), std::string::npos) << why;
    EXPECT_NE(why.find("older snapshot"), std::string::npos) << why;
    EXPECT_FALSE(r.see(header(6, 500), &why));
    EXPECT_NE(why.find("cluster 6"), std::string::npos) << why;
    EXPECT_EQ(r.highest(), 140);
    r.reset();
    EXPECT_TRUE(r.see(header(6, 3), &why));
    EXPECT_EQ(r.cluster(), 6u);
}

namespace {
etcd::KeyValue ping(const etcd::Witness& w, int64_t revision, const std::string& value)
{
    etcd::KeyValue kv;
    kv.key = w.key();
    kv.mod_revision = revision;
    kv.value = value;
    kv.lease = w.lease();
    return kv;
}
}  // namespace

// Every write under the lease compares the ping where the last write left
// it and moves it.
TEST(Witness, ChainOfWrites)
{
    etcd::Witness w;
    w.reset("/p", "77", 0xabcull);
    EXPECT_EQ(w.key(), etcd::ping_key("/p", "77"));
    // No write yet: the ping must not exist.
    etcd::Compare c = w.compare();
    EXPECT_EQ(c.target, etcd::Compare::Target::create);
    EXPECT_EQ(c.revision, 0);
    const etcd::Op p1 = w.put();
    EXPECT_TRUE(p1.put);
    EXPECT_EQ(p1.lease, "77");
    w.committed(40);
    c = w.compare();
    EXPECT_EQ(c.target, etcd::Compare::Target::mod);
    EXPECT_EQ(c.revision, 40);
    const etcd::Op p2 = w.put();
    EXPECT_NE(p1.value, p2.value);  // each write's value its own
    std::string why;
    // Another compare of the write failed: the ping is where it was.
    EXPECT_EQ(w.judge(true, ping(w, 40, p1.value), &why), etcd::Witness::Verdict::same);
    // etcd went back: the ping is older, rewritten, or gone.
    EXPECT_EQ(w.judge(true, ping(w, 31, p1.value), &why), etcd::Witness::Verdict::went_back);
    EXPECT_NE(why.find("at revision 31, where this node's last write left it at revision 40"), std::string::npos)
        << why;
    EXPECT_EQ(w.judge(true, ping(w, 40, "someone else"), &why), etcd::Witness::Verdict::went_back);
    EXPECT_EQ(w.judge(false, etcd::KeyValue{}, &why), etcd::Witness::Verdict::went_back);
    EXPECT_NE(why.find("no longer holds"), std::string::npos) << why;
    // A new lease: the ping must be absent; one there already is not ours.
    w.reset("/p", "78", 1);
    EXPECT_EQ(w.judge(false, etcd::KeyValue{}, &why), etcd::Witness::Verdict::same);
    EXPECT_EQ(w.judge(true, ping(w, 9, "x"), &why), etcd::Witness::Verdict::went_back);
}

// A write whose answer was lost may have committed: found so, the chain
// moves to it (once); a later write's value is never taken for it.
TEST(Witness, LostAnswer)
{
    etcd::Witness w;
    w.reset("/p", "77", 1);
    w.put();
    w.committed(40);
    const etcd::Op lost = w.put();
    w.lost();
    const etcd::Op next = w.put();  // the next write compares revision 40 still
    EXPECT_EQ(w.compare().revision, 40);
    std::string why;
    EXPECT_EQ(w.judge(true, ping(w, 52, next.value), &why), etcd::Witness::Verdict::went_back);
    EXPECT_EQ(w.judge(true, ping(w, 52, lost.value), &why), etcd::Witness::Verdict::adopted);
    EXPECT_EQ(w.revision(), 52);
    EXPECT_EQ(w.compare().revision, 52);
    EXPECT_EQ(w.judge(true, ping(w, 52, lost.value), &why), etcd::Witness::Verdict::same);
    // Not adopted twice, nor below the chain.
    EXPECT_EQ(w.judge(true, ping(w, 60, lost.value), &why), etcd::Witness::Verdict::went_back);
    etcd::Witness v;
    v.reset("/p", "79", 2);
    v.put();
    v.committed(40);
    const etcd::Op l2 = v.put();
    v.lost();
    EXPECT_EQ(v.judge(true, ping(v, 39, l2.value), &why), etcd::Witness::Verdict::went_back);
}

// After etcd no longer knows the lease: a read of the ping at the last
// write's revision.
TEST(Witness, KeptAfterTheLease)
{
    etcd::Witness w;
    w.reset("/p", "77", 1);
    std::string why;
    EXPECT_EQ(w.kept(false, {}, "", &why), etcd::Witness::Kept::kept);  // nothing written: nothing lost
    const etcd::Op p = w.put();
    w.committed(40);
    EXPECT_EQ(w.kept(true, {ping(w, 40, p.value)}, "", &why), etcd::Witness::Kept::kept);
    EXPECT_EQ(w.kept(true, {}, "", &why), etcd::Witness::Kept::lost);
    EXPECT_EQ(w.kept(true, {ping(w, 38, p.value)}, "", &why), etcd::Witness::Kept::lost);
    EXPECT_EQ(w.kept(true, {ping(w, 40, "other")}, "", &why), etcd::Witness::Kept::lost);
    EXPECT_EQ(
        w.kept(false, {}, "etcd refused the request: etcdserver: mvcc: required revision is a future revision", &why),
        etcd::Witness::Kept::lost);
    EXPECT_NE(why.find("have not reached revision 40"), std::string::npos) << why;
    EXPECT_EQ(
        w.kept(false, {}, "etcd refused the request: etcdserver: mvcc: required revision has been compacted", &why),
        etcd::Witness::Kept::unknown);
    EXPECT_NE(why.find("compacted"), std::string::npos) << why;
    EXPECT_EQ(w.kept(false, {}, "", &why), etcd::Witness::Kept::unknown);
}
