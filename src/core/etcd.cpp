#include "core/etcd.hpp"

#include "core/coord.hpp"

#include <curl/curl.h>

#include <nlohmann/json.hpp>

namespace shardid::etcd {

using nlohmann::json;

namespace {

constexpr size_t max_answer = 1 << 20;  // a larger answer is not etcd's

std::string printable(const std::string& s, size_t max = 60) { return coord::printable(s, max); }

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
    if (s.empty() || s.size() > 20)
        return false;
    size_t i = s[0] == '-' ? 1 : 0;
    if (i == s.size())
        return false;
    int64_t r = 0;
    for (; i < s.size(); i++) {
        if (s[i] < '0' || s[i] > '9' || r > (INT64_MAX - 9) / 10)
            return false;
        r = r * 10 + (s[i] - '0');
    }
    *out = s[0] == '-' ? -r : r;
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

bool decode_kvs(const json& j, std::vector<KeyValue>* out)
{
    if (!j.contains("kvs"))
        return true;
    if (!j["kvs"].is_array())
        return false;
    for (const json& e : j["kvs"]) {
        KeyValue kv;
        int64_t lease = 0;
        if (!e.is_object() || !get_b64(e, "key", &kv.key) || !get_b64(e, "value", &kv.value) ||
            !get_int(e, "create_revision", 0, &kv.create_revision) || !get_int(e, "mod_revision", 0, &kv.mod_revision) ||
            !get_int(e, "lease", 0, &lease))
            return false;
        if (lease != 0)
            kv.lease = std::to_string(lease);
        out->push_back(std::move(kv));
    }
    return true;
}

size_t collect(char* data, size_t size, size_t n, void* user)
{
    auto* s = static_cast<std::string*>(user);
    if (s->size() + size * n > max_answer)
        return 0;  // curl fails the transfer
    s->append(data, size * n);
    return size * n;
}

}  // namespace

bool decode_grant(const std::string& body, Grant* out, std::string* why)
{
    json j;
    if (!parse_object(body, &j, why))
        return false;
    int64_t id = 0;
    if (!get_int(j, "ID", 0, &id) || id == 0 || !get_int(j, "TTL", 0, &out->ttl_s) || out->ttl_s <= 0) {
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
        *why = "etcd refused the keepalive: " + printable(r["message"].is_string() ? r["message"].get<std::string>() : "?");
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
    if (!j.contains("header") || (j.contains("succeeded") && !j["succeeded"].is_boolean())) {
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

std::string encode_txn(const std::vector<Compare>& compare, const std::vector<Op>& success,
                       const std::vector<Op>& failure)
{
    auto ops = [](const std::vector<Op>& list) {
        json a = json::array();
        for (const Op& op : list) {
            if (op.put) {
                json p = {{"key", base64_encode(op.key)}, {"value", base64_encode(op.value)}};
                if (!op.lease.empty())
                    p["lease"] = op.lease;
                a.push_back({{"request_put", p}});
            } else {
                a.push_back({{"request_range", {{"key", base64_encode(op.key)}}}});
            }
        }
        return a;
    };
    json c = json::array();
    for (const Compare& cmp : compare) {
        json e = {{"key", base64_encode(cmp.key)}, {"result", "EQUAL"}};
        switch (cmp.target) {
        case Compare::Target::create:
            e["target"] = "CREATE";
            e["create_revision"] = std::to_string(cmp.revision);
            break;
        case Compare::Target::mod:
            e["target"] = "MOD";
            e["mod_revision"] = std::to_string(cmp.revision);
            break;
        case Compare::Target::lease:
            e["target"] = "LEASE";
            e["lease"] = cmp.lease;
            break;
        }
        c.push_back(e);
    }
    return json{{"compare", c}, {"success", ops(success)}, {"failure", ops(failure)}}.dump();
}

Client::Client(Config config) : config_(std::move(config))
{
    static bool initialized = false;
    if (!initialized) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        initialized = true;
    }
    curl_ = curl_easy_init();
}

Client::~Client()
{
    if (curl_ != nullptr)
        curl_easy_cleanup(static_cast<CURL*>(curl_));
}

bool Client::post_once(const char* path, const std::string& body, std::string* answer, long* status, std::string* why)
{
    CURL* c = static_cast<CURL*>(curl_);
    if (c == nullptr) {
        *why = "libcurl could not be initialised";
        return false;
    }
    curl_easy_reset(c);
    const std::string url = endpoint() + path;
    answer->clear();
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    std::string auth;
    if (!token_.empty() && std::string(path) != "/v3/auth/authenticate") {
        auth = "Authorization: " + token_;
        headers = curl_slist_append(headers, auth.c_str());
    }
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, long(body.size()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, long(config_.timeout_ms));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(config_.timeout_ms));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!config_.cacert.empty())
        curl_easy_setopt(c, CURLOPT_CAINFO, config_.cacert.c_str());
    if (!config_.cert.empty())
        curl_easy_setopt(c, CURLOPT_SSLCERT, config_.cert.c_str());
    if (!config_.key.empty())
        curl_easy_setopt(c, CURLOPT_SSLKEY, config_.key.c_str());
    requests_++;
    const CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK) {
        *why = url + ": " + curl_easy_strerror(rc);
        return false;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    return true;
}

bool Client::authenticate(std::string* why)
{
    token_.clear();
    const std::string body = json{{"name", config_.user}, {"password", config_.password}}.dump();
    std::string answer;
    long status = 0;
    if (!post_once("/v3/auth/authenticate", body, &answer, &status, why))
        return false;
    if (!decode_token(answer, &token_, why)) {
        *why = "authentication as \"" + printable(config_.user) + "\" failed: " + *why;
        return false;
    }
    return true;
}

bool Client::post(const char* path, const std::string& body, std::string* answer, std::string* why)
{
    try {
        std::string transport;
        for (size_t tried = 0; tried < config_.endpoints.size(); tried++) {
            if (tried > 0)
                current_ = (current_ + 1) % config_.endpoints.size();
            if (!config_.user.empty() && token_.empty() && !authenticate(why)) {
                if (why->find("authentication as") == 0)
                    return false;  // etcd answered: wrong credentials, not a dead endpoint
                transport = *why;
                continue;
            }
            long status = 0;
            if (!post_once(path, body, answer, &status, why)) {
                transport = *why;
                continue;
            }
            if (status != 200 && !config_.user.empty() && answer->find("token") != std::string::npos) {
                if (!authenticate(why) || !post_once(path, body, answer, &status, why))
                    return false;
            }
            if (status != 200) {
                json j;
                if (parse_object(*answer, &j, why))
                    *why = "HTTP status " + std::to_string(status) + " from " + endpoint() + ": \"" +
                           printable(*answer) + "\"";
                else if (why->find("etcd refused") != 0)
                    *why = "HTTP status " + std::to_string(status) + " from " + endpoint() + ": \"" +
                           printable(*answer) + "\"";
                return false;
            }
            return true;
        }
        *why = transport;
        return false;
    } catch (const std::exception& e) {
        *why = std::string("the etcd client failed: ") + e.what();
        return false;
    }
}

bool Client::grant(int64_t ttl_s, Grant* out, std::string* why)
{
    std::string answer;
    return post("/v3/lease/grant", json{{"TTL", ttl_s}}.dump(), &answer, why) && decode_grant(answer, out, why);
}

bool Client::keepalive(const std::string& lease, int64_t* ttl_s, bool* alive, std::string* why)
{
    std::string answer;
    return post("/v3/lease/keepalive", json{{"ID", lease}}.dump(), &answer, why) &&
           decode_keepalive(answer, ttl_s, alive, why);
}

bool Client::revoke(const std::string& lease, std::string* why)
{
    std::string answer;
    json j;
    return post("/v3/lease/revoke", json{{"ID", lease}}.dump(), &answer, why) && parse_object(answer, &j, why);
}

bool Client::txn(const std::string& body, Txn* out, std::string* why)
{
    std::string answer;
    return post("/v3/kv/txn", body, &answer, why) && decode_txn(answer, out, why);
}

bool Client::range(const std::string& key, const std::string& range_end, std::vector<KeyValue>* out, std::string* why)
{
    try {
        json req = {{"key", base64_encode(key)}};
        if (!range_end.empty())
            req["range_end"] = base64_encode(range_end);
        std::string answer;
        return post("/v3/kv/range", req.dump(), &answer, why) && decode_range(answer, out, why);
    } catch (const std::exception& e) {
        *why = std::string("the etcd client failed: ") + e.what();
        return false;
    }
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
