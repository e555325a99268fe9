#include "core/codec.hpp"

namespace shardid {

namespace {

constexpr Alphabet make_alphabet(const char* name, const char* digits, unsigned base, const char* aliases)
{
    Alphabet a{name, digits, base, {}};
    for (int i = 0; i < 256; i++)
        a.value_of[i] = -1;
    for (unsigned i = 0; i < base; i++)
        a.value_of[static_cast<unsigned char>(digits[i])] = int8_t(i);
    // aliases: pairs of (character, the digit it stands for)
    for (const char* p = aliases; p[0] && p[1]; p += 2)
        a.value_of[static_cast<unsigned char>(p[0])] = a.value_of[static_cast<unsigned char>(p[1])];
    return a;
}

}  // namespace

const Alphabet base62 =
    make_alphabet("base62", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", 62, "");
// Aliases, in pairs (a character, the digit it reads as): lowercase for
// uppercase, and I, L for 1 and O for 0, as Crockford's base32 reads them.
const Alphabet base32_crockford = make_alphabet("base32", "0123456789ABCDEFGHJKMNPQRSTVWXYZ", 32,
                                                "aAbBcCdDeEfFgGhHjJkKmMnNpPqQrRsStTvVwWxXyYzZI1i1L1l1O0o0");

int encode_digits(const Alphabet& a, uint64_t value, int min_width, char* out)
{
    char reversed[max_encoded_width];
    int n = 0;
    do {
        reversed[n++] = a.digits[value % a.base];
        value /= a.base;
    } while (value != 0);
    while (n < min_width && n < max_encoded_width)
        reversed[n++] = a.digits[0];
    for (int i = 0; i < n; i++)
        out[i] = reversed[n - 1 - i];
    out[n] = '\0';
    return n;
}

bool decode_digits(const Alphabet& a, const char* text, size_t len, uint64_t max, uint64_t* out, Status* status)
{
    if (len == 0) {
        *status = Status::fail(Error::invalid_text, "invalid %s input: empty string", a.name);
        return false;
    }
    uint64_t value = 0;
    for (size_t i = 0; i < len; i++) {
        const int digit = a.value_of[static_cast<unsigned char>(text[i])];
        if (digit < 0) {
            const unsigned char c = static_cast<unsigned char>(text[i]);
            if (c >= 0x20 && c < 0x7f)
                *status =
                    Status::fail(Error::invalid_text, "invalid %s character \"%c\" at position %zu", a.name, c, i + 1);
            else
                *status = Status::fail(Error::invalid_text, "invalid %s character (byte 0x%02x) at position %zu",
                                       a.name, c, i + 1);
            status->with_detail("The %s digits are %s.", a.name, a.digits);
            return false;
        }
        if (uint64_t(digit) > max || value > (max - uint64_t(digit)) / a.base) {
            *status = Status::fail(Error::out_of_range, "%s value is out of range: above %llu", a.name,
                                   (unsigned long long)max);
            return false;
        }
        value = value * a.base + uint64_t(digit);
    }
    *out = value;
    return true;
}

}  // namespace shardid
