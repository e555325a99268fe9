#include "core/uuidv7.hpp"

#include "core/schemes.hpp"

namespace shardid {

namespace {

void put_ms(Uuid* u, uint64_t ms)
{
    for (int i = 0; i < 6; ++i)
        u->bytes[i] = uint8_t(ms >> (40 - 8 * i));
}

uint64_t get_be64(const uint8_t* p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v = (v << 8) | p[i];
    return v;
}

void put_be64(uint8_t* p, uint64_t v)
{
    for (int i = 0; i < 8; ++i)
        p[i] = uint8_t(v >> (56 - 8 * i));
}

constexpr uint64_t rand_b_mask = (uint64_t(1) << 62) - 1;

}  // namespace

Uuid uuidv7_compose(uint64_t word, unsigned shard_bits, uint64_t shard, uint64_t random)
{
    Uuid u{};
    const uint64_t ms = uuidv7_layout.packed_tick(word);
    const uint64_t counter = uuidv7_layout.packed_sequence(word);
    put_ms(&u, ms);
    u.bytes[6] = uint8_t(0x70 | (counter >> 8));
    u.bytes[7] = uint8_t(counter);
    const unsigned random_bits = 62 - shard_bits;
    uint64_t rand_b = random & ((uint64_t(1) << random_bits) - 1);
    if (shard_bits > 0)
        rand_b |= shard << random_bits;
    put_be64(u.bytes + 8, (uint64_t(2) << 62) | (rand_b & rand_b_mask));
    return u;
}

const Layout& uuidv7_shard_fit(unsigned shard_bits)
{
    static const auto fits = [] {
        struct Fits {
            Layout by_width[uuidv7_max_shard_bits + 1];
        } f{};
        for (unsigned w = 0; w <= uuidv7_max_shard_bits; w++)
            f.by_width[w] = Layout::named("UUIDv7").shard(uint8_t(w));
        return f;
    }();
    return fits.by_width[shard_bits <= uuidv7_max_shard_bits ? shard_bits : 0];
}

bool uuidv7_check_width(int64_t shard_bits, Status* status)
{
    if (shard_bits >= 0 && shard_bits <= int64_t(uuidv7_max_shard_bits))
        return true;
    *status = Status::fail(Error::invalid_parameter, "shard width %lld is out of range", (long long)shard_bits)
                  .with_detail("A UUIDv7 shard field is 0 to %u bits wide.", uuidv7_max_shard_bits);
    return false;
}

bool uuidv7_check_shard(const Layout& fit, int64_t shard, const char* what, Status* status)
{
    if (check_shard(fit, shard, what, status))
        return true;
    if (fit.shard_bits == 0)
        *status = Status::fail(Error::invalid_parameter, "UUIDv7 has no shard field")
                      .with_detail("shardid.uuidv7_shard_bits is 0, so rand_b holds only random bits.")
                      .with_hint("Set shardid.uuidv7_shard_bits to the width of the shard field, or call "
                                 "next_uuidv7() without a shard.");
    else
        status->with_detail("With shardid.uuidv7_shard_bits = %u, the shard must be between 0 and %llu.",
                            unsigned(fit.shard_bits), (unsigned long long)fit.shard_max());
    return false;
}

bool uuidv7_decode(const Uuid& u, unsigned shard_bits, Uuidv7Fields* out, Status* status)
{
    if (!uuidv7_check_width(shard_bits, status))
        return false;
    const unsigned version = u.bytes[6] >> 4;
    const unsigned variant = u.bytes[8] >> 6;
    if (version != 7) {
        *status = Status::fail(Error::invalid_parameter, "uuid is not a UUIDv7")
                      .with_detail("Its version is %u; a UUIDv7 has version 7.", version);
        return false;
    }
    if (variant != 2) {
        *status = Status::fail(Error::invalid_parameter, "uuid is not a UUIDv7")
                      .with_detail("Its variant bits are %u%u; a UUIDv7 has the RFC 9562 variant, binary 10.",
                                   variant >> 1, variant & 1);
        return false;
    }
    uint64_t ms = 0;
    for (int i = 0; i < 6; ++i)
        ms = (ms << 8) | u.bytes[i];
    out->unix_ms = int64_t(ms);
    out->counter = (uint32_t(u.bytes[6] & 0x0f) << 8) | u.bytes[7];
    const uint64_t rand_b = get_be64(u.bytes + 8) & rand_b_mask;
    out->shard = shard_bits == 0 ? 0 : rand_b >> (62 - shard_bits);
    return true;
}

bool uuidv7_min(int64_t unix_ms, Uuid* out, Status* status)
{
    if (unix_ms < 0 || unix_ms > uuidv7_max_ms) {
        *status = Status::fail(Error::out_of_range, "time is out of range for UUIDv7")
                      .with_detail("A UUIDv7 holds the Unix time in 48 bits of milliseconds: from 1970-01-01 "
                                   "into the year 10889.");
        return false;
    }
    *out = uuidv7_compose(uuidv7_layout.pack(uint64_t(unix_ms), 0), 0, 0, 0);
    return true;
}

void uuidv7_range(bool has_lower, int64_t lower_ms, bool has_upper, int64_t upper_ms, Uuid* lo, Uuid* hi)
{
    for (int i = 0; i < 16; ++i)
        lo->bytes[i] = 0, hi->bytes[i] = 0xff;
    const auto empty = [&] {
        for (int i = 0; i < 16; ++i)
            lo->bytes[i] = 0xff, hi->bytes[i] = 0;
    };
    if (has_lower && lower_ms > uuidv7_max_ms)
        return empty();
    if (has_upper && upper_ms < 0)
        return empty();
    if (has_lower && lower_ms > 0)
        put_ms(lo, uint64_t(lower_ms));
    if (has_upper && upper_ms < uuidv7_max_ms)
        put_ms(hi, uint64_t(upper_ms));
}

}  // namespace shardid
