// Positional text encodings of unsigned integers: base62 (0-9A-Za-z) and
// Crockford base32 (0-9, A-Z without I L O U; decoding is case-insensitive
// and reads I and L as 1, O as 0). Both alphabets are in ASCII order, so
// encodings padded to one width sort like the numbers (under COLLATE "C").
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"

namespace shardid {

struct Alphabet {
    const char* name;    // for messages
    const char* digits;  // digit i is digits[i]
    unsigned base;
    int8_t value_of[256];  // -1: not a digit
};

extern const Alphabet base62;
extern const Alphabet base32_crockford;

constexpr int max_encoded_width = 64;

// Writes `value` left-padded with the zero digit to at least min_width
// (0..max_encoded_width) into out (room for max_encoded_width + 1 chars);
// returns the length, and NUL-terminates.
int encode_digits(const Alphabet& a, uint64_t value, int min_width, char* out);

// Reads digits into *out. Empty text or a character outside the alphabet:
// invalid_text; a value above `max`: out_of_range.
bool decode_digits(const Alphabet& a, const char* text, size_t len, uint64_t max, uint64_t* out, Status* status);

}  // namespace shardid
