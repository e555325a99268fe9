// The etcd client's configuration from the shardid.etcd_* settings
// (src/pg/etcd/worker/config.cpp), for the coordinator worker.
#pragma once

#include <string>

#include "etcd/client.hpp"

namespace shardid::pg {

// False, with a reason naming the setting, when they are not usable.
bool etcd_client_config(etcd::Config* config, std::string* why);

// What the claim itself needs of the settings, read once when the
// coordinator starts (every one of them takes a server start): the
// holder's only way to the shardid.* settings.
struct ClaimSettings {
    std::string prefix;   // shardid.etcd_prefix
    int want_id = -1;     // shardid.node_id: -1 claims the lowest free id
    int lease_ttl_s = 0;  // shardid.etcd_lease_ttl
    int node_id_min = 0;  // shardid.etcd_node_id_min
    int node_id_max = 0;  // shardid.etcd_node_id_max
    // Which id is claimed and where shardid.node_id says so, for the claim's
    // log line and shardid_coordination()'s node_id_from.
    std::string node_id_from;
};

// Reads the numeric etcd settings (shardid.etcd_lease_ttl,
// shardid.etcd_node_id_min, shardid.etcd_node_id_max) from their text into
// etcd_lease_ttl_s, etcd_node_id_min and etcd_node_id_max; false, naming
// the setting and the value, when one is not a number.
bool etcd_numbers(std::string* why);

}  // namespace shardid::pg
