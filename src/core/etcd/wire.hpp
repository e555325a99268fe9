// etcd's v3 JSON gateway (/v3/lease/*, /v3/kv/*, /v3/auth/*) as text: the
// request bodies shardid sends (requests.cpp) and the decoders of the
// answers (wire.cpp), with nlohmann::json (keys and values base64, 64-bit
// numbers as strings). Pure: no network and no PostgreSQL header. Decoders never throw (every failure
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

// The header of every answer: which cluster answered (its id changes when
// etcd is replaced by a new cluster) and its store's revision then (every
// write raises it). 0 when the answer has none.
struct Header {
    uint64_t cluster_id = 0;
    int64_t revision = 0;
};

// What a call gives back.
struct Grant {
    std::string id;
    int64_t ttl_s = 0;
    Header header;
};
struct Txn {
    bool succeeded = false;
    std::vector<KeyValue> kvs;  // every kv of the range responses of the branch taken
    Header header;              // a write's revision is the header's
};
// One page of a range read (encode_range_page()).
struct RangePage {
    std::vector<KeyValue> kvs;
    bool more = false;  // keys after the last one remain
    Header header;
};

// One message of a watch's stream (encode_watch()): the answer to its
// creation, events, or its end. etcd sends the events of a range in the
// order of their revisions, all of one revision in one message.
struct WatchEvent {
    bool deleted = false;  // a DELETE (else a PUT)
    KeyValue kv;           // of a deletion: the key and the revision of the deletion (mod_revision)
};
struct WatchMessage {
    Header header;
    bool created = false;
    bool canceled = false;
    int64_t compact_revision = 0;  // canceled: the start revision was compacted away, at this one
    std::vector<WatchEvent> events;
};

// Decoders of the gateway's answers; false with a reason for anything the
// API does not promise.
bool decode_grant(const std::string& body, Grant* out, std::string* why);
// *alive is false when etcd no longer knows the lease (no TTL, or TTL 0).
bool decode_keepalive(const std::string& body, int64_t* ttl_s, bool* alive, std::string* why);
bool decode_txn(const std::string& body, Txn* out, std::string* why);
bool decode_range(const std::string& body, std::vector<KeyValue>* out, std::string* why);
bool decode_range_page(const std::string& body, RangePage* out, std::string* why);
// One line of a watch's stream; an error message in the stream (a refused
// token, a watch etcd could not create) is a failure with its words.
bool decode_watch_message(const std::string& line, WatchMessage* out, std::string* why);
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
    // Every key of [key, range_end) instead of one: etcd compares each key
    // there, and a range with no key compares as a key that is absent
    // (create 0 over a range: no key in it).
    std::string range_end = {};
};
// One request of a transaction: a put (lease "" for none), a range of one
// key (or of [key, range_end)), or (del) the deletion of one key.
struct Op {
    bool put;
    std::string key, value, lease;
    bool del = false;
    std::string range_end = {};
};
// etcd's default limit of operations per transaction (--max-txn-ops):
// compares, and the requests of each branch, each at most this many.
constexpr size_t max_txn_ops = 128;

// Request bodies.
std::string encode_txn(const std::vector<Compare>& compare, const std::vector<Op>& success,
                       const std::vector<Op>& failure);
std::string encode_grant(int64_t ttl_s);
std::string encode_lease(const std::string& lease);                              // keepalive, revoke
std::string encode_lease_keys(const std::string& lease);                         // time-to-live with keys
std::string encode_range(const std::string& key, const std::string& range_end);  // range_end "": one key
// A page of [key, range_end): at most `limit` keys, only keys and their
// revisions and leases (keys_only), read at `revision` (0: the newest), so
// that the pages of one listing are one snapshot.
std::string encode_range_page(const std::string& key, const std::string& range_end, int64_t limit, int64_t revision,
                              bool keys_only);
// A watch of [key, range_end) from `start_revision` on: etcd first sends
// every event since then, in order, and then each new one as it happens.
std::string encode_watch(const std::string& key, const std::string& range_end, int64_t start_revision);
std::string encode_authenticate(const std::string& user, const std::string& password);

std::string base64_encode(const std::string& in);
bool base64_decode(const std::string& in, std::string* out);

}  // namespace shardid::etcd
