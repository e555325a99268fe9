// Node ids from a coordination service (etcd): the rules, pure. The glue's
// background worker (src/pg/coord_worker.cpp) talks to etcd through
// src/etcd/client.hpp and asks these functions what to do; test/unit/
// coord_test.cpp drives them with a fake clock.
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

namespace shardid::coord {

// How long before the lease could expire on the etcd side the holder stops.
constexpr int64_t fence_margin_ms(int64_t ttl_ms) { return ttl_ms / 5 > 1000 ? ttl_ms / 5 : 1000; }

// Until when (monotonic ms) a holder may issue, given the monotonic time at
// which it sent the last request that etcd answered by renewing the lease.
constexpr int64_t fence_deadline_ms(int64_t sent_ms, int64_t ttl_ms)
{
    return sent_ms + ttl_ms - fence_margin_ms(ttl_ms);
}

// How often the holder renews its lease.
constexpr int64_t keepalive_every_ms(int64_t ttl_ms) { return ttl_ms / 3; }

// How long one request may take: a third of what the fence leaves after a
// keepalive, so a keepalive that hangs is given up in time for the next.
constexpr int64_t request_timeout_ms(int64_t ttl_ms)
{
    const int64_t t = (ttl_ms - fence_margin_ms(ttl_ms) - keepalive_every_ms(ttl_ms)) / 2;
    return t < 300 ? 300 : t > 5000 ? 5000 : t;
}

// How far ahead of the wall clock the holder records its window's end. A new
// holder of the id starts above it, so it is also how far a node that takes
// over an id after a crash may run ahead of its clock (keep it well inside
// shardid.max_clock_lead).
constexpr int64_t window_span_ms = 2000;

// Whether the window ending at end_ms must move: half used by the wall
// clock, or a generator needed a tick starting at need_ms (-1: none) beyond it.
constexpr bool window_due(int64_t now_ms, int64_t end_ms, int64_t need_ms)
{
    return now_ms + window_span_ms / 2 >= end_ms || need_ms >= end_ms;
}

// The window's new end: a span beyond the later of the wall clock, the
// tick a generator needs and the floor the holder started above; never below
// the end recorded before.
constexpr int64_t window_target(int64_t now_ms, int64_t need_ms, int64_t floor_ms, int64_t recorded_ms)
{
    int64_t from = now_ms;
    if (need_ms > from)
        from = need_ms;
    if (floor_ms > from)
        from = floor_ms;
    const int64_t end = from + window_span_ms;
    return end > recorded_ms ? end : recorded_ms;
}

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
// The first key after every key under `prefix`/ (etcd's range_end).
std::string prefix_end(const std::string& prefix);
// The id in a node key under `prefix` (-1: not a node key).
int node_id_of_key(const std::string& prefix, const std::string& key);

// A non-negative decimal integer value, exactly: digits only, no sign,
// no spaces, at most int64's maximum; false for anything else.
bool parse_count(const std::string& text, int64_t* out);

// Who holds an id: the value of its node key.
struct Holder {
    std::string host;
    int port = 0;
    std::string system_identifier;
    std::string since;  // ISO 8601, UTC
};
std::string holder_value(const Holder& h);
// A readable description of a node key's value ("host h port p, system
// identifier s, since t"), or of what it holds when that is not a holder.
std::string describe_holder(const std::string& value);

// Endpoints: "http://h:p[,https://h:p...]". False, with a reason, for an
// empty list or an entry that is not http(s)://host:port with no path.
bool parse_endpoints(const std::string& text, std::vector<std::string>* out, std::string* why);

// A prefix: starts with '/', no trailing '/', printable ASCII, at most 128.
bool valid_prefix(const std::string& prefix, std::string* why);

}  // namespace shardid::coord
