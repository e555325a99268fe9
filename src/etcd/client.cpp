#include "etcd/client.hpp"

#include <algorithm>
#include <chrono>
#include <climits>

#include "core/text.hpp"

namespace shardid::etcd {

namespace {

constexpr size_t max_answer = 1 << 20;  // a larger answer is not etcd's

std::string printable(const std::string& s) { return shardid::printable(s, 60); }

// etcd's words for a refusal of the user or of its permissions.
bool unauthorized(const std::string& why)
{
    for (const char* w : {"authentication", "permission denied", "invalid auth token", "user name is empty"})
        if (why.find(w) != std::string::npos)
            return true;
    return false;
}

}  // namespace

Client::Client(Config config) : config_(std::move(config))
{
    if (config_.transport != nullptr)
        handle_ = config_.transport->open();
}

Client::~Client()
{
    if (handle_ != nullptr)
        config_.transport->close(handle_);
}

namespace {
int64_t steady_ms()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
}  // namespace

void Client::set_budget_ms(int64_t ms) { budget_end_ = ms > 0 ? steady_ms() + ms : 0; }

int64_t Client::left_ms() const { return budget_end_ == 0 ? INT64_MAX : budget_end_ - steady_ms(); }

bool Client::must_end() const { return (abortable_ && config_.stop != nullptr && *config_.stop) || left_ms() <= 0; }

namespace {
// The transport's sinks: no exception may cross into its C code.
int append(void* to, const char* data, size_t size)
{
    auto* s = static_cast<std::string*>(to);
    if (s->size() + size > max_answer)
        return 0;  // a larger answer is not etcd's: the request fails
    try {
        s->append(data, size);
    } catch (const std::exception&) {
        return 0;
    }
    return 1;
}
int client_must_end(void* client) { return static_cast<const Client*>(client)->must_end(); }
}  // namespace

bool Client::send(const char* path, const std::string& body, int (*append_fn)(void*, const char*, size_t), void* to,
                  long* status, std::string* why)
{
    if (handle_ == nullptr) {
        *why = config_.transport == nullptr ? "the etcd transport (shardid_etcd) is not loaded"
                                            : "libcurl could not be initialised";
        return false;
    }
    const int64_t timeout = std::min(config_.timeout_ms, left_ms());
    if (must_end()) {
        *why = endpoint() + ": not sent (" + (left_ms() <= 0 ? "the time for the release is spent" : "stopping") + ")";
        return false;
    }
    const std::string url = endpoint() + path;
    const bool authorized = !token_.empty() && std::string(path) != "/v3/auth/authenticate";
    auto file = [](const std::string& f) { return f.empty() ? nullptr : f.c_str(); };
    const ShardidEtcdRequest request = {url.c_str(),
                                        body.c_str(),
                                        body.size(),
                                        authorized ? token_.c_str() : nullptr,
                                        file(config_.cacert),
                                        file(config_.cert),
                                        file(config_.key),
                                        long(timeout),
                                        client_must_end,
                                        this,
                                        append_fn,
                                        to};
    requests_++;
    char error[256] = "";
    switch (config_.transport->post(handle_, &request, status, error, sizeof error)) {
    case shardid_etcd_answered: return true;
    case shardid_etcd_abandoned:
        *why = url + ": abandoned (" + (left_ms() <= 0 ? "the time for the release is spent" : "stopping") + ")";
        return false;
    default: *why = url + ": " + error; return false;
    }
}

namespace {
struct Collected {
    std::string* answer;
    uint64_t* bytes;
};
int collect_answer(void* to, const char* data, size_t size)
{
    auto* c = static_cast<Collected*>(to);
    *c->bytes += size;
    return append(c->answer, data, size);
}
}  // namespace

bool Client::post_once(const char* path, const std::string& body, std::string* answer, long* status, std::string* why)
{
    answer->clear();
    Collected to{answer, &bytes_received_};
    return send(path, body, collect_answer, &to, status, why);
}

namespace {
// A watch's stream, decoded message by message as it arrives.
struct WatchStream {
    const Client::WatchSink* sink = nullptr;
    uint64_t* bytes = nullptr;
    uint64_t received = 0;  // of this watch
    std::string pending;    // the start of a message whose end has not arrived
    Client::WatchStep step = Client::WatchStep::more;
    std::string why;
    bool token = false;  // etcd refused the token: authenticate again
};
int stream_append(void* to, const char* data, size_t size)
{
    auto* w = static_cast<WatchStream*>(to);
    *w->bytes += size;
    w->received += size;
    try {
        w->pending.append(data, size);
        size_t start = 0;
        for (size_t nl; (nl = w->pending.find('\n', start)) != std::string::npos; start = nl + 1) {
            const std::string line = w->pending.substr(start, nl - start);
            if (line.find_first_not_of(" \r\t") == std::string::npos)
                continue;
            WatchMessage m;
            if (!decode_watch_message(line, &m, &w->why)) {
                w->token = w->why.find("token") != std::string::npos;
                w->step = Client::WatchStep::failed;
                return 0;
            }
            w->step = (*w->sink)(m, &w->why);
            if (w->step != Client::WatchStep::more)
                return 0;  // ends the transfer: the caller has what it needs
        }
        w->pending.erase(0, start);
        if (w->pending.size() > Client::max_watch_message) {
            w->why = "a watch message is longer than " + std::to_string(Client::max_watch_message >> 20) + " MiB";
            w->step = Client::WatchStep::failed;
            return 0;
        }
    } catch (const std::exception& e) {
        w->why = std::string("the etcd client failed: ") + e.what();
        w->step = Client::WatchStep::failed;
        return 0;
    }
    return 1;
}
}  // namespace

bool Client::watch_once(const std::string& body, const WatchSink& sink, bool* retry_token, std::string* why)
{
    WatchStream w;
    w.sink = &sink;
    w.bytes = &bytes_received_;
    long status = 0;
    const bool answered = send("/v3/watch", body, stream_append, &w, &status, why);
    *retry_token = w.token;
    if (w.step == WatchStep::done)
        return true;
    if (w.step == WatchStep::failed) {
        *why = w.why;
        failure_ = Failure::answer;
        return false;
    }
    if (answered)  // the stream ended before the sink had what it needs
        *why = status != 200 ? "HTTP status " + std::to_string(status) + " from " + endpoint() + ": \"" +
                                   printable(w.pending) + "\""
                             : endpoint() + ": the watch ended early";
    // A stream cut off after much came: its size is the cause to name.
    if (w.received >= (uint64_t(1) << 20))
        *why += " after " + std::to_string(w.received >> 20) + " MiB of changes";
    failure_ = answered ? Failure::answer : Failure::transport;
    return false;
}

bool Client::watch(const std::string& body, const WatchSink& sink, std::string* why)
{
    return call(why, [&] {
        std::string transport;
        for (size_t tried = 0; tried < config_.endpoints.size(); tried++) {
            const Ready ready = next_endpoint(tried, &transport, why);
            if (ready != Ready::yes) {
                if (ready == Ready::stop)
                    return false;
                continue;
            }
            bool token = false;
            if (watch_once(body, sink, &token, why))
                return true;
            if (token && !config_.user.empty()) {
                if (!authenticate(why))
                    return false;
                return watch_once(body, sink, &token, why);
            }
            if (failure_ != Failure::transport)
                return false;  // etcd answered: not a dead endpoint
            transport = *why;
        }
        *why = transport;
        failure_ = Failure::transport;
        return false;
    });
}

// The endpoint to try next (the current one first), authenticated when a
// user is configured: stop when etcd refused the credentials (not a dead
// endpoint), skip (with why in *transport) when it did not answer.
Client::Ready Client::next_endpoint(size_t tried, std::string* transport, std::string* why)
{
    if (tried > 0)
        current_ = (current_ + 1) % config_.endpoints.size();
    if (config_.user.empty() || !token_.empty() || authenticate(why))
        return Ready::yes;
    if (why->find("authentication as") == 0) {
        failure_ = Failure::unauthorized;
        return Ready::stop;  // etcd answered: wrong credentials, not a dead endpoint
    }
    *transport = *why;
    return Ready::skip;
}

bool Client::authenticate(std::string* why)
{
    token_.clear();
    const std::string body = encode_authenticate(config_.user, config_.password);
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
    std::string transport;
    failure_ = Failure::transport;
    for (size_t tried = 0; tried < config_.endpoints.size(); tried++) {
        const Ready ready = next_endpoint(tried, &transport, why);
        if (ready != Ready::yes) {
            if (ready == Ready::stop)
                return false;
            continue;
        }
        long status = 0;
        if (!post_once(path, body, answer, &status, why)) {
            transport = *why;
            continue;
        }
        if (status != 200 && !config_.user.empty() && answer->find("token") != std::string::npos) {
            if (!authenticate(why) || !post_once(path, body, answer, &status, why)) {
                failure_ = unauthorized(*why) ? Failure::unauthorized : Failure::transport;
                return false;
            }
        }
        if (status != 200) {
            // etcd's own refusal keeps its message; anything else is quoted.
            if (decode_ack(*answer, why) || why->find("etcd refused") != 0)
                *why = "HTTP status " + std::to_string(status) + " from " + endpoint() + ": \"" + printable(*answer) +
                       "\"";
            failure_ = unauthorized(*why) ? Failure::unauthorized : Failure::answer;
            return false;
        }
        failure_ = Failure::none;
        return true;
    }
    *why = transport;
    return false;
}

// Every public call: the body encoded, posted and its answer decoded,
// with any exception (only std::bad_alloc can come) turned into a reason.
template <typename F>
bool Client::call(std::string* why, F&& f)
{
    failure_ = Failure::none;
    try {
        if (f())
            return true;
        if (failure_ == Failure::none)
            failure_ = Failure::answer;  // posted, but the answer did not decode
        return false;
    } catch (const std::exception& e) {
        *why = std::string("the etcd client failed: ") + e.what();
        return false;
    }
}

bool Client::grant(int64_t ttl_s, Grant* out, std::string* why)
{
    return call(why, [&] {
        std::string answer;
        return post("/v3/lease/grant", encode_grant(ttl_s), &answer, why) && decode_grant(answer, out, why);
    });
}

bool Client::keepalive(const std::string& lease, int64_t* ttl_s, bool* alive, std::string* why)
{
    return call(why, [&] {
        std::string answer;
        return post("/v3/lease/keepalive", encode_lease(lease), &answer, why) &&
               decode_keepalive(answer, ttl_s, alive, why);
    });
}

bool Client::revoke(const std::string& lease, std::string* why)
{
    return call(why, [&] {
        std::string answer;
        return post("/v3/lease/revoke", encode_lease(lease), &answer, why) && decode_ack(answer, why);
    });
}

bool Client::lease_keys(const std::string& lease, std::vector<std::string>* keys, bool* alive, std::string* why)
{
    return call(why, [&] {
        std::string answer;
        return post("/v3/lease/timetolive", encode_lease_keys(lease), &answer, why) &&
               decode_lease_keys(answer, keys, alive, why);
    });
}

bool Client::txn(const std::string& body, Txn* out, std::string* why)
{
    return call(why, [&] {
        std::string answer;
        return post("/v3/kv/txn", body, &answer, why) && decode_txn(answer, out, why);
    });
}

bool Client::range_page(const std::string& body, RangePage* out, std::string* why)
{
    return call(why, [&] {
        std::string answer;
        return post("/v3/kv/range", body, &answer, why) && decode_range_page(answer, out, why);
    });
}

bool Client::range(const std::string& key, const std::string& range_end, std::vector<KeyValue>* out, std::string* why)
{
    return call(why, [&] {
        std::string answer;
        return post("/v3/kv/range", encode_range(key, range_end), &answer, why) && decode_range(answer, out, why);
    });
}

}  // namespace shardid::etcd
