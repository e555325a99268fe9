#include "core/etcd/rules.hpp"

#include "core/text.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace shardid::etcd {

int lowest_free(const std::vector<int>& held, int min, int max)
{
    std::vector<int> sorted(held);
    std::sort(sorted.begin(), sorted.end());
    int want = min;
    for (int h : sorted) {
        if (h < want)
            continue;
        if (h > want)
            break;
        want++;
    }
    return want <= max ? want : -1;
}

int choose_id(const std::string& prefix, const std::vector<std::pair<std::string, std::string>>& nodes,
              const std::string& lease, int last_id, int min, int max)
{
    std::vector<int> taken;
    for (const auto& [key, key_lease] : nodes) {
        const int n = node_id_of_key(prefix, key);
        if (n < 0)
            continue;
        if (!lease.empty() && key_lease == lease)
            return n;  // ours already (an answer lost on the way back)
        taken.push_back(n);
    }
    if (last_id >= 0 && std::find(taken.begin(), taken.end(), last_id) == taken.end())
        return last_id;
    return lowest_free(taken, min, max);
}

std::string node_key(const std::string& prefix, int id) { return prefix + "/node/" + std::to_string(id); }
std::string mark_key(const std::string& prefix, int id) { return prefix + "/mark/" + std::to_string(id); }
std::string counter_key(const std::string& prefix, const char* name) { return prefix + "/counter/" + name; }
std::string counter_raised_key(const std::string& counter_key) { return counter_key + "/raised"; }
std::string call_key_key(const std::string& prefix) { return prefix + "/call_number_key"; }
std::string call_eras_key(const std::string& prefix) { return counter_key(prefix, "run") + "/eras"; }

std::string prefix_end(const std::string& prefix)
{
    std::string end = prefix + "/";
    end.back() = char(end.back() + 1);  // '/' + 1 = '0'
    return end;
}

int node_id_of_key(const std::string& prefix, const std::string& key) { return id_of_key(prefix, "/node/", key); }
int mark_id_of_key(const std::string& prefix, const std::string& key) { return id_of_key(prefix, "/mark/", key); }

int id_of_key(const std::string& prefix, const char* kind, const std::string& key)
{
    const std::string head = prefix + kind;
    if (key.compare(0, head.size(), head) != 0)
        return -1;
    int64_t id = 0;
    if (!parse_count(key.substr(head.size()), &id) || id > 0x7fffffff)
        return -1;
    return int(id);
}

bool parse_hex16(const std::string& text, uint64_t* out)
{
    if (text.size() != 16)
        return false;
    uint64_t t = 0;
    for (char c : text) {
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return false;
        t = t << 4 | uint64_t(d);
    }
    *out = t;
    return true;
}

bool parse_token(const std::string& text, uint64_t* out) { return parse_hex16(text, out) && *out != 0; }

bool parse_count(const std::string& text, int64_t* out)
{
    if (text.empty() || text.size() > 19)
        return false;
    uint64_t v = 0;
    for (char c : text) {
        if (c < '0' || c > '9')
            return false;
        v = v * 10 + uint64_t(c - '0');
    }
    if (v > uint64_t(INT64_MAX))
        return false;
    *out = int64_t(v);
    return true;
}

std::string holder_value(const HolderRecord& h)
{
    nlohmann::json j = {
        {"host", h.host}, {"port", h.port}, {"system_identifier", h.system_identifier}, {"since", h.since}};
    return j.dump();
}

std::string describe_holder(const std::string& value)
{
    try {
        const nlohmann::json j = nlohmann::json::parse(value);
        if (j.is_object() && j.value("host", nlohmann::json()).is_string() &&
            j.value("port", nlohmann::json()).is_number_integer()) {
            std::string s =
                "host " + printable(j["host"].get<std::string>()) + " port " + std::to_string(j["port"].get<int64_t>());
            if (j.contains("system_identifier") && j["system_identifier"].is_string())
                s += ", system identifier " + printable(j["system_identifier"].get<std::string>());
            if (j.contains("since") && j["since"].is_string())
                s += ", since " + printable(j["since"].get<std::string>());
            return s;
        }
    } catch (...) {
    }
    return "an unknown holder (the key holds \"" + printable(value) + "\")";
}

bool is_holder(const std::string& value)
{
    try {
        const nlohmann::json j = nlohmann::json::parse(value);
        return j.is_object() && j.value("host", nlohmann::json()).is_string() &&
               j.value("port", nlohmann::json()).is_number_integer();
    } catch (...) {
        return false;
    }
}

bool same_node(const std::string& value, const HolderRecord& me)
{
    try {
        const nlohmann::json j = nlohmann::json::parse(value);
        return j.is_object() && j.value("host", nlohmann::json()) == me.host &&
               j.value("port", nlohmann::json()) == me.port &&
               j.value("system_identifier", nlohmann::json()) == me.system_identifier;
    } catch (...) {
        return false;
    }
}

std::string mark_value(const Mark& mark)
{
    char buf[96];
    snprintf(buf, sizeof buf, "%lld %016llx %lld %s", (long long)mark.end_ms, (unsigned long long)mark.token,
             (long long)mark.ttl_ms, mark.released ? "released" : "held");
    return buf;
}

bool parse_mark(const std::string& text, Mark* out)
{
    *out = Mark{};
    const size_t sp = text.find(' ');
    if (sp == std::string::npos)
        return parse_count(text, &out->end_ms);  // a plain number: 1.2, or by hand
    // Exactly four fields, each as mark_value() writes it.
    const size_t sp2 = text.find(' ', sp + 1), sp3 = sp2 == std::string::npos ? sp2 : text.find(' ', sp2 + 1);
    if (sp3 == std::string::npos || text.find(' ', sp3 + 1) != std::string::npos)
        return false;
    const std::string end = text.substr(0, sp), token = text.substr(sp + 1, sp2 - sp - 1),
                      ttl = text.substr(sp2 + 1, sp3 - sp2 - 1), state = text.substr(sp3 + 1);
    uint64_t t = 0;
    if (!parse_count(end, &out->end_ms) || !parse_token(token, &t) || !parse_count(ttl, &out->ttl_ms) ||
        out->ttl_ms < min_lease_ttl_s * 1000 || out->ttl_ms > max_lease_ttl_s * 1000 ||
        (state != "held" && state != "released"))
        return false;
    out->token = t;
    out->released = state == "released";
    return true;
}

bool mark_plausible(int64_t end_ms, int64_t now_ms, int64_t max_lead_ms, int64_t ttl_ms, std::string* why)
{
    const int64_t lead = max_lead_ms > 0 ? max_lead_ms : 0;
    const int64_t reach =
        sat_add(sat_add(sat_add(sat_add(now_ms, lead), lead), ttl_ms > 0 ? ttl_ms : 0), window_span_ms);
    if (end_ms <= reach)
        return true;
    const int64_t ahead = end_ms - now_ms;  // both non-negative: no overflow
    char buf[200];
    snprintf(buf, sizeof buf,
             "it lies %lld s ahead of this node's clock, beyond what a holder could have recorded "
             "(shardid.max_clock_lead, the lease and the window's span: %lld s)",
             (long long)(ahead / 1000), (long long)((reach - now_ms) / 1000));
    *why = buf;
    return false;
}

int64_t takeover_wait_ms(bool has_mark, const Mark& previous, bool own, int64_t own_ttl_ms)
{
    if (!has_mark || own || previous.released)
        return 0;
    const int64_t ttl = previous.ttl_ms > 0 ? previous.ttl_ms : own_ttl_ms;
    return ttl - fence_margin_ms(ttl);
}

bool counter_next(int64_t current, int64_t version, int64_t raised, int64_t floor, int64_t max, int64_t* next,
                  std::string* why)
{
    if (current < 0 || version < 0 || raised < 0 || raised > max) {
        *why = raised > max ? "the highest floor recorded for it (" + std::to_string(raised) +
                                  ") is beyond what the counter's field holds (" + std::to_string(max) + ")"
                            : "it is negative";
        return false;
    }
    if (current > sat_add(version, raised)) {
        *why = "it is " + std::to_string(current) + " after " + std::to_string(version) +
               " writes, more than shardid's own writes (one more each, or a node's floor up to " +
               std::to_string(raised) + ") could have made it";
        return false;
    }
    *next = sat_add(current > floor ? current : floor, 1);
    if (*next > max)
        *next = sat_add(max, 1);  // none left: the caller refuses, and writes nothing
    return true;
}

bool parse_endpoints(const std::string& text, std::vector<std::string>* out, std::string* why)
{
    out->clear();
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string::npos)
            comma = text.size();
        std::string e = text.substr(start, comma - start);
        while (!e.empty() && e.front() == ' ')
            e.erase(0, 1);
        while (!e.empty() && e.back() == ' ')
            e.pop_back();
        while (!e.empty() && e.back() == '/')
            e.pop_back();
        size_t rest;
        if (e.compare(0, 7, "http://") == 0)
            rest = 7;
        else if (e.compare(0, 8, "https://") == 0)
            rest = 8;
        else {
            *why = "\"" + printable(e) + "\" is not an http:// or https:// URL";
            return false;
        }
        const std::string hostport = e.substr(rest);
        // Credentials in a URL would reach the server log and every message
        // that names the endpoint: refused, and never quoted.
        if (hostport.find('@') != std::string::npos) {
            *why = "endpoint " + std::to_string(out->size() + 1) +
                   " has credentials in its URL (user:password@host), which shardid never logs or shows: give the "
                   "user in shardid.etcd_user and the password in shardid.etcd_password_file";
            return false;
        }
        const size_t colon = hostport.rfind(':');
        int64_t port = 0;
        if (hostport.find('/') != std::string::npos || colon == std::string::npos || colon == 0 ||
            !parse_count(hostport.substr(colon + 1), &port) || port < 1 || port > 65535) {
            *why = "\"" + printable(e) + "\" is not of the form http://host:port";
            return false;
        }
        for (char c : hostport)
            if (c <= 32 || c >= 127) {
                *why = "\"" + printable(e) + "\" has a character a host name cannot have";
                return false;
            }
        out->push_back(e);
        start = comma + 1;
    }
    if (out->empty()) {
        *why = "no endpoint is given";
        return false;
    }
    return true;
}

bool valid_prefix(const std::string& prefix, std::string* why)
{
    if (prefix.size() < 2 || prefix.size() > 128 || prefix.front() != '/' || prefix.back() == '/') {
        *why = "it must start with \"/\", not end with one, and have 2 to 128 characters";
        return false;
    }
    for (char c : prefix)
        if (c <= 32 || c >= 127) {
            *why = "it must be printable ASCII without spaces";
            return false;
        }
    return true;
}

std::string call_eras_format(const CallEras& eras)
{
    std::string out;
    for (int i = 0; i < eras.n; i++) {
        if (i > 0)
            out += ' ';
        out += std::to_string(eras.list[i].era) + ':' + std::to_string(eras.list[i].key) + ':' +
               std::to_string(eras.list[i].low);
    }
    return out;
}

bool call_eras_parse(const char* text, size_t len, CallEras* out)
{
    CallEras eras;
    size_t i = 0;
    // A decimal of up to `max_digits` digits, optionally "-1" (neg).
    auto number = [&](int64_t* v, size_t max_digits, bool neg) {
        bool minus = false;
        if (neg && i < len && text[i] == '-') {
            minus = true;
            i++;
        }
        size_t digits = 0;
        int64_t x = 0;
        for (; i < len && text[i] >= '0' && text[i] <= '9'; i++, digits++) {
            if (digits == max_digits || x > (INT64_MAX - (text[i] - '0')) / 10)
                return false;
            x = x * 10 + (text[i] - '0');
        }
        *v = minus ? -x : x;
        return digits > 0 && (!minus || x == 1);
    };
    while (i < len) {
        if (i > 0 && text[i++] != ' ')
            return false;
        int64_t era = 0, key = 0, low = 0;
        if (!number(&era, 3, false) || i == len || text[i++] != ':' || !number(&key, 19, false) || i == len ||
            text[i++] != ':' || !number(&low, 8, true) || low > call_era_full ||
            !eras.append(int(era), key, int32_t(low)))
            return false;
    }
    *out = eras;
    return true;
}

}  // namespace shardid::etcd
