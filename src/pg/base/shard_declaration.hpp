// shardid.shards parsed (the setting: src/pg/base/settings.hpp). C++
// standard headers: include this before any PostgreSQL header
// (src/pg/base/pg.hpp says why).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/etcd/shard_values.hpp"

namespace shardid::pg {

// shardid.shards parsed, in one cache per process, refreshed whole when the
// setting's text changes (checked when set, so it parses): the set
// (empty: any shard), its multirange text ("{[0,511],[1024,1024]}", "{}"
// when empty) and that text's fingerprint (never 0: what a Citus worker
// declares to the coordinator, src/pg/citus/fence.cpp), and how many
// refreshes this process made (a caller that keeps work per declaration
// compares it).
struct ShardDeclaration {
    std::vector<etcd::ShardRange> set;
    std::string multirange;
    uint64_t fingerprint = 0;
    uint64_t generation = 0;
};
const ShardDeclaration& shard_declaration();

}  // namespace shardid::pg
