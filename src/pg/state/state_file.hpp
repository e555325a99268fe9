// The persisted node state (src/core/state/node_state.hpp) as a small file in the
// data directory, written durably ahead of use, from which a restarted node
// resumes without reissuing anything it issued before.
#pragma once

#include "core/state/node_state.hpp"
#include "pg/base/pg.hpp"

namespace shardid::pg {

// The file keeps the name it had in 1.1 (when it held the high-water mark
// alone), so a data directory of an older release is read after an upgrade.
constexpr const char* state_file_name = "shardid.hwm";

// The state as text (the file's contents, and the WAL record's), and back;
// parsing also checks that the engine can use every mark.
void node_state_format(const NodeState& state, StringInfo out);
bool node_state_parse_checked(const char* text, size_t len, NodeState* state);

enum class StateFileRead { missing, ok, corrupt };

// Reads the state; *state is left empty unless the file is there and well
// formed. Reads the older formats (v1, a mark only; v2) too.
StateFileRead state_file_read(NodeState* state);

// Writes the state durably (temporary file, fsync, rename, fsync of the
// directory); ereports on failure.
void state_file_write(const NodeState& state);

}  // namespace shardid::pg
