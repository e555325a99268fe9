// The etcd settings as the coordinator worker reads them
// (src/pg/etcd/worker/config.hpp): the numbers from their text, in the
// ranges the core states, and the client's configuration.
#include "pg/etcd/worker/config.hpp"

#include <climits>
#include <fstream>
#include <string>

#include "core/etcd/rules.hpp"
#include "core/text.hpp"
#include "pg/base/pg.hpp"
#include "pg/base/settings.hpp"

extern "C" {
#include "utils/guc.h"
}

namespace shardid::pg {

// The etcd settings that are numbers, read from their text: they are text
// settings so that a malformed value reaches the coordinator as given
// (PostgreSQL would replace it by the default at server start).
bool etcd_numbers(std::string* why)
{
    struct Number {
        const char* name;
        const char* text;
        int flags;
        int* out;
        int64_t min, max;  // the range a value must be in (the core's, where it states one)
    };
    const Number numbers[] = {
        {"shardid.etcd_lease_ttl", etcd_lease_ttl_text, GUC_UNIT_S, &etcd_lease_ttl_s, etcd::min_lease_ttl_s,
         etcd::max_lease_ttl_s},
        {"shardid.etcd_node_id_min", etcd_node_id_min_text, 0, &etcd_node_id_min, 0, INT_MAX},
        {"shardid.etcd_node_id_max", etcd_node_id_max_text, 0, &etcd_node_id_max, 0, INT_MAX},
    };
    for (const Number& n : numbers) {
        const char* hint = nullptr;
        int value = 0;
        if (n.text == nullptr || !parse_int(n.text, &value, n.flags, &hint) || value < 0) {
            *why = std::string(n.name) + " = '" + printable(n.text ? n.text : "") + "' is not " +
                   (n.flags == GUC_UNIT_S ? "a time (such as 10s)" : "a whole number of at least 0");
            return false;
        }
        if (value < n.min || value > n.max) {
            const char* unit = n.flags == GUC_UNIT_S ? "s" : "";
            *why = std::string(n.name) + " = " + std::to_string(value) + unit + " is out of range: it must be " +
                   std::to_string(n.min) + (*unit ? " s" : "") + " to " + std::to_string(n.max) + (*unit ? " s" : "");
            return false;
        }
        *n.out = value;
    }
    return true;
}

// The etcd client's configuration, from the shardid.etcd_* settings.
bool etcd_client_config(etcd::Config* config, std::string* why)
{
    if (!etcd::parse_endpoints(etcd_endpoints ? etcd_endpoints : "", &config->endpoints, why)) {
        *why = "shardid.etcd_endpoints is not usable: " + *why;
        return false;
    }
    config->user = etcd_user ? etcd_user : "";
    if (!config->user.empty()) {
        std::ifstream in(etcd_password_file ? etcd_password_file : "");
        if (!in || !std::getline(in, config->password)) {
            *why = std::string("could not read the password file \"") + (etcd_password_file ? etcd_password_file : "") +
                   "\" (shardid.etcd_password_file)";
            return false;
        }
    }
    config->cacert = etcd_cacert ? etcd_cacert : "";
    config->cert = etcd_cert ? etcd_cert : "";
    config->key = etcd_key ? etcd_key : "";
    config->timeout_ms = etcd::request_timeout_ms(int64_t(etcd_lease_ttl_s) * 1000);
    return true;
}

}  // namespace shardid::pg
