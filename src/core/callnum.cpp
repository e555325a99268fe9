#include "core/callnum.hpp"

#include "core/codec.hpp"

namespace shardid {

namespace {

// SplitMix64: a small, well-mixed generator, here only to derive a
// permutation from a key deterministically (not for secrecy).
uint64_t splitmix64(uint64_t& state)
{
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t permute(const uint8_t (&map)[call_bits], uint64_t v)
{
    uint64_t out = 0;
    for (int i = 0; i < call_bits; i++)
        out |= ((v >> i) & 1) << map[i];
    return out;
}

}  // namespace

BitShuffle BitShuffle::from_key(const char* key, size_t len)
{
    uint64_t state = 0xcbf29ce484222325ull;  // FNV-1a of the key seeds the generator
    for (size_t i = 0; i < len; i++)
        state = (state ^ static_cast<unsigned char>(key[i])) * 0x100000001b3ull;
    BitShuffle s{};
    for (int i = 0; i < call_bits; i++)
        s.to[i] = uint8_t(i);
    for (int i = call_bits - 1; i > 0; i--) {  // Fisher-Yates
        const int j = int(splitmix64(state) % uint64_t(i + 1));
        const uint8_t t = s.to[i];
        s.to[i] = s.to[j];
        s.to[j] = t;
    }
    for (int i = 0; i < call_bits; i++)
        s.from[s.to[i]] = uint8_t(i);
    return s;
}

uint64_t BitShuffle::apply(uint64_t v) const { return permute(to, v); }
uint64_t BitShuffle::invert(uint64_t v) const { return permute(from, v); }

bool call_number_compose(const BitShuffle& shuffle, int64_t version, int64_t run_id, int64_t sequence,
                         char out[call_chars + 1], Status* status)
{
    const FieldRange fields[] = {{"version", version, call_version_max},
                                 {"run_id", run_id, call_run_max},
                                 {"sequence", sequence, call_sequence_max}};
    if (!check_ranges("call number", fields, status))
        return false;
    const uint64_t bits = call_pack(CallParts{uint32_t(version), uint32_t(run_id), uint32_t(sequence)});
    encode_digits(base62, shuffle.apply(bits), call_chars, out);
    return true;
}

bool call_number_decode(const BitShuffle& shuffle, const char* text, size_t len, CallParts* out, Status* status)
{
    if (len != call_chars) {
        *status =
            Status::fail(Error::invalid_text, "invalid call number: %zu characters instead of %d", len, call_chars);
        return false;
    }
    uint64_t value = 0;
    if (!decode_digits(base62, text, len, (uint64_t(1) << call_bits) - 1, &value, status)) {
        // Whatever the reason (a bad character, a value above 2^47), the
        // text is not a call number.
        *status = Status::fail(Error::invalid_text, "invalid call number \"%.*s\"", int(len), text)
                      .with_detail("A call number is %d characters from 0-9, A-Z and a-z that encode a value below "
                                   "2^%d.",
                                   call_chars, call_bits);
        return false;
    }
    *out = call_unpack(shuffle.invert(value));
    return true;
}

}  // namespace shardid
