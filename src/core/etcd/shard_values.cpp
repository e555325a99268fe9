// Shard value claims: keys, marks and shardid.shards (src/core/etcd/shard_values.hpp).
#include "core/etcd/shard_values.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "core/etcd/rules.hpp"

namespace shardid::etcd {

std::string space_name(const Shape& s)
{
    char buf[128];
    snprintf(buf, sizeof buf, "e%lldu%lldt%us%uq%u%s", (long long)s.epoch_ms, (long long)s.unit_ms,
             unsigned(s.time_bits), unsigned(s.shard_bits), unsigned(s.sequence_bits), s.wraps ? "w" : "");
    std::string name = buf;
    if (s.sequence_first != 0)
        name += "f" + std::to_string(unsigned(s.sequence_first));
    return name;
}

std::string shard_key(const std::string& prefix, const std::string& space, int64_t value)
{
    return prefix + "/shard/" + space + "/" + std::to_string(value);
}

std::string shard_mark_key(const std::string& prefix, const std::string& space, int64_t value)
{
    return prefix + "/shardmark/" + space + "/" + std::to_string(value);
}

std::string shard_want_key(const std::string& prefix, const std::string& space, int64_t value)
{
    return prefix + "/shardwant/" + space + "/" + std::to_string(value);
}

std::string shard_retired_key(const std::string& prefix, const std::string& space)
{
    return prefix + "/shardretired/" + space;
}

std::string shard_mark_value(const ShardMark& m)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%lld %016llx %d %s %llu %llu", (long long)m.floor_ms, (unsigned long long)m.token,
             m.holder, m.released ? "released" : "held", (unsigned long long)m.word, (unsigned long long)m.bound);
    return buf;
}

namespace {

// A decimal number of int64 (optionally negative), whole.
bool parse_int(const std::string& s, int64_t* out)
{
    if (s.empty() || s.size() > 20)
        return false;
    for (size_t i = 0; i < s.size(); i++)
        if (!(s[i] >= '0' && s[i] <= '9') && !(i == 0 && s[i] == '-' && s.size() > 1))
            return false;
    errno = 0;
    char* end = nullptr;
    const long long v = strtoll(s.c_str(), &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

std::vector<std::string> split(const std::string& s, char sep)
{
    std::vector<std::string> parts;
    size_t at = 0;
    for (;;) {
        const size_t next = s.find(sep, at);
        parts.push_back(s.substr(at, next == std::string::npos ? std::string::npos : next - at));
        if (next == std::string::npos)
            return parts;
        at = next + 1;
    }
}

std::string trim(const std::string& s)
{
    const size_t a = s.find_first_not_of(" \t");
    if (a == std::string::npos)
        return "";
    return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

}  // namespace

bool parse_shard_mark(const std::string& text, int max_holder, ShardMark* out)
{
    *out = ShardMark{};
    const std::vector<std::string> f = split(text, ' ');
    int64_t floor = 0, holder = 0, word = 0, bound = 0;
    uint64_t token = 0;
    if (f.size() != 6 || !parse_int(f[0], &floor) || floor < 0 || !parse_hex16(f[1], &token) ||
        !parse_int(f[2], &holder) || holder < 0 || holder > max_holder || (f[3] != "held" && f[3] != "released") ||
        !parse_int(f[4], &word) || word < 0 || !parse_int(f[5], &bound) || bound < 0 || (bound != 0 && f[3] != "held"))
        return false;
    out->floor_ms = floor;
    out->token = token;
    out->holder = int(holder);
    out->released = f[3] == "released";
    out->word = uint64_t(word);
    out->bound = uint64_t(bound);
    return true;
}

bool parse_retired(const std::string& text, uint64_t* word)
{
    int64_t w = 0;
    if (!parse_int(text, &w) || w < 0)
        return false;
    *word = uint64_t(w);
    return true;
}

bool keeps_bound(const Shape& shape) { return shape.unit_ms > 1000 && !shape.wraps && shape.sequence_bits < 63; }

namespace {

uint64_t bound_step(const Shape& shape) { return std::max<uint64_t>(1, (shape.sequence_max() + 1) / 8); }

}  // namespace

namespace {

// The least bound that reaches the fence's tick (0: none, the fence lies
// before the epoch or beyond the time field).
uint64_t reach_bound(const Shape& shape, int64_t reach_ms)
{
    const int64_t tick = shape.tick_of(reach_ms);
    if (tick < 0 || uint64_t(tick) > shape.time_max())
        return 0;
    return shape.pack(uint64_t(tick),
                      std::min(shape.sequence_max(), uint64_t(shape.sequence_first) + bound_step(shape) - 1));
}

}  // namespace

uint64_t bound_target(const Shape& shape, uint64_t need, int64_t now_ms, int64_t lead_ms, int64_t reach_ms)
{
    const int64_t wall = shape.tick_of(now_ms);
    if (wall >= 0 && uint64_t(wall) <= shape.time_max())
        need = std::max(need, shape.pack(uint64_t(wall), shape.sequence_first));
    uint64_t tick = shape.packed_tick(need);
    if (tick > shape.time_max())
        return 0;
    const uint64_t step = bound_step(shape), seq = shape.packed_sequence(need);
    uint64_t bound = shape.pack(tick, std::min(shape.sequence_max(), seq + step));
    // The rest of the tick, when the clock is within half the lead of its
    // end (IDs of the next tick lead the clock by less than the lead).
    const int64_t end_ms = shape.ms_of_tick(int64_t(tick) + 1);
    if (wall >= 0 && uint64_t(wall) == tick && end_ms - now_ms <= std::max<int64_t>(lead_ms, 0) / 2 &&
        tick < shape.time_max())
        bound = shape.pack(tick + 1, std::min(shape.sequence_max(), uint64_t(shape.sequence_first) + step - 1));
    return std::max(bound, reach_bound(shape, reach_ms));
}

bool bound_due(const Shape& shape, uint64_t bound, uint64_t need, int64_t now_ms, int64_t lead_ms, int64_t reach_ms)
{
    if (bound < need || bound < reach_bound(shape, reach_ms))
        return true;
    // Less than half a step left, unless the bound ends its tick already.
    if (bound - need < bound_step(shape) / 2 && shape.packed_sequence(bound) != shape.sequence_max())
        return true;
    const int64_t wall = shape.tick_of(now_ms);
    if (wall < 0 || uint64_t(wall) >= shape.time_max() || shape.packed_tick(bound) > uint64_t(wall))
        return false;
    return shape.ms_of_tick(wall + 1) - now_ms <= std::max<int64_t>(lead_ms, 0) / 2;
}

bool shard_floor(const ShardMark& mark, int64_t node_mark_ms, int64_t* floor_ms)
{
    if (mark.released) {
        *floor_ms = mark.floor_ms;
        return true;
    }
    if (node_mark_ms < 0)
        return false;
    *floor_ms = std::max(mark.floor_ms, node_mark_ms);
    return true;
}

bool parse_shard_set(const std::string& text, int64_t max, std::vector<ShardRange>* out, std::string* why)
{
    out->clear();
    if (trim(text).empty())
        return true;
    for (const std::string& raw : split(text, ',')) {
        const std::string part = trim(raw);
        const size_t dash = part.find('-', 1);
        ShardRange r{0, 0};
        const bool ok = dash == std::string::npos ? parse_int(part, &r.lo) && (r.hi = r.lo, true)
                                                  : parse_int(trim(part.substr(0, dash)), &r.lo) &&
                                                        parse_int(trim(part.substr(dash + 1)), &r.hi);
        if (!ok) {
            *why = "\"" + part + "\" is not a shard or a range of shards (write them as 0-511,1024)";
            return false;
        }
        if (r.lo < 0 || r.hi > max || r.lo > r.hi) {
            *why = "\"" + part + "\" is not a range within 0.." + std::to_string(max);
            return false;
        }
        out->push_back(r);
    }
    std::sort(out->begin(), out->end(), [](const ShardRange& a, const ShardRange& b) { return a.lo < b.lo; });
    return true;
}

bool shard_set_contains(const std::vector<ShardRange>& set, int64_t value)
{
    auto it = std::upper_bound(set.begin(), set.end(), value, [](int64_t v, const ShardRange& r) { return v < r.lo; });
    // The ranges may overlap: any range starting at or below the value may hold it.
    for (auto r = set.begin(); r != it; ++r)
        if (value <= r->hi)
            return true;
    return false;
}

std::string shard_set_multirange(const std::vector<ShardRange>& set)
{
    std::string text = "{";
    for (const ShardRange& r : set) {
        if (text.size() > 1)
            text += ',';
        text += '[' + std::to_string(r.lo) + ',' + std::to_string(r.hi) + ']';
    }
    return text + '}';
}

uint64_t text_fingerprint(const std::string& text)
{
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : text) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h == 0 ? 1 : h;
}

}  // namespace shardid::etcd
