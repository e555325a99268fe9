// The persisted node state: a small file in the data directory, written
// durably ahead of use, from which a restarted node resumes without
// reissuing anything it issued before:
//   - the high-water mark, a Unix-ms time that every issued ID's tick
//     starts before (a lease about a second ahead);
//   - the highest DecimalId generator id and call-number run id this node
//     ever took, in any database (they never come back, whatever happens
//     to the sequences they come from: DROP/CREATE EXTENSION, a rolled-back
//     ALTER SEQUENCE, a restored dump);
//   - for layouts whose tick is longer than the lease, a per-layout mark in
//     (tick, sequence) terms, so a restart resumes within the tick instead
//     of waiting for the next one.
#pragma once

#include <cstdint>

#include "core/layout.hpp"
#include "pg/pg.hpp"

extern "C" {
#include "lib/stringinfo.h"
}

namespace shardid::pg {

constexpr const char* hwm_path = "shardid.hwm";
constexpr int max_slot_marks = 64;

// A layout shape (everything of a Layout but its name) and its mark.
struct SlotMark {
    char name[64];
    int64_t epoch_ms, unit_ms;
    uint8_t time_bits, shard_bits, sequence_bits, sequence_first;
    bool wraps;
    uint64_t word;  // every issued packed (tick, sequence) word of the shape is at most this
};

struct NodeState {
    int64 mark_ms = 0;
    int64 generator_floor = -1;  // -1: none taken yet
    int64 run_floor = -1;
    int n_slots = 0;
    SlotMark slots[max_slot_marks];
};

// The state as text (the file's contents, and the WAL record's), and back.
void node_state_format(const NodeState& state, StringInfo out);
bool node_state_parse(const char* text, size_t len, NodeState* state);

enum class HwmRead { missing, ok, corrupt };

// Reads the state; *state is left empty unless the file is there and well
// formed. Reads the older one-line format (a mark only) too.
HwmRead hwm_read(NodeState* state);

// Writes the state durably (temporary file, fsync, rename, fsync of the
// directory); ereports on failure.
void hwm_write(const NodeState& state);

}  // namespace shardid::pg
