// Whether etcd kept what this node wrote (the rules:
// src/core/etcd/continuity.hpp): every write under the lease goes through
// txn(), which compares this node's ping where its last write left it and
// moves it; every answer's revision and cluster are seen; a lease etcd no
// longer knows is judged by a read of the ping at the last write's
// revision. A history etcd went back on (restored from an older snapshot,
// into a new cluster or not) is distrusted: every ID stops, the lease is
// given up (its keys, which the old history may hold again, deleted with
// it), and the history is made anew (src/pg/etcd/worker/history.cpp), which
// settles before anything without a mark, or marked before it, is claimed.
#include <algorithm>
#include <string>

#include "pg/etcd/worker/holder.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

void Holder::new_witness() { witness_.reset(prefix_, lease_, lease_.empty() ? 0 : new_token()); }

bool Holder::observe(const etcd::Header& header)
{
    std::string why;
    if (revisions_.see(header, &why))
        return true;
    went_back(why);
    return false;
}

// A transaction: under the lease (a write that puts, or `ping`: the
// renewal's ping, the witness's write alone), witnessed: it also
// compares the ping where this node's last write left it and moves it, and
// its failure branch reads the ping (taken out of out->kvs again). False
// (why) when etcd did not answer, answered with an error, or went back.
bool Holder::txn(std::vector<etcd::Compare> compare, std::vector<etcd::Op> success, std::vector<etcd::Op> failure,
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
        went_back(w);
        history_failure_ = true;
        *why = "etcd's history went back (" + w + ")";
        return false;
    }
}

// The lease etcd no longer knows: expired (this node could not renew it in
// time), revoked early (etcd 3.4, etcd::takeover_wait_ms()), or gone with
// a history that went back to before this node's last write under it. The
// ping at that write's revision tells: true once judged (the claim given up
// either way), false when it must be asked again (etcd did not answer).
bool Holder::lease_vanished()
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
        lose_claim("lease " + old + " expired in etcd");
        return true;
    case etcd::Witness::Kept::lost: went_back("lease " + old + " is gone, and " + why); return true;
    case etcd::Witness::Kept::unknown:
        went_back("lease " + old + " is gone, and " + why +
                  ": a history that cannot be shown to be the same is "
                  "taken for a new one");
        return true;
    }
    return true;
}

void Holder::leave(uint64_t token)
{
    if (token == 0 || left(token))
        return;
    if (n_left_ == max_left) {  // the oldest goes
        std::copy(left_ + 1, left_ + max_left, left_);
        n_left_--;
    }
    left_[n_left_++] = token;
}

bool Holder::left(uint64_t token) const { return std::find(left_, left_ + n_left_, token) != left_ + n_left_; }

// etcd's history went back on this node (why): every ID stops, the lease is
// given up (revoked, so that the keys the old history holds under it again
// are deleted), and the history this node was under is distrusted: the next
// read of it makes it anew (ensure_history()).
void Holder::went_back(const std::string& why)
{
    leave(history_.token);
    error(Condition::went_back, "etcd's history under the prefix went back: " + why +
                                    ": every ID stopped; the history is made anew, and nothing without a mark, or "
                                    "marked before it, is claimed until it settles");
    lose_claim("etcd's history went back");
    if (!lease_.empty()) {
        std::string ignored;
        if (client_.revoke(lease_, &ignored))
            ereport(LOG, (errmsg("shardid coordinator: revoked lease %s, which etcd's older history holds keys under",
                                 lease_.c_str())));
        lease_.clear();
    }
    new_witness();
    revisions_.reset();
    history_revision_ = history_created_ = 0;
}

}  // namespace shardid::pg
