#include "core/callnum.hpp"

#include <algorithm>
#include <cstdint>

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

template <int N>
uint64_t permute(const uint8_t (&map)[N], uint64_t v)
{
    uint64_t out = 0;
    for (int i = 0; i < N; i++)
        out |= ((v >> i) & 1) << map[i];
    return out;
}

// A Fisher-Yates permutation of N positions and its inverse.
template <int N>
void shuffle_positions(uint64_t& state, uint8_t (&to)[N], uint8_t (&from)[N])
{
    for (int i = 0; i < N; i++)
        to[i] = uint8_t(i);
    for (int i = N - 1; i > 0; i--) {
        const int j = int(splitmix64(state) % uint64_t(i + 1));
        const uint8_t t = to[i];
        to[i] = to[j];
        to[j] = t;
    }
    for (int i = 0; i < N; i++)
        from[to[i]] = uint8_t(i);
}

}  // namespace

BitShuffle BitShuffle::from_key(const char* key, size_t len)
{
    uint64_t state = 0xcbf29ce484222325ull;  // FNV-1a of the key seeds the generator
    for (size_t i = 0; i < len; i++)
        state = (state ^ static_cast<unsigned char>(key[i])) * 0x100000001b3ull;
    BitShuffle s{};
    shuffle_positions(state, s.to, s.from);  // era 0's, as 1.2 made it
    shuffle_positions(state, s.era_to, s.era_from);
    return s;
}

uint64_t BitShuffle::apply(uint64_t v) const { return permute(to, v); }
uint64_t BitShuffle::invert(uint64_t v) const { return permute(from, v); }
uint64_t BitShuffle::apply_era(uint64_t v) const { return permute(era_to, v); }
uint64_t BitShuffle::invert_era(uint64_t v) const { return permute(era_from, v); }

bool call_number_compose(const BitShuffle& shuffle, int64_t version, int64_t run_id, int64_t sequence,
                         char out[call_chars + 1], Status* status)
{
    const FieldRange fields[] = {{"version", version, call_version_max},
                                 {"run_id", run_id, call_run_max},
                                 {"sequence", sequence, call_sequence_max}};
    if (!check_ranges("call number", fields, status))
        return false;
    const int era = call_era_of(run_id);
    if (era == 0) {
        const uint64_t bits = call_pack(CallParts{uint32_t(version), uint32_t(run_id), uint32_t(sequence)});
        encode_digits(base62, shuffle.apply(bits), call_chars, out);
        return true;
    }
    if (version != 0) {
        *status = Status::fail(Error::out_of_range, "call number version %lld is out of range for run_id %lld",
                               (long long)version, (long long)run_id)
                      .with_detail("Run ids from %lld on (key eras 1 to %d) make call numbers of version 0 only.",
                                   (long long)call_era_first_run(1), call_era_max);
        return false;
    }
    const uint64_t low = (uint64_t(run_id - call_era_first_run(era)) << call_sequence_bits) | uint64_t(sequence);
    encode_digits(base62, call_era_base + (uint64_t(era - 1) << call_era_bits) + shuffle.apply_era(low), call_chars,
                  out);
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
    if (!decode_digits(base62, text, len, call_text_max, &value, status)) {
        // Whatever the reason (a bad character, a value above the last
        // era's), the text is not a call number.
        *status = Status::fail(Error::invalid_text, "invalid call number \"%.*s\"", int(len), text)
                      .with_detail("A call number is %d characters from 0-9, A-Z and a-z that encode a value below "
                                   "2^%d + %d * 2^%d.",
                                   call_chars, call_bits, call_era_max, call_era_bits);
        return false;
    }
    if (value < call_era_base) {
        *out = call_unpack(shuffle.invert(value));
        return true;
    }
    const int era = int((value - call_era_base) >> call_era_bits) + 1;
    const uint64_t low = shuffle.invert_era((value - call_era_base) & ((uint64_t(1) << call_era_bits) - 1));
    *out = CallParts{0, uint32_t(call_era_first_run(era) + int64_t(low >> call_sequence_bits)),
                     uint32_t(low) & call_sequence_max};
    return true;
}

bool CallEras::operator==(const CallEras& o) const
{
    if (n != o.n)
        return false;
    for (int i = 0; i < n; i++)
        if (list[i].era != o.list[i].era || list[i].key != o.list[i].key || list[i].low != o.list[i].low)
            return false;
    return true;
}

bool CallEras::append(int era, int64_t key, int32_t low)
{
    if (n == call_era_max || key == 0 || era < 1 || era > call_era_max || (n > 0 && era <= list[n - 1].era) ||
        low < call_era_none || low > call_era_full)
        return false;
    list[n++] = CallEra{int32_t(era), key, low};
    return true;
}

void CallEras::close_all()
{
    for (int i = 0; i < n; i++)
        list[i].low = call_era_full;
}

bool call_era_take(CallEras& eras, int64_t key, int64_t above, int64_t floor_run, int64_t* run_id)
{
    for (int i = eras.n - 1; i >= 0; i--) {
        CallEra& e = eras.list[i];
        if (e.key != key)
            continue;
        const int64_t next = call_era_first_run(e.era) + e.low + 1;
        if (e.low < call_era_full && next > above) {
            e.low++;
            *run_id = next;
            return true;
        }
        break;  // its last era is used up, or below the floor: a new one
    }
    int era = std::max(call_era_of(std::max(floor_run, above)), 0) + 1;
    if (eras.n > 0)
        era = std::max(era, int(eras.list[eras.n - 1].era) + 1);
    if (era > call_era_max || !eras.append(era, key, 0))
        return false;
    *run_id = call_era_first_run(era);
    return true;
}

}  // namespace shardid
