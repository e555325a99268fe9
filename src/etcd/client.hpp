// The etcd client: posts the bodies of src/core/etcd/wire.hpp to etcd's v3
// JSON gateway through the transport (src/etcd/transport.hpp: libcurl, in a
// library only the coordinator loads), trying the endpoints in turn, authenticating
// when a user is configured. Blocking, with a timeout per request; no
// PostgreSQL header; never throws (every failure is a false return with a
// reason), so the coordinator worker (src/pg/etcd/worker/start.cpp) can call it
// without C++ exceptions reaching PostgreSQL. The only code of shardid that
// touches the network.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/etcd/wire.hpp"
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
    // One page of a listing (encode_range_page()).
    bool range_page(const std::string& body, RangePage* out, std::string* why);
    // What the caller of watch() says of each message: read on, the watch
    // has told all it must (the transfer is ended), or it failed (*why).
    enum class WatchStep { more, done, failed };
    using WatchSink = std::function<WatchStep(const WatchMessage&, std::string* why)>;
    // Posts a watch (encode_watch()) and hands each message of its stream
    // to `sink`, as it arrives, until the sink says done (true) or failed,
    // or the request's timeout passes first (false). A stream is never
    // held in memory whole: each message is decoded and dropped, and one
    // longer than max_watch_message fails the watch.
    bool watch(const std::string& body, const WatchSink& sink, std::string* why);
    static constexpr size_t max_watch_message = size_t(16) << 20;
    // Bytes of answers received since the client was made (etcd's traffic
    // toward this node, for the benchmark).
    uint64_t bytes_received() const { return bytes_received_; }

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
    // The transport's POST of `body` to `path` at the current endpoint, each
    // piece of the answer handed to `append(to, ...)`; false (why) when it
    // was not sent or no answer came (including an append that refused).
    bool send(const char* path, const std::string& body, int (*append)(void*, const char*, size_t), void* to,
              long* status, std::string* why);
    bool watch_once(const std::string& body, const WatchSink& sink, bool* retry_token, std::string* why);
    enum class Ready { yes, skip, stop };
    Ready next_endpoint(size_t tried, std::string* transport, std::string* why);
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
    uint64_t bytes_received_ = 0;
    Failure failure_ = Failure::none;
};

}  // namespace shardid::etcd
