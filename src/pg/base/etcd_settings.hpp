// The etcd client's configuration from the shardid.etcd_* settings
// (src/pg/base/settings.cpp), for the coordinator worker.
#pragma once

#include <string>

#include "etcd/client.hpp"

namespace shardid::pg {

// False, with a reason naming the setting, when they are not usable.
bool etcd_client_config(etcd::Config* config, std::string* why);

// Reads the numeric etcd settings (shardid.etcd_lease_ttl,
// shardid.etcd_node_id_min, shardid.etcd_node_id_max) from their text into
// etcd_lease_ttl_s, etcd_node_id_min and etcd_node_id_max; false, naming
// the setting and the value, when one is not a number.
bool etcd_numbers(std::string* why);

}  // namespace shardid::pg
