// shardid_etcd.so: HTTP POSTs to etcd over libcurl (src/etcd/transport.hpp
// says who loads it and why it is a library of its own). One request at a
// time per handle, through curl's multi interface so that a stop abandons
// a request in flight; never through a proxy; never throws.
#include "etcd/transport.hpp"

#include <cstdio>
#include <new>

#include <curl/curl.h>

namespace {

struct Handle {
    CURL* easy;
    CURLM* multi;
};

struct Sink {
    const ShardidEtcdRequest* request;
};

size_t collect(char* data, size_t size, size_t n, void* user)
{
    const auto* r = static_cast<const Sink*>(user)->request;
    return r->append(r->append_to, data, size * n) ? size * n : 0;  // 0: curl fails the transfer
}

void* open_handle()
{
    static const bool initialized = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    if (!initialized)
        return nullptr;
    auto* h = new (std::nothrow) Handle{curl_easy_init(), curl_multi_init()};
    if (h != nullptr && (h->easy == nullptr || h->multi == nullptr)) {
        if (h->multi != nullptr)
            curl_multi_cleanup(h->multi);
        if (h->easy != nullptr)
            curl_easy_cleanup(h->easy);
        delete h;
        h = nullptr;
    }
    return h;
}

void close_handle(void* handle)
{
    auto* h = static_cast<Handle*>(handle);
    if (h == nullptr)
        return;
    curl_multi_cleanup(h->multi);
    curl_easy_cleanup(h->easy);
    delete h;
}

int post(void* handle, const ShardidEtcdRequest* r, long* status, char* error, size_t error_size)
{
    auto* h = static_cast<Handle*>(handle);
    if (h == nullptr) {
        snprintf(error, error_size, "libcurl could not be initialised");
        return shardid_etcd_failed;
    }
    char auth[4096];
    if (r->authorization != nullptr &&
        snprintf(auth, sizeof auth, "Authorization: %s", r->authorization) >= int(sizeof auth)) {
        snprintf(error, error_size, "etcd's token is longer than %zu bytes", sizeof auth - 16);
        return shardid_etcd_failed;
    }
    CURL* c = h->easy;
    CURLM* m = h->multi;
    curl_easy_reset(c);
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    if (r->authorization != nullptr)
        headers = curl_slist_append(headers, auth);
    Sink sink{r};
    curl_easy_setopt(c, CURLOPT_URL, r->url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, long(r->body_size));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, r->timeout_ms);
    // Straight to etcd: never through a proxy named by the environment
    // (http_proxy, ALL_PROXY, ...), which would see every request, and the
    // password with it over http://.
    curl_easy_setopt(c, CURLOPT_PROXY, "");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &sink);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (r->cacert != nullptr)
        curl_easy_setopt(c, CURLOPT_CAINFO, r->cacert);
    if (r->cert != nullptr)
        curl_easy_setopt(c, CURLOPT_SSLCERT, r->cert);
    if (r->key != nullptr)
        curl_easy_setopt(c, CURLOPT_SSLKEY, r->key);
    // Polled in steps of 50 ms, so that a stop abandons a request in flight
    // (an endpoint that accepts and never answers would otherwise hold a
    // shutdown for the whole timeout).
    CURLcode rc = CURLE_OK;
    bool abandoned = false;
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
        if (r->must_end(r->must_end_arg)) {
            abandoned = true;
            break;
        }
        curl_multi_poll(m, nullptr, 0, 50, nullptr);
    }
    curl_multi_remove_handle(m, c);
    curl_slist_free_all(headers);
    if (abandoned)
        return shardid_etcd_abandoned;
    if (rc != CURLE_OK) {
        snprintf(error, error_size, "%s", curl_easy_strerror(rc));
        return shardid_etcd_failed;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    return shardid_etcd_answered;
}

const ShardidEtcdTransport transport = {SHARDID_ETCD_ABI, open_handle, close_handle, post};

}  // namespace

extern "C" __attribute__((visibility("default"))) const ShardidEtcdTransport* shardid_etcd_transport(void)
{
    return &transport;
}
