// etcd's v3 JSON gateway (/v3/lease/*, /v3/kv/*, /v3/auth/*) as text: the
// request bodies shardid sends and the decoders of the answers, with
// nlohmann::json (keys and values base64, 64-bit numbers as strings). Pure:
// no network and no PostgreSQL header. Decoders never throw (every failure
// is a false return with a reason); encoders replace invalid UTF-8 and can
// throw only std::bad_alloc. The client that sends these bodies over HTTP
// is src/etcd/client.hpp.
//
// The decoders are separate functions so that tests can feed them what a
// broken proxy or a truncated body looks like.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardid::etcd {

struct KeyValue {
    std::string key, value;
    int64_t create_revision = 0, mod_revision = 0;
    int64_t version = 0;  // writes since the key was created (1: created, not changed since)
    std::string lease;    // "" when the key has none
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
// The keys attached to a lease (LeaseTimeToLive with keys): *alive false
// when etcd no longer knows the lease (TTL -1 or 0), then no keys.
bool decode_lease_keys(const std::string& body, std::vector<std::string>* keys, bool* alive, std::string* why);
// Any other answer: a JSON object that is not etcd's error object.
bool decode_ack(const std::string& body, std::string* why);

// One comparison of a transaction.
struct Compare {
    enum class Target { create, mod, lease } target;
    std::string key;
    int64_t revision = 0;  // create, mod
    std::string lease;     // lease ("0": the key has no lease, or is absent)
};
// One request of a transaction: a put (lease "" for none), a range of one
// key, or (del) the deletion of one key.
struct Op {
    bool put;
    std::string key, value, lease;
    bool del = false;
};

// Request bodies.
std::string encode_txn(const std::vector<Compare>& compare, const std::vector<Op>& success,
                       const std::vector<Op>& failure);
std::string encode_grant(int64_t ttl_s);
std::string encode_lease(const std::string& lease);                              // keepalive, revoke
std::string encode_lease_keys(const std::string& lease);                         // time-to-live with keys
std::string encode_range(const std::string& key, const std::string& range_end);  // range_end "": one key
std::string encode_authenticate(const std::string& user, const std::string& password);

std::string base64_encode(const std::string& in);
bool base64_decode(const std::string& in, std::string* out);

}  // namespace shardid::etcd
