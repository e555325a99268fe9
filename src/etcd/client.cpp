#include "etcd/client.hpp"

#include <algorithm>
#include <chrono>
#include <climits>

#include <curl/curl.h>

#include "core/text.hpp"

namespace shardid::etcd {

namespace {

constexpr size_t max_answer = 1 << 20;  // a larger answer is not etcd's

size_t collect(char* data, size_t size, size_t n, void* user)
{
    auto* s = static_cast<std::string*>(user);
    if (s->size() + size * n > max_answer)
        return 0;  // curl fails the transfer
    s->append(data, size * n);
    return size * n;
}

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
    static bool initialized = false;
    if (!initialized) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        initialized = true;
    }
    curl_ = curl_easy_init();
    multi_ = curl_multi_init();
}

Client::~Client()
{
    if (multi_ != nullptr)
        curl_multi_cleanup(static_cast<CURLM*>(multi_));
    if (curl_ != nullptr)
        curl_easy_cleanup(static_cast<CURL*>(curl_));
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

bool Client::post_once(const char* path, const std::string& body, std::string* answer, long* status, std::string* why)
{
    CURL* c = static_cast<CURL*>(curl_);
    CURLM* m = static_cast<CURLM*>(multi_);
    if (c == nullptr || m == nullptr) {
        *why = "libcurl could not be initialised";
        return false;
    }
    const int64_t timeout = std::min(config_.timeout_ms, left_ms());
    if (must_end()) {
        *why = endpoint() + ": not sent (" + (left_ms() <= 0 ? "the time for the release is spent" : "stopping") + ")";
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
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, long(timeout));
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, long(timeout));
    // Straight to etcd: never through a proxy named by the environment
    // (http_proxy, ALL_PROXY, ...), which would see every request, and the
    // password with it over http://.
    curl_easy_setopt(c, CURLOPT_PROXY, "");
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
    // The multi interface, polled in steps of 50 ms, so that a stop
    // abandons a request in flight (an endpoint that accepts and never
    // answers would otherwise hold a shutdown for the whole timeout).
    CURLcode rc = CURLE_OK;
    curl_multi_add_handle(m, c);
    for (;;) {
        int running = 0;
        if (curl_multi_perform(m, &running) != CURLM_OK) {
            rc = CURLE_FAILED_INIT;
            break;
        }
        if (running == 0) {
            int left = 0;
            rc = CURLE_RECV_ERROR;
            while (CURLMsg* msg = curl_multi_info_read(m, &left))
                if (msg->msg == CURLMSG_DONE && msg->easy_handle == c)
                    rc = msg->data.result;
            break;
        }
        if (must_end()) {
            rc = CURLE_ABORTED_BY_CALLBACK;
            break;
        }
        curl_multi_poll(m, nullptr, 0, 50, nullptr);
    }
    curl_multi_remove_handle(m, c);
    curl_slist_free_all(headers);
    if (rc == CURLE_ABORTED_BY_CALLBACK) {
        *why = url + ": abandoned (" + (left_ms() <= 0 ? "the time for the release is spent" : "stopping") + ")";
        return false;
    }
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
