// The decoders of etcd's answers (src/core/etcd/wire.hpp; the request
// bodies: src/core/etcd/requests.cpp), and base64 both ways. Pure: no
// PostgreSQL, no network.
#include "core/etcd/wire.hpp"

#include "core/text.hpp"

#include <nlohmann/json.hpp>

namespace shardid::etcd {

using nlohmann::json;

namespace {

std::string printable(const std::string& s, size_t max = 60) { return shardid::printable(s, max); }

// The body as a JSON object, or false with a reason; an etcd error object
// ({"error": ..., "code": ..., "message": ...}) is a failure with its message.
bool parse_object(const std::string& body, json* out, std::string* why)
{
    try {
        *out = json::parse(body);
    } catch (const std::exception&) {
        *why = "the answer is not JSON: \"" + printable(body) + "\"";
        return false;
    }
    if (!out->is_object()) {
        *why = "the answer is not a JSON object: \"" + printable(body) + "\"";
        return false;
    }
    if (out->contains("code") && out->contains("message")) {
        const json& m = (*out)["message"];
        *why = "etcd refused the request: " + (m.is_string() ? printable(m.get<std::string>(), 160) : std::string("?"));
        return false;
    }
    return true;
}

// Decimal digits, whole, at most `limit`.
bool digits(const std::string& s, uint64_t limit, uint64_t* out)
{
    if (s.empty() || s.size() > 20)
        return false;
    uint64_t r = 0;
    for (char c : s) {
        const uint64_t d = uint64_t(c - '0');
        if (c < '0' || c > '9' || r > (limit - d) / 10)
            return false;
        r = r * 10 + d;
    }
    *out = r;
    return true;
}

// An int64 sent as a JSON string of digits (or, leniently, a JSON integer);
// absent is `fallback`.
bool get_int(const json& j, const char* name, int64_t fallback, int64_t* out)
{
    if (!j.contains(name)) {
        *out = fallback;
        return true;
    }
    const json& v = j[name];
    if (v.is_number_integer()) {
        *out = v.get<int64_t>();
        return true;
    }
    if (!v.is_string())
        return false;
    const std::string s = v.get<std::string>();
    const bool negative = !s.empty() && s[0] == '-';
    uint64_t r = 0;
    if (!digits(negative ? s.substr(1) : s, uint64_t(INT64_MAX), &r))
        return false;
    *out = negative ? -int64_t(r) : int64_t(r);
    return true;
}

bool get_b64(const json& j, const char* name, std::string* out)
{
    if (!j.contains(name)) {
        out->clear();
        return true;
    }
    return j[name].is_string() && base64_decode(j[name].get<std::string>(), out);
}

// A uint64 sent as a JSON string of digits (cluster ids use all 64 bits).
bool get_uint(const json& j, const char* name, uint64_t* out)
{
    *out = 0;
    if (!j.contains(name))
        return true;
    const json& v = j[name];
    if (v.is_number_unsigned()) {
        *out = v.get<uint64_t>();
        return true;
    }
    return v.is_string() && digits(v.get<std::string>(), UINT64_MAX, out);
}

// The answer's header (absent: zeros); false when it is there and malformed.
bool decode_header(const json& j, Header* out)
{
    *out = Header{};
    if (!j.contains("header"))
        return true;
    const json& h = j["header"];
    return h.is_object() && get_uint(h, "cluster_id", &out->cluster_id) && get_int(h, "revision", 0, &out->revision) &&
           out->revision >= 0;
}

bool decode_kv(const json& e, KeyValue* kv)
{
    int64_t lease = 0;
    if (!e.is_object() || !get_b64(e, "key", &kv->key) || !get_b64(e, "value", &kv->value) ||
        !get_int(e, "create_revision", 0, &kv->create_revision) || !get_int(e, "mod_revision", 0, &kv->mod_revision) ||
        !get_int(e, "version", 0, &kv->version) || !get_int(e, "lease", 0, &lease))
        return false;
    if (lease != 0)
        kv->lease = std::to_string(lease);
    return true;
}

bool decode_kvs(const json& j, std::vector<KeyValue>* out)
{
    if (!j.contains("kvs"))
        return true;
    if (!j["kvs"].is_array())
        return false;
    for (const json& e : j["kvs"]) {
        KeyValue kv;
        if (!decode_kv(e, &kv))
            return false;
        out->push_back(std::move(kv));
    }
    return true;
}

}  // namespace

bool decode_grant(const std::string& body, Grant* out, std::string* why)
{
    json j;
    if (!parse_object(body, &j, why))
        return false;
    int64_t id = 0;
    if (!get_int(j, "ID", 0, &id) || id == 0 || !get_int(j, "TTL", 0, &out->ttl_s) || out->ttl_s <= 0 ||
        !decode_header(j, &out->header)) {
        *why = "the lease grant answer has no lease ID and TTL: \"" + printable(body) + "\"";
        return false;
    }
    out->id = std::to_string(id);
    return true;
}

bool decode_keepalive(const std::string& body, int64_t* ttl_s, bool* alive, std::string* why)
{
    json j;
    if (!parse_object(body, &j, why))
        return false;
    if (!j.contains("result") || !j["result"].is_object()) {
        *why = "the keepalive answer has no result: \"" + printable(body) + "\"";
        return false;
    }
    const json& r = j["result"];
    if (r.contains("error") && r.contains("message")) {
        *why = "etcd refused the keepalive: " +
               printable(r["message"].is_string() ? r["message"].get<std::string>() : "?");
        return false;
    }
    if (!get_int(r, "TTL", 0, ttl_s)) {
        *why = "the keepalive answer's TTL is not a number: \"" + printable(body) + "\"";
        return false;
    }
    *alive = *ttl_s > 0;
    return true;
}

bool decode_txn(const std::string& body, Txn* out, std::string* why)
{
    json j;
    if (!parse_object(body, &j, why))
        return false;
    if (!j.contains("header") || (j.contains("succeeded") && !j["succeeded"].is_boolean()) ||
        !decode_header(j, &out->header)) {
        *why = "the transaction answer is not etcd's: \"" + printable(body) + "\"";
        return false;
    }
    out->succeeded = j.value("succeeded", false);
    out->kvs.clear();
    if (j.contains("responses")) {
        if (!j["responses"].is_array()) {
            *why = "the transaction answer's responses are not a list";
            return false;
        }
        for (const json& r : j["responses"])
            if (r.is_object() && r.contains("response_range") &&
                (!r["response_range"].is_object() || !decode_kvs(r["response_range"], &out->kvs))) {
                *why = "a range response of the transaction is malformed";
                return false;
            }
    }
    return true;
}

bool decode_range(const std::string& body, std::vector<KeyValue>* out, std::string* why)
{
    json j;
    if (!parse_object(body, &j, why))
        return false;
    out->clear();
    if (!j.contains("header") || !decode_kvs(j, out)) {
        *why = "the range answer is not etcd's: \"" + printable(body) + "\"";
        return false;
    }
    return true;
}

bool decode_range_page(const std::string& body, RangePage* out, std::string* why)
{
    json j;
    *out = RangePage{};
    if (!parse_object(body, &j, why))
        return false;
    if (!j.contains("header") || !decode_header(j, &out->header) || !decode_kvs(j, &out->kvs) ||
        (j.contains("more") && !j["more"].is_boolean())) {
        *why = "the range answer is not etcd's: \"" + printable(body) + "\"";
        return false;
    }
    out->more = j.value("more", false);
    return true;
}

bool decode_watch_message(const std::string& line, WatchMessage* out, std::string* why)
{
    *out = WatchMessage{};
    json j;
    try {
        j = json::parse(line);
    } catch (const std::exception&) {
        *why = "a watch message is not JSON: \"" + printable(line) + "\"";
        return false;
    }
    if (!j.is_object()) {
        *why = "a watch message is not a JSON object: \"" + printable(line) + "\"";
        return false;
    }
    // The gateway's error in a stream: {"error": {"grpc_code": .., "message": ..}}.
    if (j.contains("error")) {
        const json& e = j["error"];
        const json m = e.is_object() && e.contains("message") ? e["message"] : json();
        *why = "etcd refused the watch: " + (m.is_string() ? printable(m.get<std::string>(), 160) : printable(line));
        return false;
    }
    if (!j.contains("result") || !j["result"].is_object()) {
        *why = "a watch message has no result: \"" + printable(line) + "\"";
        return false;
    }
    const json& r = j["result"];
    if (!decode_header(r, &out->header) || (r.contains("created") && !r["created"].is_boolean()) ||
        (r.contains("canceled") && !r["canceled"].is_boolean()) ||
        !get_int(r, "compact_revision", 0, &out->compact_revision) || out->compact_revision < 0 ||
        (r.contains("events") && !r["events"].is_array())) {
        *why = "a watch message is not etcd's: \"" + printable(line) + "\"";
        return false;
    }
    out->created = r.value("created", false);
    out->canceled = r.value("canceled", false);
    if (r.contains("events")) {
        for (const json& e : r["events"]) {
            WatchEvent ev;
            if (!e.is_object() || !e.contains("kv") || !decode_kv(e["kv"], &ev.kv) || ev.kv.key.empty() ||
                ev.kv.mod_revision <= 0 || (e.contains("type") && !e["type"].is_string())) {
                *why = "a watch event is not etcd's: \"" + printable(line) + "\"";
                return false;
            }
            const std::string type = e.value("type", std::string("PUT"));
            if (type != "PUT" && type != "DELETE") {
                *why = "a watch event has the type \"" + printable(type) + "\"";
                return false;
            }
            ev.deleted = type == "DELETE";
            out->events.push_back(std::move(ev));
        }
    }
    return true;
}

bool decode_lease_keys(const std::string& body, std::vector<std::string>* keys, bool* alive, std::string* why)
{
    json j;
    if (!parse_object(body, &j, why))
        return false;
    keys->clear();
    int64_t ttl = 0;
    if (!j.contains("header") || !get_int(j, "TTL", 0, &ttl)) {
        *why = "the lease answer is not etcd's: \"" + printable(body) + "\"";
        return false;
    }
    *alive = ttl > 0;
    if (!j.contains("keys"))
        return true;
    if (!j["keys"].is_array()) {
        *why = "the lease answer's keys are not a list: \"" + printable(body) + "\"";
        return false;
    }
    for (const json& k : j["keys"]) {
        std::string key;
        if (!k.is_string() || !base64_decode(k.get<std::string>(), &key)) {
            *why = "the lease answer holds a key that is not base64: \"" + printable(body) + "\"";
            return false;
        }
        keys->push_back(std::move(key));
    }
    return true;
}

bool decode_token(const std::string& body, std::string* token, std::string* why)
{
    json j;
    if (!parse_object(body, &j, why))
        return false;
    if (!j.contains("token") || !j["token"].is_string() || j["token"].get<std::string>().empty()) {
        *why = "the authentication answer has no token";
        return false;
    }
    *token = j["token"].get<std::string>();
    return true;
}

bool decode_ack(const std::string& body, std::string* why)
{
    json j;
    return parse_object(body, &j, why);
}

std::string base64_encode(const std::string& in)
{
    static const char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
        out += table[v >> 18];
        out += table[(v >> 12) & 63];
        out += table[(v >> 6) & 63];
        out += table[v & 63];
    }
    if (i + 1 == in.size()) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16;
        out += table[v >> 18];
        out += table[(v >> 12) & 63];
        out += "==";
    } else if (i + 2 == in.size()) {
        const uint32_t v = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8;
        out += table[v >> 18];
        out += table[(v >> 12) & 63];
        out += table[(v >> 6) & 63];
        out += '=';
    }
    return out;
}

bool base64_decode(const std::string& in, std::string* out)
{
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z')
            return c - 'A';
        if (c >= 'a' && c <= 'z')
            return c - 'a' + 26;
        if (c >= '0' && c <= '9')
            return c - '0' + 52;
        if (c == '+')
            return 62;
        if (c == '/')
            return 63;
        return -1;
    };
    out->clear();
    if (in.size() % 4 != 0)
        return false;
    for (size_t i = 0; i < in.size(); i += 4) {
        const bool last = i + 4 == in.size();
        const int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=') : 0;
        if (pad == 1 && in[i + 2] == '=')
            return false;
        int v[4];
        for (int k = 0; k < 4 - pad; k++)
            if ((v[k] = value(in[i + k])) < 0)
                return false;
        for (int k = 4 - pad; k < 4; k++)
            v[k] = 0;
        const uint32_t w = uint32_t(v[0]) << 18 | uint32_t(v[1]) << 12 | uint32_t(v[2]) << 6 | uint32_t(v[3]);
        *out += char(w >> 16);
        if (pad < 2)
            *out += char((w >> 8) & 255);
        if (pad < 1)
            *out += char(w & 255);
    }
    return true;
}

}  // namespace shardid::etcd
