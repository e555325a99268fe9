// Node ids from a coordination service (etcd): the rules, pure. The glue's
// background worker (src/pg/etcd/worker/start.cpp) talks to etcd through
// src/etcd/client.hpp and asks these functions what to do; test/unit/
// etcd_rules_test.cpp drives them with a fake clock.
//
// A node holds node id N while it holds the key <prefix>/node/N, put with a
// lease of its own. Three rules make two holders of one id harmless:
//   - fencing: the holder stops issuing IDs at (send time of its last
//     successful keepalive, or of the grant) + TTL - margin, on a monotonic
//     clock. etcd cannot expire the lease before the TTL has passed since
//     that request reached it, which was after it was sent, so the holder has
//     stopped before another node can take the id.
//   - marks: IDs of id N are issued only in a window that ends at the mark
//     recorded in <prefix>/mark/N, written by a transaction guarded by the
//     holder's lease (so a holder that lost the id cannot move it). A new
//     holder starts above the mark, whatever its clock says.
//   - counters: DecimalId generator ids and call-number run ids are taken
//     from <prefix>/counter/<name> by compare-and-swap, never below the
//     node's own floor, so no value comes twice on any node.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/callnum.hpp"

namespace shardid::etcd {

// The lease TTLs a node accepts (shardid.etcd_lease_ttl).
constexpr int64_t min_lease_ttl_s = 2;
constexpr int64_t max_lease_ttl_s = 300;

// Arithmetic on values from outside (etcd's answers, keys anyone with
// write access to the prefix may have edited): saturating at int64's ends
// instead of overflowing, so a key at 2^63-1 gives a value that a later
// check refuses, never one that wrapped around.
constexpr int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

// The TTL a node fences with: what it asked for, or less when etcd granted
// less. A grant of more than was asked (a broken or hostile gateway) never
// lengthens the fence: etcd may expire the lease after the TTL asked.
// 0 when the grant is not usable at all (not positive).
constexpr int64_t fenced_ttl_s(int64_t asked_s, int64_t granted_s)
{
    return granted_s <= 0 ? 0 : granted_s < asked_s ? granted_s : asked_s;
}

// How long before the lease could expire on the etcd side the holder stops.
constexpr int64_t fence_margin_ms(int64_t ttl_ms) { return ttl_ms / 5 > 1000 ? ttl_ms / 5 : 1000; }

// Until when (monotonic ms) a holder may issue, given the monotonic time at
// which it sent the last request that etcd answered by renewing the lease.
constexpr int64_t fence_deadline_ms(int64_t sent_ms, int64_t ttl_ms)
{
    return sat_add(sent_ms, ttl_ms - fence_margin_ms(ttl_ms));
}

// How often the holder renews its lease: every fifth of the TTL, so that
// the fence is always at least TTL - margin - TTL/5 away (6 s of the
// default 10 s): an etcd outage shorter than that costs nothing.
constexpr int64_t keepalive_every_ms(int64_t ttl_ms) { return ttl_ms / 5; }

// How long one request may take: half of what the fence leaves after a
// keepalive, so a keepalive that hangs is given up in time for the next.
constexpr int64_t request_timeout_ms(int64_t ttl_ms)
{
    const int64_t t = (ttl_ms - fence_margin_ms(ttl_ms) - keepalive_every_ms(ttl_ms)) / 2;
    return t < 300 ? 300 : t > 5000 ? 5000 : t;
}

// Each request of a clean release (lower the mark, revoke the lease) waits
// at most this long per endpoint: neither is needed for safety, and a
// shutdown or a Patroni switchover waits for them.
constexpr int64_t release_timeout_ms = 500;
// ... and all of them together at most this long.
constexpr int64_t release_budget_ms = 1000;

// How far beyond a tick a generator needs, or beyond the floor a new holder
// starts above, the window reaches.
constexpr int64_t window_span_ms = 2000;

// The window's end as the holder records it (`fence_left_ms`: how long
// until its fence, on the fence clock). It covers the fence: every ID the
// holder may issue starts before now + fence_left_ms on the wall clock, so
// while the lease may still be the holder's no generator waits for etcd,
// and an etcd outage shorter than the fence costs nothing. It stays below
// the earliest moment another node can claim the id (etcd expires the lease
// no earlier than the TTL after the last renewal reached it, a whole margin
// after the fence): half the margin beyond the fence, so a new holder with
// a synchronised clock is already past it, and one with a clock behind
// starts above it. It reaches a span beyond a tick a generator needs
// (need_ms, -1: none) and beyond the floor the holder started above, and it
// never goes below what was recorded.
constexpr int64_t window_target(int64_t now_ms, int64_t fence_left_ms, int64_t ttl_ms, int64_t need_ms,
                                int64_t floor_ms, int64_t recorded_ms)
{
    int64_t end = sat_add(sat_add(now_ms, fence_left_ms > 0 ? fence_left_ms : 0), fence_margin_ms(ttl_ms) / 2);
    if (need_ms >= 0 && sat_add(need_ms, window_span_ms) > end)
        end = sat_add(need_ms, window_span_ms);
    if (sat_add(floor_ms, window_span_ms) > end)
        end = sat_add(floor_ms, window_span_ms);
    return end > recorded_ms ? end : recorded_ms;
}

// Whether the window ending at recorded_ms must move: it no longer covers
// the fence (a renewal moved the fence), or a generator needs a tick at or
// beyond its end.
constexpr bool window_due(int64_t now_ms, int64_t fence_left_ms, int64_t recorded_ms, int64_t need_ms)
{
    return sat_add(now_ms, fence_left_ms) >= recorded_ms || need_ms >= recorded_ms;
}

// The mark of a node id, <prefix>/mark/<id>, as a holder records it:
//   "<end_ms> <token> <ttl_ms> held|released"
// end_ms: every ID of the holder starts before it (the window's end, or the
// last tick issued after a clean release). token: 16 hex digits drawn at
// random for each claim (and for each clean release), so that a node knows
// its own mark by who wrote it, never by its value, which another holder can
// write too. ttl_ms: the writer's lease TTL, the longest its fence can
// outlast an early revocation of its lease. released: a clean stop wrote it
// after the holder stopped issuing. A plain number (shardid 1.2, or written
// by hand) reads as a mark with token 0, TTL 0 (unknown) and not released.
struct Mark {
    int64_t end_ms = 0;
    uint64_t token = 0;
    int64_t ttl_ms = 0;
    bool released = false;
};
std::string mark_value(const Mark& mark);
// False for anything mark_value() never writes (and a plain number out of
// int64's range, or a TTL out of the range a node accepts).
bool parse_mark(const std::string& text, Mark* out);

// Whether a mark could have been written by a holder of the id, seen from a
// node whose wall clock reads now_ms: a window reaches at most its writer's
// fence (a TTL) and a span beyond the latest tick a generator needed (or
// the mark it started above), which runs at most shardid.max_clock_lead
// ahead of that writer's clock; and a writer whose clock leads this node's
// by more than another max_lead_ms leaves IDs this node could not follow
// anyway. So the reach is now + 2 max_lead_ms + TTL + span. False, with how
// far ahead it lies, for a mark beyond it: written by hand, or by a node
// whose clock runs far ahead. (A mark of this node's own claim is its own
// write, never checked.)
bool mark_plausible(int64_t end_ms, int64_t now_ms, int64_t max_lead_ms, int64_t ttl_ms, std::string* why);

// How long a new holder of an id waits, after its claim succeeded and
// before its first ID, for the previous holder to reach its fence: etcd
// removed the previous holder's key, but a lease can be revoked before its
// TTL (etcd 3.4: a leader that was paused revokes leases that a new leader
// kept alive, etcd-io/etcd#12528, #15247), so the previous holder may still
// be issuing until its own fence, at most its TTL - margin after its last
// renewal, which reached etcd before the key was removed. Nothing to wait
// for when there is no previous mark, when the mark is this node's own (no
// other holder since), or when the previous holder released the id cleanly
// (it had stopped before it wrote that). A mark of unknown TTL (a plain
// number) is waited out with the TTL of this node.
int64_t takeover_wait_ms(bool has_mark, const Mark& previous, bool own, int64_t own_ttl_ms);

// A counter of <prefix>/counter/<name>, checked before a value is taken:
// shardid writes a counter only by taking the next value (one more than
// before) or by raising it to a node's floor, and records the highest floor
// it ever raised it to in <prefix>/counter/<name>/raised, so a counter is
// at most its number of writes (etcd's `version` of the key) plus that. A
// higher value was written by hand: taking it would make it a node's
// persisted floor, which the node raises the counter back to after any fix.
// `max` is the highest value the counter's field holds. False, with the
// reason, when `current` is beyond what shardid could have written (the
// value is not used); otherwise *next is the value to take: above the
// current value and above this node's floor, or max + 1 when none is left.
bool counter_next(int64_t current, int64_t version, int64_t raised, int64_t floor, int64_t max, int64_t* next,
                  std::string* why);

// Renewals are late: the fence is nearer than a keepalive on time leaves it
// (one every TTL/5), by more than a slow answer explains. The holder still
// issues IDs, but will stop at its fence unless etcd answers: the state
// "expiring", for alerts that fire before generators fail.
constexpr int64_t late_slack_ms(int64_t ttl_ms)
{
    return request_timeout_ms(ttl_ms) / 2 < 500 ? request_timeout_ms(ttl_ms) / 2 : 500;
}
constexpr bool renewal_late(int64_t fence_left_ms, int64_t ttl_ms)
{
    return fence_left_ms < fence_deadline_ms(0, ttl_ms) - keepalive_every_ms(ttl_ms) - late_slack_ms(ttl_ms);
}
// The moment (on the fence's clock) renewals become late for a fence at
// `fence_ms`: renewal_late(fence_ms - now, ttl) from then on.
constexpr int64_t renewal_late_from_ms(int64_t fence_ms, int64_t ttl_ms)
{
    return fence_ms - (fence_deadline_ms(0, ttl_ms) - keepalive_every_ms(ttl_ms) - late_slack_ms(ttl_ms)) + 1;
}

// One condition of the coordinator (etcd unreachable, a key held by
// another node, ...) as the server log tells it: a line when it starts and
// one when it ends, saying how long it lasted and how many requests failed;
// never more than one starting line per condition in `quiet_ms`: a
// condition that comes back sooner is counted into the next line instead of
// flooding the log.
class Episode {
public:
    static constexpr int64_t quiet_ms = 10000;

    // A failure at now_ms; true when the starting line is due now. The
    // episode is taken to have started at `since_ms` (the last answer
    // before it, when there was one: a request fails only after its
    // timeout, long after etcd stopped answering), else at now_ms.
    bool fail(int64_t now_ms, int64_t since_ms = -1)
    {
        if (!active_) {
            active_ = true;
            started_ms_ = since_ms >= 0 && since_ms <= now_ms ? since_ms : now_ms;
            failures_ = 0;
            logged_ = now_ms - last_start_ms_ >= quiet_ms || last_start_ms_ < 0;
            if (logged_)
                last_start_ms_ = now_ms;
            else
                unreported_++;
        }
        failures_++;
        return logged_ && failures_ == 1;
    }
    // A success at now_ms; true when the ending line is due now (the
    // condition had started with a line of its own).
    bool ok(int64_t now_ms)
    {
        if (!active_)
            return false;
        active_ = false;
        lasted_ms_ = now_ms - started_ms_;
        if (logged_)
            unreported_before_ = unreported_, unreported_ = 0;
        return logged_;
    }
    bool active() const { return active_; }
    int64_t failures() const { return failures_; }
    int64_t lasted_ms() const { return lasted_ms_; }
    // Episodes between the last two lines that had none of their own.
    int64_t unreported() const { return unreported_before_; }

private:
    bool active_ = false, logged_ = false;
    int64_t started_ms_ = 0, lasted_ms_ = 0, last_start_ms_ = -1, failures_ = 0;
    int64_t unreported_ = 0, unreported_before_ = 0;
};

// The lowest id in [min, max] that is not in `held` (-1: none free).
int lowest_free(const std::vector<int>& held, int min, int max);

// The id a node claims when shardid.node_id is -1, given the node keys under
// `prefix` (key, lease) and its own lease: one its lease holds already (the
// answer to its claim was lost on the way back), else the id it held last
// (last_id, -1: none) when free again, else the lowest free one in
// [min, max]; -1 when every one is held.
int choose_id(const std::string& prefix, const std::vector<std::pair<std::string, std::string>>& nodes,
              const std::string& lease, int last_id, int min, int max);

// Keys under a prefix.
std::string node_key(const std::string& prefix, int id);
std::string mark_key(const std::string& prefix, int id);
std::string counter_key(const std::string& prefix, const char* name);
// The highest floor a node raised a counter to (see counter_next()).
std::string counter_raised_key(const std::string& counter_key);
// The fingerprint of the call-number key every node under the prefix uses
// (call numbers made with two keys can be equal).
std::string call_key_key(const std::string& prefix);
// The call-number key eras the cluster recorded (src/core/callnum.hpp),
// beside the run-id counter: "<era>:<key fingerprint>:<low> ..." (call_eras_format()).
std::string call_eras_key(const std::string& prefix);
// The first key after every key under `prefix`/ (etcd's range_end).
std::string prefix_end(const std::string& prefix);
// The id in a node key under `prefix` (-1: not a node key), in a mark key,
// or in a key <prefix><kind><id> (kind: "/node/", "/mark/").
int node_id_of_key(const std::string& prefix, const std::string& key);
int mark_id_of_key(const std::string& prefix, const std::string& key);
int id_of_key(const std::string& prefix, const char* kind, const std::string& key);

// A non-negative decimal integer value, exactly: digits only, no sign,
// no spaces, at most int64's maximum; false for anything else.
bool parse_count(const std::string& text, int64_t* out);
// Call-number key eras as etcd holds them, and back: "<era>:<key>:<low> ...";
// false on anything that is not such a list (each era once, ascending, keys
// not 0).
std::string call_eras_format(const CallEras& eras);
bool call_eras_parse(const char* text, size_t len, CallEras* out);
// Exactly 16 lowercase hex digits; false for anything else. A token of a
// node mark or a history: the same, not all zero.
bool parse_hex16(const std::string& text, uint64_t* out);
bool parse_token(const std::string& text, uint64_t* out);

// Who holds an id: the record in its node key (not the glue's pg::Holder,
// the worker's claim in progress).
struct HolderRecord {
    std::string host;
    int port = 0;
    std::string system_identifier;
    std::string since;  // ISO 8601, UTC
};
std::string holder_value(const HolderRecord& h);
// A readable description of a node key's value ("host h port p, system
// identifier s, since t"), or of what it holds when that is not a holder.
std::string describe_holder(const std::string& value);
// Whether a node key's value names this very node (the same system
// identifier, host and port): its own lease from before a crash or a fast
// restart, which etcd has not expired yet. A clone (same system identifier
// elsewhere) is another node.
bool same_node(const std::string& value, const HolderRecord& me);
// Whether a node key's value is a holder's record at all.
bool is_holder(const std::string& value);

// Endpoints: "http://h:p[,https://h:p...]". False, with a reason, for an
// empty list or an entry that is not http(s)://host:port with no path, or
// that has credentials in it (the reason then does not quote it).
bool parse_endpoints(const std::string& text, std::vector<std::string>* out, std::string* why);

// A prefix: starts with '/', no trailing '/', printable ASCII, at most 128.
bool valid_prefix(const std::string& prefix, std::string* why);

}  // namespace shardid::etcd
