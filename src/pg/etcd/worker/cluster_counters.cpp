// The holder's counters and the cluster's call-number key
// (src/pg/etcd/worker/cluster_counters.hpp): counter values taken in etcd for backends, counters
// raised to this node's floors at each claim, and the call-number key read
// and recorded for backends. The rules, and what a counter may hold:
// src/core/etcd/rules.hpp (counter_next()).
#include <algorithm>
#include <string>

#include "core/text.hpp"
#include "pg/etcd/worker/cluster_counters.hpp"
#include "pg/base/settings.hpp"
#include "pg/etcd/shared.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

// A counter's key and the highest floor any node raised it to
// (etcd::counter_next()): its value, revision (0: absent) and number of
// writes; false when it cannot be read, or holds what shardid never writes
// (then reported).
struct CounterKey {
    int64_t value = 0, revision = 0, version = 0;
    int64_t raised = 0, raised_revision = 0;
    CallEras eras;  // the run ids' key eras (the run counter's <key>/eras)
    int64_t eras_revision = 0;
};
static bool read_counter(etcd::Client& client, const std::string& key, CounterKey* out, std::string* why, bool* corrupt)
{
    std::vector<etcd::KeyValue> kvs;
    *corrupt = false;
    *out = CounterKey{};
    const std::string raised_key = etcd::counter_raised_key(key);
    const std::string eras_key = key + "/eras";  // etcd::call_eras_key(), of the run counter only
    if (!client.range(key, etcd::prefix_end(key), &kvs, why))
        return false;
    for (const etcd::KeyValue& kv : kvs) {
        if (kv.key == key) {
            out->revision = kv.mod_revision;
            out->version = kv.version;
            if (!etcd::parse_count(kv.value, &out->value)) {
                *corrupt = true;
                *why = "the key \"" + key + "\" holds \"" + printable(kv.value, 40) + "\", which is not a count";
                return false;
            }
        } else if (kv.key == raised_key) {
            out->raised_revision = kv.mod_revision;
            if (!etcd::parse_count(kv.value, &out->raised)) {
                *corrupt = true;
                *why = "the key \"" + raised_key + "\" holds \"" + printable(kv.value, 40) + "\", which is not a count";
                return false;
            }
        } else if (kv.key == eras_key) {
            out->eras_revision = kv.mod_revision;
            if (!etcd::call_eras_parse(kv.value.data(), kv.value.size(), &out->eras)) {
                *corrupt = true;
                *why = "the key \"" + eras_key + "\" holds \"" + printable(kv.value, 40) +
                       "\", which is not a list of call-number key eras";
                return false;
            }
        }
    }
    return true;
}

// A counter's value put by a transaction, with the raised floor when the
// value needs it to be explained (etcd::counter_next()), guarded by both
// keys' revisions and, for a value taken, etcd's history (a counter etcd
// forgot is taken from only once every node had the time to raise it:
// etcd::History).
struct CounterTxn {
    std::vector<etcd::Compare> compare;
    std::vector<etcd::Op> put;
};
static CounterTxn counter_txn(const std::string& key, const CounterKey& k, int64_t value, int64_t raised,
                              const std::string& history_key = "", int64_t history_revision = 0)
{
    using T = etcd::Compare::Target;
    const std::string raised_key = etcd::counter_raised_key(key);
    CounterTxn t;
    t.compare = {{k.revision == 0 ? T::create : T::mod, key, k.revision, ""},
                 {k.raised_revision == 0 ? T::create : T::mod, raised_key, k.raised_revision, ""}};
    if (!history_key.empty())
        t.compare.push_back({T::mod, history_key, history_revision, ""});
    t.put = {{true, key, std::to_string(value), ""}};
    if (raised > k.raised)
        t.put.push_back({true, raised_key, std::to_string(raised), ""});
    return t;
}

// The cluster's call-number key, for backends that asked (see
// cluster_call_key()): recorded first when a superuser asked to
// (shardid_set_call_number_key(); "0" when cleared), then read, every time:
// a superuser may change it at any time on any node.
void ClusterCounters::serve_call_key()
{
    EtcdShared& c = etcd_shared();
    const uint64_t asked = c.call_key_asked.load();
    if (asked == c.call_key_served.load())
        return;
    const std::string key = etcd::call_key_key(prefix_);
    std::string why;
    const int64_t set = c.call_key_set.exchange(0);
    if (set != 0) {
        etcd::Txn t;
        if (!session_.txn({}, {{true, key, std::to_string(set > 0 ? set : 0), ""}}, {}, &t, &why)) {
            int64_t none = 0;
            c.call_key_set.compare_exchange_strong(none, set);  // again next round
            session_.failed("could not record the call-number key in \"" + key + "\"", why);
            return;
        }
        session_.answered();
        ereport(LOG, (errmsg("shardid coordinator: %s the cluster's call-number key in \"%s\"",
                             set > 0 ? "recorded" : "cleared", key.c_str())));
    }
    std::vector<etcd::KeyValue> kvs;
    if (!session_.client().range(key, "", &kvs, &why)) {
        session_.failed("could not read \"" + key + "\"", why);
        return;
    }
    session_.answered();
    int64_t value = 0;
    if (!kvs.empty() && !etcd::parse_count(kvs[0].value, &value)) {
        session_.error(Condition::corrupt_key,
                       "the key \"" + key + "\" holds \"" + printable(kvs[0].value, 40) +
                           "\", which is not a fingerprint: no call-number run is taken until it "
                           "is fixed (shardid_set_call_number_key() writes it again)");
        return;
    }
    c.call_key_cluster.store(value, std::memory_order_release);
    c.call_key_served.store(asked, std::memory_order_release);
    ConditionVariableBroadcast(&c.changed);
}

// The key of counter field k, read into *key and *out; false when it
// cannot be read, reported, and a value shardid never writes reported as a
// key edited by hand, with `until` said of it.
bool ClusterCounters::key_value(int k, const std::string& until, std::string* key, CounterKey* out, bool* corrupt)
{
    std::string why;
    *key = etcd::counter_key(prefix_, node_state_fields[k].keyword);
    if (read_counter(session_.client(), *key, out, &why, corrupt)) {
        session_.answered();
        return true;
    }
    if (*corrupt)
        session_.error(Condition::corrupt_key, why + ": " + until);
    else
        session_.failed("could not read \"" + *key + "\"", why);
    return false;
}

// The words of a counter refused by etcd::counter_next(), and how to fix it.
static std::string counter_refused(const std::string& key, const std::string& why, const char* until)
{
    return "the key \"" + key + "\" is refused: " + why + ": " + until +
           " (delete the key: the nodes raise it to their own floors)";
}

void ClusterCounters::serve()
{
    serve_call_key();
    // Only under a history this node read, once it settled: after etcd
    // lost its data, every node that took values has raised the counters
    // to its floors by then.
    if (history_.revision() == 0 || history_.settling())
        return;
    EtcdShared& c = etcd_shared();
    for (int k = 0; k < node_state_field_count; k++) {
        if (node_state_fields[k].kind != NodeStateFieldKind::counter_floor)
            continue;
        const NodeCounter which = NodeCounter(k);
        if (c.counter_want[k].load() == 0 || c.counter_ready[k].load() >= 0)
            continue;
        const std::string until = std::string("no ") + node_counter_name(which) + " is taken until it is fixed";
        std::string key, why;
        CounterKey ck;
        bool corrupt = false;
        if (!key_value(k, until, &key, &ck, &corrupt)) {
            corrupt_ |= corrupt;
            continue;
        }
        const int64_t floor = counter_floor(which), max = node_state_fields[k].max;
        int64_t next = 0;
        if (!etcd::counter_next(ck.value, ck.version, ck.raised, floor, max, &next, &why)) {
            corrupt_ = true;
            session_.error(Condition::corrupt_key, counter_refused(key, why, until.c_str()));
            continue;
        }
        corrupt_ = false;
        session_.ended(Condition::corrupt_key);
        // A run id in the era of the backend's call-number key, from the
        // eras the cluster recorded beside the counter (call_era_take());
        // eras recorded before this history (etcd went back, or a key
        // edited by hand) may have lost run ids taken since: none continues.
        const int64_t want_key = which == NodeCounter::run ? c.run_key_want.load() : 0;
        int64_t raised = std::max(ck.raised, floor), value = next;
        CallEras eras = ck.eras;
        if (want_key != 0 && next <= max) {
            if (ck.eras_revision != 0 && etcd::before_history(ck.eras_revision, history_.created()))
                eras.close_all();
            int64_t run = 0;
            if (!call_era_take(eras, want_key, -1, std::max({ck.value, ck.raised, floor}), &run)) {
                c.run_refused_key.store(want_key);
                c.run_refused.store(1);
                c.counter_want[k].store(0);
                ConditionVariableBroadcast(&c.changed);
                continue;
            }
            // The counter stays the highest run id taken (nodes raise it to
            // their floors after etcd lost its data: a new era lies above).
            next = run;
            value = std::max(ck.value, run);
            raised = std::max(raised, value - 1);
        }
        if (next <= max) {
            etcd::Txn t;
            CounterTxn c = counter_txn(key, ck, value, raised, etcd::history_key(prefix_), history_.revision());
            if (want_key != 0) {
                const std::string eras_key = etcd::call_eras_key(prefix_);
                c.compare.push_back({ck.eras_revision == 0 ? etcd::Compare::Target::create : etcd::Compare::Target::mod,
                                     eras_key, ck.eras_revision, ""});
                c.put.push_back({true, eras_key, etcd::call_eras_format(eras), ""});
            }
            if (!session_.txn(c.compare, c.put, {}, &t, &why)) {
                session_.failed("could not take a value from \"" + key + "\"", why);
                continue;
            }
            if (!t.succeeded) {
                history_.reread();  // the history may have moved: read it again (claim())
                continue;           // or another node took one meanwhile: again, next round
            }
            if (want_key != 0 && eras.n > ck.eras.n)
                ereport(LOG,
                        (errmsg("shardid coordinator: call-number key era %d recorded in \"%s\" for the key "
                                "with fingerprint %lld",
                                eras.list[eras.n - 1].era, etcd::call_eras_key(prefix_).c_str(), (long long)want_key)));
        }
        // None left (next > max): nothing is written, and the backend says so.
        if (which == NodeCounter::run) {
            c.run_refused.store(0);
            c.run_ready_key.store(want_key);
        }
        c.counter_ready[k].store(next);
        c.counter_want[k].store(0);
        ConditionVariableBroadcast(&c.changed);
    }
}

// Raises every counter in etcd to at least this node's own floor, once per
// claim: an etcd that lost its data (or a prefix deleted by hand) must not
// hand another node a value this node holds or has used. A counter beyond
// what shardid could have written is left alone (and reported).
bool ClusterCounters::raise()
{
    bool all = true, corrupt_any = false;
    for (int k = 0; k < node_state_field_count; k++) {
        if (node_state_fields[k].kind != NodeStateFieldKind::counter_floor)
            continue;
        const int64_t floor = counter_floor(NodeCounter(k));
        if (floor < 0)
            continue;
        const char* until = "it is not raised to this node's floor until it is fixed";
        std::string key, why;
        CounterKey ck;
        bool corrupt = false;
        if (!key_value(k, until, &key, &ck, &corrupt)) {
            corrupt_any |= corrupt;
            all = false;
            continue;
        }
        int64_t next = 0;
        if (!etcd::counter_next(ck.value, ck.version, ck.raised, floor, node_state_fields[k].max, &next, &why)) {
            session_.error(Condition::corrupt_key, counter_refused(key, why, until));
            corrupt_any = true;
            all = false;
            continue;
        }
        if (ck.value >= floor)
            continue;
        etcd::Txn t;
        const CounterTxn c = counter_txn(key, ck, floor, std::max(ck.raised, floor));
        if (!session_.txn(c.compare, c.put, {}, &t, &why)) {
            session_.failed("could not raise \"" + key + "\"", why);
            all = false;
            continue;
        }
        session_.answered();
        if (!t.succeeded) {
            all = false;  // changed meanwhile: read again next round
            continue;
        }
        ereport(LOG, (errmsg("shardid coordinator: raised \"%s\" from %lld to this node's floor %lld", key.c_str(),
                             (long long)ck.value, (long long)floor)));
    }
    corrupt_ = corrupt_any;
    if (!corrupt_any)
        session_.ended(Condition::corrupt_key);
    if (!all)
        return false;
    // Under a history other than the one this node's counter values were
    // taken under (etcd lost its data): they stay its own only if they
    // were re-published before the new history settled, when another node
    // may be handed them; otherwise every one in use is taken anew (the
    // counters' epoch moves before the claim is published).
    if (history_token_ != history_.token()) {
        bool confirmed = false;
        if (history_.settling_created() != 0) {
            // The settling this node re-published under is still the one
            // etcd holds (an extension keeps its create revision).
            etcd::Txn t;
            std::string why;
            if (!session_.txn(
                    {{etcd::Compare::Target::create, etcd::settling_key(prefix_), history_.settling_created(), ""}}, {},
                    {}, &t, &why)) {
                session_.failed("could not read \"" + etcd::settling_key(prefix_) + "\"", why);
                return false;
            }
            session_.answered();
            confirmed = t.succeeded;
        }
        if (!confirmed) {
            etcd_shared().counters_epoch.fetch_add(1, std::memory_order_acq_rel);
            ereport(LOG, (errmsg("shardid coordinator: this node's DecimalId generator ids and call-number runs were "
                                 "not re-published in etcd before its new history settled: each is taken anew")));
        }
        history_token_ = history_.token();
    }
    return true;
}

void ClusterCounters::follow_history(uint64_t token)
{
    if (history_token_ == 0)
        history_token_ = token;  // this life's counter values are all taken under it
    if (history_token_ != token)
        raise();
}

}  // namespace shardid::pg
