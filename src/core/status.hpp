// Outcome of a core operation: a value, or an error kind with its words.
//
// The core never throws on bad input or clock trouble; it returns a Status
// that the PostgreSQL glue maps to a SQLSTATE in one place (src/pg/base/guard.cpp).
#pragma once

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace shardid {

// Error kinds, named by what went wrong; each maps to exactly one SQLSTATE.
enum class Error : uint8_t {
    none = 0,
    not_configured,       // a required setting is unset            -> 55000
    out_of_range,         // a number outside its field or domain   -> 22003
    invalid_parameter,    // an argument that cannot be used        -> 22023
    invalid_text,         // malformed text representation          -> 22P02
    clock_lead_exceeded,  // logical clock would run too far ahead  -> 55000
    time_exhausted,       // a layout's time field has no room left -> 22003
    out_of_memory,        // std::bad_alloc                         -> 53200
    interrupted,          // a wait given up for a pending interrupt (the glue serves it)
    not_claimed,          // no valid claim of the node id from etcd -> 55000 (after the glue waited)
    limit_exceeded,       // a bounded node-wide table is full       -> 53400
    wait_exceeded,        // a wait longer than its bound (shardid.etcd_wait) -> 55000
    internal,             // a bug or an unexpected C++ exception   -> XX000
};

// A failure with PostgreSQL-style words: a short lowercase message, and
// full-sentence detail and hint (either may be empty).
struct Status {
    Error error = Error::none;
    // Left unzeroed: a Status is built on every hot-path call, and only a
    // failure writes (and so terminates) these.
    char message[192];
    char detail[256];
    char hint[256];

    Status() { message[0] = detail[0] = hint[0] = '\0'; }

    bool ok() const { return error == Error::none; }
    explicit operator bool() const { return ok(); }

    static Status fail(Error e, const char* fmt, ...) __attribute__((format(printf, 2, 3)))
    {
        Status s;
        s.error = e;
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(s.message, sizeof s.message, fmt, ap);
        va_end(ap);
        return s;
    }
    Status& with_detail(const char* fmt, ...) __attribute__((format(printf, 2, 3)))
    {
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(detail, sizeof detail, fmt, ap);
        va_end(ap);
        return *this;
    }
    Status& with_hint(const char* fmt, ...) __attribute__((format(printf, 2, 3)))
    {
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(hint, sizeof hint, fmt, ap);
        va_end(ap);
        return *this;
    }
};

// A named field and its allowed range 0..max, for check_ranges().
struct FieldRange {
    const char* name;
    int64_t value;
    int64_t max;
};

// Fails with out_of_range for the first field outside its range, naming
// `what` (e.g. "call number"), the field and the range.
template <size_t N>
bool check_ranges(const char* what, const FieldRange (&fields)[N], Status* status)
{
    for (const FieldRange& f : fields)
        if (f.value < 0 || f.value > f.max) {
            *status = Status::fail(Error::out_of_range, "%s %s %lld is out of range: allowed 0..%lld", what, f.name,
                                   (long long)f.value, (long long)f.max);
            return false;
        }
    return true;
}

}  // namespace shardid
