// The etcd client: posts the bodies of src/core/coord/etcd_wire.hpp to etcd's v3
// JSON gateway through the transport (src/etcd/transport.hpp: libcurl, in a
// library only the coordinator loads), trying the endpoints in turn, authenticating
// when a user is configured. Blocking, with a timeout per request; no
// PostgreSQL header; never throws (every failure is a false return with a
// reason), so the coordinator worker (src/pg/coord/coord_worker.cpp) can call it
// without C++ exceptions reaching PostgreSQL. The only code of shardid that
// touches the network.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/coord/etcd_wire.hpp"
#include "etcd/transport.hpp"

namespace shardid::etcd {

struct Config {
    std::vector<std::string> endpoints;
    std::string user, password;     // empty user: no authentication
    std::string cacert, cert, key;  // TLS files, empty for none
    int64_t timeout_ms = 2000;
    // Set (by a signal handler) when the caller is asked to stop: a request
    // in flight is abandoned within 50 ms, and later ones fail at once,
    // until set_abortable(false) (the release at a clean stop).
    const volatile int* stop = nullptr;
    // The HTTP transport (nullptr: every request fails, saying so).
    const ShardidEtcdTransport* transport = nullptr;
};

// Why the last call failed.
enum class Failure {
    none,
    transport,     // no endpoint answered (refused, timed out, not HTTP)
    unauthorized,  // etcd refused the credentials, or the user's permissions on the prefix
    answer,        // etcd answered with an error, or with what its API does not promise
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
    // The keys attached to the lease now (*alive false: etcd no longer
    // knows it).
    bool lease_keys(const std::string& lease, std::vector<std::string>* keys, bool* alive, std::string* why);
    bool txn(const std::string& body, Txn* out, std::string* why);
    bool range(const std::string& key, const std::string& range_end, std::vector<KeyValue>* out, std::string* why);

    // The timeout of each later request (per endpoint tried).
    void set_timeout_ms(int64_t ms) { config_.timeout_ms = ms; }
    // Whether `stop` abandons requests (see Config).
    void set_abortable(bool on) { abortable_ = on; }
    // A budget for every later request together, from now: each waits at
    // most what is left of it, and none starts once it is spent (0: none).
    void set_budget_ms(int64_t ms);
    int64_t timeout_ms() const { return config_.timeout_ms; }
    // The endpoint the last request went to.
    const std::string& endpoint() const { return config_.endpoints[current_]; }
    uint64_t requests() const { return requests_; }
    Failure last_failure() const { return failure_; }
    // Whether a request must end now: asked to stop, or the budget spent
    // (the transport polls it while a request is in flight).
    bool must_end() const;

private:
    // POSTs `body` to `path`, trying the endpoints in turn on transport
    // failures; authenticates first when a user is configured, and again
    // once when etcd rejects the token.
    bool post(const char* path, const std::string& body, std::string* answer, std::string* why);
    bool post_once(const char* path, const std::string& body, std::string* answer, long* status, std::string* why);
    bool authenticate(std::string* why);
    template <typename F>
    bool call(std::string* why, F&& f);

    int64_t left_ms() const;  // of the budget (INT64_MAX: none)

    Config config_;
    size_t current_ = 0;
    void* handle_ = nullptr;  // the transport's
    bool abortable_ = true;
    int64_t budget_end_ = 0;  // steady clock, ms (0: no budget)
    std::string token_;
    uint64_t requests_ = 0;
    Failure failure_ = Failure::none;
};

}  // namespace shardid::etcd
