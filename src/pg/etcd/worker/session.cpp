// The coordinator worker's session with etcd (src/pg/etcd/worker/session.hpp):
// the lease every job's requests are made under, kept and fenced; the
// witness: every write under the lease goes through txn(), which compares
// this node's ping where its last write left it and moves it, every
// answer's revision and cluster are seen, and a lease etcd no longer knows
// is judged by a read of the ping at the last write's revision (the rules:
// src/core/etcd/continuity.hpp; a history etcd went back on is the holder's
// to handle: src/pg/etcd/worker/holder.cpp); and the reports of what failed.
#include <algorithm>
#include <cstring>
#include <ctime>
#include <string>
#include <unistd.h>

#include "pg/etcd/worker/session.hpp"
#include "pg/base/fence_clock.hpp"
#include "pg/base/settings.hpp"
#include "pg/etcd/shared.hpp"

extern "C" {
#include "access/xlog.h"
#include "port.h"
#include "postmaster/postmaster.h"
#include "storage/spin.h"
}

namespace shardid::pg {

namespace {

std::string iso_now()
{
    const time_t t = time(nullptr);
    tm utc;
    gmtime_r(&t, &utc);
    char buf[32];
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
    return buf;
}

const char* const condition_words[] = {
    "etcd unreachable",     "etcd refused this node's credentials", "the node id refused",
    "a key edited by hand", "the shard values held unconfirmed",    "etcd's history gone back (the new history made)"};
static_assert(std::size(condition_words) == size_t(Condition::count), "a word for every condition");

}  // namespace

etcd::HolderRecord this_node()
{
    etcd::HolderRecord me;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    me.host = host;
    me.port = PostPortNumber;
    me.system_identifier = std::to_string(GetSystemIdentifier());
    me.since = iso_now();
    return me;
}

uint64_t new_token()
{
    uint64_t t = 0;
    while (t == 0)
        if (!pg_strong_random(&t, sizeof t))
            t = uint64_t(fence_clock_ms()) * 0x9e3779b97f4a7c15ull ^ uint64_t(getpid());
    return t & uint64_t(INT64_MAX);  // kept in the node state as a non-negative int64
}

// Grants or renews the lease; false when there is no live one.
bool Session::keep_lease()
{
    std::string why;
    const int64_t sent = fence_clock_ms();
    if (lease_.empty()) {
        etcd::Grant g;
        if (!client_.grant(settings_.lease_ttl_s, &g, &why)) {
            failed("could not get a lease", why);
            return false;
        }
        answered();
        // Fenced at the TTL asked for at most: a grant of more (a broken or
        // hostile gateway) must not keep this node issuing after etcd may
        // have expired the lease.
        const int64_t ttl_s = etcd::fenced_ttl_s(settings_.lease_ttl_s, g.ttl_s);
        if (g.ttl_s > settings_.lease_ttl_s)
            ereport(LOG, (errmsg("shardid coordinator: etcd granted lease %s a TTL of %lld s for %d s asked; the "
                                 "node fences with %d s",
                                 g.id.c_str(), (long long)g.ttl_s, settings_.lease_ttl_s, settings_.lease_ttl_s)));
        if (!observe(g.header))
            return false;  // etcd went back, or another cluster answers: the history first
        lease_ = g.id;
        new_witness();
        lease_ttl_ms_ = ttl_s * 1000;
        fence_ms_ = etcd::fence_deadline_ms(sent, lease_ttl_ms_);
        last_sent_ms_ = sent;
        events_.lease_granted(g.header);
        publish_lease();
        return true;
    }
    if (sent - last_sent_ms_ >= etcd::keepalive_every_ms(lease_ttl_ms_)) {
        int64_t ttl = 0;
        bool alive = false;
        if (!client_.keepalive(lease_, &ttl, &alive, &why)) {
            failed("could not renew lease " + lease_, why);
        } else if (!alive) {
            answered();
            // Expired, or gone with a history that went back: the witness
            // tells (asked again next round when etcd does not answer).
            lease_vanished();
            return false;
        } else {
            answered();
            if (etcd::renewal_late(fence_ms_ - fence_clock_ms(), lease_ttl_ms_))
                events_.renewal_late();
            fence_ms_ = etcd::fence_deadline_ms(sent, lease_ttl_ms_);
            last_sent_ms_ = sent;
            publish_lease();
            events_.lease_renewed(fence_ms_);
        }
    }
    if (fence_clock_ms() >= fence_ms_) {
        events_.fence_passed("lease " + lease_ + " could not be renewed before its fence: IDs stopped");
        // It may have expired in etcd meanwhile: renew it (etcd says whether
        // it lives) or take a new one.
        return false;
    }
    return true;
}

void Session::new_witness() { witness_.reset(prefix_, lease_, lease_.empty() ? 0 : new_token()); }

bool Session::observe(const etcd::Header& header)
{
    std::string why;
    if (revisions_.see(header, &why))
        return true;
    events_.went_back(why);
    return false;
}

// A transaction: under the lease (a write that puts, or `ping`: the
// renewal's ping, the witness's write alone), witnessed: it also
// compares the ping where this node's last write left it and moves it, and
// its failure branch reads the ping (taken out of out->kvs again). False
// (why) when etcd did not answer, answered with an error, or went back.
bool Session::txn(std::vector<etcd::Compare> compare, std::vector<etcd::Op> success, std::vector<etcd::Op> failure,
                  etcd::Txn* out, std::string* why, bool ping)
{
    history_failure_ = false;
    const bool writes =
        ping || std::any_of(success.begin(), success.end(), [](const etcd::Op& op) { return op.put || op.del; });
    const bool witnessed = writes && !lease_.empty() && witness_.lease() == lease_;
    if (witnessed) {
        compare.push_back(witness_.compare());
        failure.push_back(witness_.read());
    }
    for (int attempt = 0;; attempt++) {
        std::vector<etcd::Op> ops = success;
        if (witnessed)
            ops.push_back(witness_.put());
        if (!client_.txn(etcd::encode_txn(compare, ops, failure), out, why)) {
            if (witnessed && client_.last_failure() == etcd::Failure::transport)
                witness_.lost();  // sent, perhaps, and committed: judged at the next write
            return false;
        }
        if (!observe(out->header)) {
            history_failure_ = true;
            *why = "etcd's history went back";
            return false;
        }
        if (!witnessed)
            return true;
        if (out->succeeded) {
            witness_.committed(out->header.revision);
            return true;
        }
        etcd::KeyValue ping;
        bool found = false;
        for (auto it = out->kvs.begin(); it != out->kvs.end();)
            if (it->key == witness_.key())
                ping = *it, found = true, it = out->kvs.erase(it);
            else
                ++it;
        std::string w;
        switch (witness_.judge(found, ping, &w)) {
        case etcd::Witness::Verdict::same: return true;  // another compare failed
        case etcd::Witness::Verdict::adopted:
            if (attempt == 0) {
                // Only the witness failed: a write whose answer was lost had
                // committed. The chain moves to it; the write is tried again.
                compare.back() = witness_.compare();
                continue;
            }
            return true;
        case etcd::Witness::Verdict::went_back: break;
        }
        events_.went_back(w);
        history_failure_ = true;
        *why = "etcd's history went back (" + w + ")";
        return false;
    }
}

void Session::drop_lease()
{
    if (!lease_.empty()) {
        std::string ignored;
        if (client_.revoke(lease_, &ignored))
            ereport(LOG, (errmsg("shardid coordinator: revoked lease %s, which etcd's older history holds keys under",
                                 lease_.c_str())));
        lease_.clear();
    }
    new_witness();
    revisions_.reset();
}

// The lease etcd no longer knows: expired (this node could not renew it in
// time), revoked early (etcd 3.4, etcd::takeover_wait_ms()), or gone with
// a history that went back to before this node's last write under it. The
// ping at that write's revision tells: true once judged (the claim given up
// either way), false when it must be asked again (etcd did not answer).
bool Session::lease_vanished()
{
    const std::string old = lease_;
    etcd::RangePage page;
    std::string error, why;
    const bool answered =
        witness_.revision() == 0 ||
        client_.range_page(etcd::encode_range_page(witness_.key(), "", 1, witness_.revision(), false), &page, &error);
    if (!answered && client_.last_failure() == etcd::Failure::transport) {
        failed("lease " + old + " has expired in etcd; could not read what etcd kept of it", error);
        return false;
    }
    if (answered && witness_.revision() != 0 && !observe(page.header))
        return true;
    switch (witness_.kept(answered, page.kvs, answered ? "" : error, &why)) {
    case etcd::Witness::Kept::kept:
        lease_.clear();
        new_witness();
        events_.lose_claim("lease " + old + " expired in etcd");
        return true;
    case etcd::Witness::Kept::lost: events_.went_back("lease " + old + " is gone, and " + why); return true;
    case etcd::Witness::Kept::unknown:
        events_.went_back("lease " + old + " is gone, and " + why +
                          ": a history that cannot be shown to be the same is "
                          "taken for a new one");
        return true;
    }
    return true;
}

void Session::error(Condition kind, const std::string& why)
{
    EtcdShared& c = etcd_shared();
    SpinLockAcquire(&c.mutex);
    strlcpy(c.last_error, why.c_str(), sizeof c.last_error);
    last_error_kind_ = int(kind);
    strlcpy(c.endpoint, client_.endpoint().c_str(), sizeof c.endpoint);
    c.requests = client_.requests();
    c.errors++;
    SpinLockRelease(&c.mutex);
    refused_in_round_ = refused_in_round_ || kind == Condition::unauthorized;
    // A line when the condition starts, not one every retry.
    if (episodes_[int(kind)].fail(wall_clock().now_ms(), last_answer_ms_))
        ereport(LOG, (errmsg("shardid coordinator: %s", why.c_str())));
}

void Session::failed(const std::string& what, const std::string& why)
{
    // A request refused because etcd's history went back was reported as
    // that (went_back()): not an etcd that does not answer.
    if (history_failure_)
        return;
    const Condition kind =
        client_.last_failure() == etcd::Failure::unauthorized ? Condition::unauthorized : Condition::unreachable;
    error(kind, what + ": " + why);
}

void Session::ended(Condition kind)
{
    etcd::Episode& e = episodes_[int(kind)];
    // A condition that ended takes its words out of last_error: what is
    // left there is what still holds.
    if (e.active() && last_error_kind_ == int(kind)) {
        EtcdShared& c = etcd_shared();
        SpinLockAcquire(&c.mutex);
        c.last_error[0] = '\0';
        SpinLockRelease(&c.mutex);
        last_error_kind_ = -1;
    }
    if (!e.ok(wall_clock().now_ms()))
        return;
    const int64_t more = e.unreported();
    ereport(LOG,
            (errmsg("shardid coordinator: %s for %.1f s, %lld request%s failed%s", condition_words[int(kind)],
                    double(e.lasted_ms()) / 1000, (long long)e.failures(), e.failures() == 1 ? "" : "s",
                    more ? psprintf(" (and %lld shorter episodes before, without lines of their own)", (long long)more)
                         : "")));
}

void Session::answered()
{
    last_answer_ms_ = wall_clock().now_ms();
    answered_in_round_ = true;
    ended(Condition::unreachable);
}

// etcd refuses a user per request: one whose role lacks the prefix has its
// lease granted and renewed, and every key refused. So the condition ends
// with a round whose requests were answered and none refused, not with any
// answer (which ended it at every renewal, blanking last_error until the
// next refusal and logging an end and a start every few seconds).
void Session::round_done()
{
    if (answered_in_round_ && !refused_in_round_)
        ended(Condition::unauthorized);
    answered_in_round_ = refused_in_round_ = false;
}

void Session::publish_lease()
{
    EtcdShared& c = etcd_shared();
    c.fence_ms.store(fence_ms_, std::memory_order_release);
    SpinLockAcquire(&c.mutex);
    strlcpy(c.lease_id, lease_.c_str(), sizeof c.lease_id);
    c.lease_ttl_s = lease_ttl_ms_ / 1000;
    c.last_ok_ms = wall_clock().now_ms();
    SpinLockRelease(&c.mutex);
}

}  // namespace shardid::pg
