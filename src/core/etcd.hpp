// A client of etcd's v3 JSON gateway (/v3/lease/*, /v3/kv/*, /v3/auth/*),
// over libcurl, with nlohmann::json: keys and values base64, 64-bit numbers
// as strings. No PostgreSQL header; never throws (every failure is a
// false return with a reason), so the glue can call it from a background
// worker without C++ exceptions reaching PostgreSQL.
//
// The answer decoders are separate functions so that tests can feed them
// what a broken proxy or a truncated body looks like.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardid::etcd {

struct KeyValue {
    std::string key, value;
    int64_t create_revision = 0, mod_revision = 0;
    std::string lease;  // "" when the key has none
};

// What a call gives back.
struct Grant {
    std::string id;
    int64_t ttl_s = 0;
};
struct Txn {
    bool succeeded = false;
    std::vector<KeyValue> kvs;  // every kv of the range responses of the branch taken
};

// Decoders of the gateway's answers; false with a reason for anything the
// API does not promise.
bool decode_grant(const std::string& body, Grant* out, std::string* why);
// *alive is false when etcd no longer knows the lease (no TTL, or TTL 0).
bool decode_keepalive(const std::string& body, int64_t* ttl_s, bool* alive, std::string* why);
bool decode_txn(const std::string& body, Txn* out, std::string* why);
bool decode_range(const std::string& body, std::vector<KeyValue>* out, std::string* why);
bool decode_token(const std::string& body, std::string* token, std::string* why);

// One comparison of a transaction.
struct Compare {
    enum class Target { create, mod, lease } target;
    std::string key;
    int64_t revision = 0;  // create, mod
    std::string lease;     // lease ("0": the key has no lease, or is absent)
};
// One request of a transaction: a put (lease "" for none) or a range of one key.
struct Op {
    bool put;
    std::string key, value, lease;
};
std::string encode_txn(const std::vector<Compare>& compare, const std::vector<Op>& success,
                       const std::vector<Op>& failure);

struct Config {
    std::vector<std::string> endpoints;
    std::string user, password;             // empty user: no authentication
    std::string cacert, cert, key;          // TLS files, empty for none
    int64_t timeout_ms = 2000;
};

class Client {
public:
    explicit Client(Config config);
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    bool grant(int64_t ttl_s, Grant* out, std::string* why);
    bool keepalive(const std::string& lease, int64_t* ttl_s, bool* alive, std::string* why);
    bool revoke(const std::string& lease, std::string* why);
    bool txn(const std::string& body, Txn* out, std::string* why);
    bool range(const std::string& key, const std::string& range_end, std::vector<KeyValue>* out, std::string* why);

    // The endpoint the last request went to.
    const std::string& endpoint() const { return config_.endpoints[current_]; }
    uint64_t requests() const { return requests_; }

private:
    // POSTs `body` to `path`, trying the endpoints in turn on transport
    // failures; authenticates first when a user is configured, and again
    // once when etcd rejects the token.
    bool post(const char* path, const std::string& body, std::string* answer, std::string* why);
    bool post_once(const char* path, const std::string& body, std::string* answer, long* status, std::string* why);
    bool authenticate(std::string* why);

    Config config_;
    size_t current_ = 0;
    void* curl_ = nullptr;
    std::string token_;
    uint64_t requests_ = 0;
};

std::string base64_encode(const std::string& in);
bool base64_decode(const std::string& in, std::string* out);

}  // namespace shardid::etcd
