// The C++/PostgreSQL boundary.
//
// C++ code runs inside guarded(): it may return false with a Status, or
// throw; neither crosses into PostgreSQL. The entry point then calls raise()
// once no C++ object with a destructor is alive in its frame, so the
// ereport longjmp unwinds nothing that C++ owns. Code inside guarded() must
// not call PostgreSQL functions that can ereport.
#pragma once

#include <exception>
#include <new>
#include <type_traits>

#include "core/status.hpp"

namespace shardid::pg {

// What guarded() bodies share with their entry point must not need a
// destructor that an ereport after them would skip.
static_assert(std::is_trivially_destructible_v<Status>, "Status crosses the boundary");

template <class Body>
inline bool guarded(Status& status, Body&& body) noexcept
{
    try {
        return body();
    } catch (const std::bad_alloc&) {
        status = Status::fail(Error::out_of_memory, "out of memory in shardid");
    } catch (const std::exception& e) {
        status = Status::fail(Error::internal, "internal error in shardid: %s", e.what());
    } catch (...) {
        status = Status::fail(Error::internal, "internal error in shardid: unknown C++ exception");
    }
    return false;
}

// Reports a failed Status as an ERROR with its SQLSTATE. Does not return.
[[noreturn]] void raise(const Status& status);

}  // namespace shardid::pg
