// Short public call numbers (SPEC 2.6): 47 bits, most significant first
// version (3) | run_id (30) | sequence (14), stably shuffled by a bit
// permutation derived from a key, then written as 8 base62 characters.
//
// Key eras (1.3). Two keys shuffle different (run, sequence) pairs onto one
// text, so a run id says which key its numbers are made with: its top 8
// bits are its era (run_id >> 22). Era 0 holds the runs of 1.2, written as
// above (texts below 2^47). Each era 1..255 belongs to one key, recorded
// when its first run is taken (call_era_take()); its texts are
//
//   2^47 + (era - 1) * 2^36 + shuffle36(run_id mod 2^22 | sequence)
//
// above every text of era 0 and of every other era, still 8 characters
// (2^47 + 255 * 2^36 < 62^8). A text is therefore issued once across any
// number of keys, up to 255 eras; past them runs are refused.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"

namespace shardid {

constexpr int call_bits = 47;
constexpr int call_chars = 8;  // 62^8 > 2^47
constexpr uint32_t call_version_max = 7;
constexpr uint32_t call_run_max = (1u << 30) - 1;
constexpr uint32_t call_sequence_max = (1u << 14) - 1;
constexpr int call_sequence_bits = 14;
constexpr int call_era_run_bits = 22;                                  // run ids in an era
constexpr int call_era_max = 255;                                      // run_id >> 22, 30-bit run ids
constexpr int call_era_bits = call_era_run_bits + call_sequence_bits;  // 36 shuffled bits of an era's text
constexpr uint64_t call_era_base = uint64_t(1) << call_bits;           // era 1's first text
constexpr uint64_t call_text_max = call_era_base + (uint64_t(call_era_max) << call_era_bits) - 1;
static_assert(call_run_max >> call_era_run_bits == uint32_t(call_era_max), "a run id's top bits are its era");
constexpr int call_era_of(int64_t run_id) { return int(run_id >> call_era_run_bits); }
constexpr int64_t call_era_first_run(int era) { return int64_t(era) << call_era_run_bits; }

struct CallParts {
    uint32_t version;
    uint32_t run_id;
    uint32_t sequence;
};

constexpr uint64_t call_pack(CallParts p)
{
    return (uint64_t(p.version) << 44) | (uint64_t(p.run_id) << 14) | p.sequence;
}
constexpr CallParts call_unpack(uint64_t v)
{
    return CallParts{uint32_t(v >> 44) & call_version_max, uint32_t(v >> 14) & call_run_max,
                     uint32_t(v) & call_sequence_max};
}

// Fixed permutations of the 47 bit positions (era 0) and of an era's 36,
// the same for the same key.
struct BitShuffle {
    uint8_t to[call_bits];    // bit i of the input goes to bit to[i]
    uint8_t from[call_bits];  // the inverse
    uint8_t era_to[call_era_bits];
    uint8_t era_from[call_era_bits];

    static BitShuffle from_key(const char* key, size_t len);
    uint64_t apply(uint64_t v) const;
    uint64_t invert(uint64_t v) const;
    uint64_t apply_era(uint64_t v) const;
    uint64_t invert_era(uint64_t v) const;
};

// The call number of those parts, shuffled and encoded (9 bytes with NUL).
// A run id of era 1 or later carries version 0 (its text has no room for one).
bool call_number_compose(const BitShuffle& shuffle, int64_t version, int64_t run_id, int64_t sequence,
                         char out[call_chars + 1], Status* status);

// Undoes call_number_compose; anything else is invalid_text.
bool call_number_decode(const BitShuffle& shuffle, const char* text, size_t len, CallParts* out, Status* status);

// The eras recorded by whatever hands out run ids (a node's state, etcd,
// a Citus coordinator's state): era `era` (1..255) belongs to the key whose
// fingerprint is `key` (never 0), and `low` is the last run id taken in it
// (its low 22 bits; -1: none yet). Ascending, each era once. Each era has
// its counter, so keys in use at once (each database's own `default` key,
// nodes of a cluster with keys of their own) take run ids each in its era.
constexpr int32_t call_era_none = -1;                                     // no run id of the era taken yet
constexpr int32_t call_era_full = (int32_t(1) << call_era_run_bits) - 1;  // its last: none left
struct CallEra {
    int32_t era = 0;
    int64_t key = 0;
    int32_t low = call_era_none;
};
struct CallEras {
    int n = 0;
    CallEra list[call_era_max];

    bool operator==(const CallEras& o) const;
    // Appends one era above the last; false when it is not above, the key
    // is 0, the low is out of range, or the list is full.
    bool append(int era, int64_t key, int32_t low = call_era_none);
    // Every era closed (its low set to full): a record that may have lost
    // run ids taken in them (etcd that lost its data or went back) hands out
    // none of them again; each key's next run id starts a new era.
    void close_all();
};

// The next run id for the key with fingerprint `key`: the next of the
// key's last era while it has one left and the run id is above `above`
// (-1: none; a Citus worker's own floor), else the first of a new era
// recorded for the key, above every recorded era and above floor_run's
// era (the highest run id taken anywhere: 1.2's run ids are era 0, and
// eras a record forgot lie below it). `eras` is updated; the caller makes
// it durable before the run id is used. False when no era is left (255 in
// all), with `eras` unchanged.
bool call_era_take(CallEras& eras, int64_t key, int64_t above, int64_t floor_run, int64_t* run_id);

}  // namespace shardid
