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

bool Client::post_once(const char* path, const std::string& body, std::string* answer, long* status, std::string* why)
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
    answer->clear();
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
                                        append,
                                        answer};
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
        if (tried > 0)
            current_ = (current_ + 1) % config_.endpoints.size();
        if (!config_.user.empty() && token_.empty() && !authenticate(why)) {
            if (why->find("authentication as") == 0) {
                failure_ = Failure::unauthorized;
                return false;  // etcd answered: wrong credentials, not a dead endpoint
            }
            transport = *why;
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

bool Client::range(const std::string& key, const std::string& range_end, std::vector<KeyValue>* out, std::string* why)
{
    return call(why, [&] {
        std::string answer;
        return post("/v3/kv/range", encode_range(key, range_end), &answer, why) && decode_range(answer, out, why);
    });
}

}  // namespace shardid::etcd
