// The re-check of held shard keys (src/core/etcd/recheck.hpp).
#include "core/etcd/recheck.hpp"

#include <algorithm>

namespace shardid::etcd {

std::string ping_key(const std::string& prefix, const std::string& lease) { return prefix + "/shard/~/" + lease; }
std::string watched_key(const std::string& prefix) { return prefix + "/shard/"; }
std::string watched_end(const std::string& prefix) { return prefix + "/shard0"; }

namespace {

// Digits at `at`, at least one, at most 20: moves `at` past them.
bool digits(const std::string& s, size_t* at)
{
    const size_t from = *at;
    while (*at < s.size() && s[*at] >= '0' && s[*at] <= '9' && *at - from < 20)
        ++*at;
    return *at > from;
}

}  // namespace

bool shardid_key(const std::string& prefix, const std::string& key)
{
    const std::string head = watched_key(prefix);
    if (key.compare(0, head.size(), head) != 0)
        return false;
    size_t at = head.size();
    if (key.compare(at, 2, "~/") == 0) {
        at += 2;
        return digits(key, &at) && at == key.size();
    }
    // e<epoch>u<unit>t<time>s<shard>q<sequence>[w][f<first>]/<value>
    for (const char c : {'e', 'u', 't', 's', 'q'}) {
        if (at >= key.size() || key[at] != c)
            return false;
        ++at;
        if (c == 'e' && at < key.size() && key[at] == '-')
            ++at;  // an epoch before 1970
        if (!digits(key, &at))
            return false;
    }
    if (at < key.size() && key[at] == 'w')
        ++at;
    if (at < key.size() && key[at] == 'f' && !(++at, digits(key, &at)))
        return false;
    if (at >= key.size() || key[at] != '/')
        return false;
    ++at;
    return digits(key, &at) && at == key.size();
}

void HeldKeys::reset(uint64_t cluster_id, int64_t revision)
{
    keys_.clear();
    cluster_ = cluster_id;
    checked_ = std::max<int64_t>(revision, 0);
    barrier_ = 0;
}

void HeldKeys::put(const std::string& key, int index, int64_t revision) { keys_[key] = {index, revision}; }

void HeldKeys::erase(const std::string& key) { keys_.erase(key); }

int HeldKeys::index_of(const std::string& key) const
{
    const auto it = keys_.find(key);
    return it == keys_.end() ? -1 : it->second.first;
}

bool HeldKeys::cluster_ok(uint64_t cluster_id, std::string* why) const
{
    if (cluster_ == 0 || cluster_id == 0 || cluster_id == cluster_)
        return true;
    *why = "etcd answered as cluster " + std::to_string(cluster_id) + ", and this node's lease is in cluster " +
           std::to_string(cluster_) + ": etcd was replaced";
    return false;
}

bool HeldKeys::begin(uint64_t cluster_id, int64_t barrier, std::string* why)
{
    if (!cluster_ok(cluster_id, why))
        return false;
    if (barrier <= checked_) {
        // A write now cannot lie at or before a revision already checked:
        // etcd's revisions went back (restored from an older snapshot).
        *why = "etcd wrote the ping at revision " + std::to_string(barrier) + ", at or before revision " +
               std::to_string(checked_) + " checked already: etcd's history went back";
        return false;
    }
    barrier_ = barrier;
    seen_ = checked_;
    return true;
}

void HeldKeys::lose(const std::string& key, int64_t revision, std::vector<int>* lost)
{
    const auto it = keys_.find(key);
    // Only a change after this node's own write of the key (its claim)
    // takes it away: an older one is history this node's claim came after.
    if (it == keys_.end() || revision <= it->second.second)
        return;
    lost->push_back(it->second.first);
    keys_.erase(it);
}

HeldKeys::Step HeldKeys::feed(const etcd::WatchMessage& m, std::vector<int>* lost, std::string* why)
{
    if (!cluster_ok(m.header.cluster_id, why))
        return Step::failed;
    if (m.canceled)
        return m.compact_revision > 0 ? Step::compacted : (*why = "etcd canceled the watch", Step::failed);
    // A member that is behind sends the ping's revision once it has it; one
    // whose history went back never does, and the request times out.
    bool reached = false;
    for (const etcd::WatchEvent& e : m.events) {
        if (e.kv.mod_revision <= checked_ || e.kv.mod_revision < seen_) {
            *why = "etcd sent a change of revision " + std::to_string(e.kv.mod_revision) + " after revision " +
                   std::to_string(std::max(seen_, checked_)) + ": not in order";
            return Step::failed;
        }
        seen_ = e.kv.mod_revision;
        lose(e.kv.key, e.kv.mod_revision, lost);
        reached |= e.kv.mod_revision >= barrier_;
    }
    if (!reached)
        return Step::more;
    // Every change up to the barrier has come; those after it in the same
    // message are judged already, and come again next time (judged alike).
    checked_ = barrier_;
    return Step::done;
}

void HeldKeys::full(const std::vector<etcd::KeyValue>& listed, const std::string& lease, int64_t revision,
                    std::vector<int>* lost)
{
    std::unordered_map<std::string, const etcd::KeyValue*> mine;
    for (const etcd::KeyValue& kv : listed)
        mine[kv.key] = &kv;
    std::vector<std::string> gone;
    for (const auto& [key, held] : keys_) {
        const auto it = mine.find(key);
        // As this node wrote it: under its lease, last written by its claim
        // (a later write of anyone's detaches it or is someone else's).
        if (it == mine.end() || it->second->lease != lease || it->second->mod_revision != held.second)
            gone.push_back(key);
    }
    for (const std::string& key : gone) {
        lost->push_back(keys_[key].first);
        keys_.erase(key);
    }
    checked_ = std::max(checked_, revision);
}

}  // namespace shardid::etcd
