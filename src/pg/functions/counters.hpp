// What the counter-based schemes share (src/pg/functions/counters.cpp):
// their extension sequences, a value of one this node never took before,
// and the counters' epoch the node-id source allows now. DecimalId uses
// them in counters.cpp, call numbers in call_numbers.cpp.
#pragma once

#include <cstdint>

#include "pg/base/pg.hpp"
#include "pg/state/shmem.hpp"

namespace shardid::pg {

// An extension sequence: where it is, who owns it, how it steps.
struct Sequence {
    const char* name;
    Oid relid;
    Oid owner;
    int64 increment;
    int64 max;
};

// The sequence `name` of the extension the calling function belongs to
// (ereports when it is missing); confirms the database's history first.
Sequence extension_sequence(FunctionCallInfo fcinfo, const char* name);

// The next value of `seq` that this node never took before, durable before
// it is returned (src/pg/functions/counters.cpp says how); a run id in the
// era of the call-number key `key_fingerprint`; `above`: also above that
// floor (a Citus worker's).
int64 take_fresh(const Sequence& seq, NodeCounter which, int64 key_fingerprint = 0, int64 above = -1);

// The counters' epoch the values handed out by the source may be used in
// now (waits while the source cannot say, up to its bound).
uint64_t counters_epoch();

}  // namespace shardid::pg
