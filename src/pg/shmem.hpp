// Node-wide generator state in shared memory: one slot per distinct layout
// shape (epoch, unit, widths), shared by every backend, parallel worker and
// database of the cluster. Equal shapes share a slot, so two databases using
// the same layout on one node never issue the same ID.
//
// With shared_preload_libraries the space is reserved at server start;
// without it, the first backend that needs it carves it from the slack
// PostgreSQL leaves in its shared memory segment. Either way the same
// ShmemInitStruct name is attached, under AddinShmemInitLock.
#pragma once

#include "core/decimal.hpp"
#include "core/engine.hpp"
#include "core/layout.hpp"
#include "pg/pg.hpp"

extern "C" {
#include "storage/lwlock.h"
}

namespace shardid::pg {

constexpr int max_slots = 64;
constexpr int max_decimal_databases = 16;

// Called from _PG_init: installs the shmem hooks when preloading.
void shmem_init();

// The node-wide state of `layout` (ereports if no slot is free). The result
// is cached per backend; callers on a hot path cache it themselves too.
SlotState* slot_for(const Layout& layout);

// Makes sure the persisted high-water mark covers an ID whose tick starts
// at tick_ms before that ID is returned: writes the mark about a second
// ahead when it is not, and renews it early (without waiting) when half of
// it is used. Needs an earlier slot_for().
void cover_tick(int64_t tick_ms);

// DecimalId state of a database (its generator ids come from that
// database's sequence), and the lock under which a generator id is taken.
DecimalState* decimal_state(Oid database);
LWLock* decimal_lock();

}  // namespace shardid::pg
