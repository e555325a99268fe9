// etcd's history under a prefix, and how a node tells that etcd went back
// on it (src/core/etcd/continuity.hpp).
#include "core/etcd/continuity.hpp"

#include <cstdio>

#include "core/etcd/recheck.hpp"
#include "core/text.hpp"

namespace shardid::etcd {

std::string history_key(const std::string& prefix) { return prefix + "/history"; }
std::string settling_key(const std::string& prefix) { return prefix + "/settling"; }

std::string history_value(const History& h)
{
    char buf[96];
    snprintf(buf, sizeof buf, "%016llx %lld %lld", (unsigned long long)h.token, (long long)h.settled_ms,
             (long long)h.ttl_ms);
    return buf;
}

bool parse_history(const std::string& text, History* out)
{
    *out = History{};
    const size_t a = text.find(' ');
    const size_t b = a == std::string::npos ? a : text.find(' ', a + 1);
    if (a == std::string::npos || b == std::string::npos || text.find(' ', b + 1) != std::string::npos)
        return false;
    History h;
    if (!parse_token(text.substr(0, a), &h.token) || !parse_count(text.substr(a + 1, b - a - 1), &h.settled_ms) ||
        !parse_count(text.substr(b + 1), &h.ttl_ms) || h.ttl_ms < min_lease_ttl_s * 1000 ||
        h.ttl_ms > max_lease_ttl_s * 1000)
        return false;
    *out = h;
    return true;
}

bool history_plausible(int64_t settled_ms, int64_t now_ms, int64_t max_lead_ms, std::string* why)
{
    const int64_t reach =
        sat_add(sat_add(now_ms, max_lead_ms > 0 ? max_lead_ms : 0), settle_ms(max_lease_ttl_s * 1000));
    if (settled_ms <= reach)
        return true;
    char buf[224];
    snprintf(buf, sizeof buf,
             "it settles %lld s after this node's clock, beyond what a node could have written "
             "(shardid.max_clock_lead and the longest lease's settling: %lld s)",
             (long long)((settled_ms - now_ms) / 1000), (long long)((reach - now_ms) / 1000));
    *why = buf;
    return false;
}

bool history_extended(const History& read, int64_t fleet_ms, bool settling, int64_t now_ms, History* out)
{
    if (read.ttl_ms >= fleet_ms)
        return false;
    *out = read;
    out->ttl_ms = fleet_ms;
    // A node of that TTL that did not see the loss may issue until its
    // fence: the settling lasts that long from now (more than from the
    // loss, never less).
    if (settling && sat_add(now_ms, settle_ms(fleet_ms)) > out->settled_ms)
        out->settled_ms = sat_add(now_ms, settle_ms(fleet_ms));
    return true;
}

bool Revisions::see(const etcd::Header& h, std::string* why)
{
    if (h.revision <= 0)
        return true;  // an answer without a header says nothing
    if (cluster_ != 0 && h.cluster_id != 0 && h.cluster_id != cluster_) {
        *why = "etcd answered as cluster " + std::to_string(h.cluster_id) + ", after answering as cluster " +
               std::to_string(cluster_) +
               " (another cluster holds this prefix: etcd restored into a new cluster, "
               "or replaced)";
        return false;
    }
    if (h.revision < highest_) {
        *why = "etcd answered at revision " + std::to_string(h.revision) + ", after answering at revision " +
               std::to_string(highest_) + " (etcd restored from an older snapshot)";
        return false;
    }
    if (h.cluster_id != 0)
        cluster_ = h.cluster_id;
    highest_ = h.revision;
    return true;
}

void Witness::reset(const std::string& prefix, const std::string& lease, uint64_t token)
{
    key_ = lease.empty() ? std::string() : ping_key(prefix, lease);
    lease_ = lease;
    token_ = token;
    n_ = 0;
    revision_ = 0;
    value_.clear();
    pending_.clear();
    uncertain_.clear();
}

etcd::Compare Witness::compare() const
{
    // No write yet: the ping does not exist (create revision 0).
    return revision_ == 0 ? etcd::Compare{etcd::Compare::Target::create, key_, 0, ""}
                          : etcd::Compare{etcd::Compare::Target::mod, key_, revision_, ""};
}

etcd::Op Witness::put()
{
    char buf[48];
    snprintf(buf, sizeof buf, "%016llx.%llu", (unsigned long long)token_, (unsigned long long)++n_);
    pending_ = buf;
    return {true, key_, pending_, lease_};
}

etcd::Op Witness::read() const { return {false, key_, "", ""}; }

void Witness::committed(int64_t revision)
{
    revision_ = revision;
    value_ = pending_;
    uncertain_.clear();
}

Witness::Verdict Witness::judge(bool found, const etcd::KeyValue& ping, std::string* why)
{
    if (revision_ == 0 ? !found : found && ping.mod_revision == revision_ && ping.value == value_)
        return Verdict::same;
    // A write whose answer was lost, found committed: its value is this
    // node's own, drawn for that write alone.
    if (found && !uncertain_.empty() && ping.value == uncertain_ && ping.mod_revision > revision_) {
        revision_ = ping.mod_revision;
        value_ = uncertain_;
        uncertain_.clear();
        return Verdict::adopted;
    }
    const std::string left = "where this node's last write left it at revision " + std::to_string(revision_);
    *why = revision_ == 0 ? "etcd holds \"" + key_ + "\", which this node had not written yet"
           : found        ? "etcd holds \"" + key_ + "\" at revision " + std::to_string(ping.mod_revision) + ", " + left
                          : "etcd no longer holds \"" + key_ + "\", " + left;
    return Verdict::went_back;
}

Witness::Kept Witness::kept(bool answered, const std::vector<etcd::KeyValue>& kvs, const std::string& error,
                            std::string* why) const
{
    if (revision_ == 0)
        return Kept::kept;  // nothing written under the lease: nothing to lose
    const std::string at = "revision " + std::to_string(revision_);
    if (!answered) {
        if (error.find("required revision has been compacted") != std::string::npos) {
            *why = "etcd compacted its history past " + at +
                   ", the last write under the lease, so whether it kept that write cannot be told";
            return Kept::unknown;
        }
        if (error.find("required revision is a future revision") != std::string::npos) {
            *why = "etcd's revisions have not reached " + at + ", that of this node's last write under the lease";
            return Kept::lost;
        }
        *why = error.empty() ? "etcd did not answer" : error;
        return Kept::unknown;
    }
    for (const etcd::KeyValue& kv : kvs)
        if (kv.mod_revision == revision_ && kv.value == value_)
            return Kept::kept;
    *why = "etcd does not hold this node's last write under the lease at " + at;
    return Kept::lost;
}

}  // namespace shardid::etcd
