// The etcd client's configuration from the shardid.etcd_* settings
// (src/pg/settings.cpp), for the coordinator worker.
#pragma once

#include <string>

#include "etcd/client.hpp"

namespace shardid::pg {

// False, with a reason naming the setting, when they are not usable.
bool etcd_client_config(etcd::Config* config, std::string* why);

}  // namespace shardid::pg
