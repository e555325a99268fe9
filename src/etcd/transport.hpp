// The HTTP transport to etcd, and the C interface between its library and
// shardid's: src/etcd/transport.cpp is built into a library of its own,
// shardid_etcd.so, the only one linked with libcurl. The coordinator worker
// loads it (src/pg/etcd/etcd_transport.cpp), and nothing else does: a
// backend never maps libcurl or the libraries it brings. The etcd client
// (src/etcd/client.hpp) posts through the table it returns. Plain C types
// only across the boundary; no PostgreSQL header on either side.
#pragma once

#include <cstddef>

extern "C" {

// Raised whenever the table or the request changes shape: a library of
// another build is refused, not called.
#define SHARDID_ETCD_ABI 1

struct ShardidEtcdRequest {
    const char* url;
    const char* body;
    size_t body_size;
    const char* authorization;  // the value of an Authorization header, or nullptr
    const char* cacert;         // TLS files, nullptr for none
    const char* cert;
    const char* key;
    long timeout_ms;  // for connecting and for the whole request
    // Polled every 50 ms while the request is in flight: nonzero abandons it.
    int (*must_end)(void* arg);
    void* must_end_arg;
    // Takes each piece of the answer; zero fails the request (too large).
    int (*append)(void* to, const char* data, size_t size);
    void* append_to;
};

enum ShardidEtcdResult {
    shardid_etcd_answered = 0,   // *status is the HTTP status, the answer was appended
    shardid_etcd_abandoned = 1,  // must_end said so
    shardid_etcd_failed = 2,     // no answer: `error` says why
};

struct ShardidEtcdTransport {
    int abi;  // SHARDID_ETCD_ABI of the library's build
    // A connection handle (kept alive between requests), or nullptr.
    void* (*open)(void);
    void (*close)(void* handle);
    int (*post)(void* handle, const ShardidEtcdRequest* request, long* status, char* error, size_t error_size);
};

// The library's one exported symbol: its table.
typedef const ShardidEtcdTransport* (*ShardidEtcdTransportFn)(void);
#define SHARDID_ETCD_TRANSPORT_SYMBOL "shardid_etcd_transport"
}
