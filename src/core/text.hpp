// Text from outside (etcd's answers, keys edited by hand) for messages.
#pragma once

#include <cstddef>
#include <string>

namespace shardid {

// Printable ASCII only ('?' for anything else), cut to `max` characters
// with "..." after.
inline std::string printable(const std::string& s, size_t max = 80)
{
    std::string out;
    for (char c : s) {
        if (out.size() >= max) {
            out += "...";
            break;
        }
        out += (c >= 32 && c < 127) ? c : '?';
    }
    return out;
}

}  // namespace shardid
