// The request bodies shardid sends to etcd's JSON gateway (src/core/etcd/wire.hpp;
// the answers: src/core/etcd/wire.cpp). Pure: no PostgreSQL, no network.
#include "core/etcd/wire.hpp"

#include <nlohmann/json.hpp>

namespace shardid::etcd {

using nlohmann::json;

namespace {

// A request body; text that is not UTF-8 is replaced rather than thrown on.
std::string text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string encode_txn(const std::vector<Compare>& compare, const std::vector<Op>& success,
                       const std::vector<Op>& failure)
{
    auto ops = [](const std::vector<Op>& list) {
        json a = json::array();
        for (const Op& op : list) {
            if (op.del) {
                a.push_back({{"request_delete_range", {{"key", base64_encode(op.key)}}}});
            } else if (op.put) {
                json p = {{"key", base64_encode(op.key)}, {"value", base64_encode(op.value)}};
                if (!op.lease.empty())
                    p["lease"] = op.lease;
                a.push_back({{"request_put", p}});
            } else {
                json r = {{"key", base64_encode(op.key)}};
                if (!op.range_end.empty())
                    r["range_end"] = base64_encode(op.range_end);
                a.push_back({{"request_range", r}});
            }
        }
        return a;
    };
    json c = json::array();
    for (const Compare& cmp : compare) {
        json e = {{"key", base64_encode(cmp.key)}, {"result", "EQUAL"}};
        if (!cmp.range_end.empty())
            e["range_end"] = base64_encode(cmp.range_end);
        switch (cmp.target) {
        case Compare::Target::create:
            e["target"] = "CREATE";
            e["create_revision"] = std::to_string(cmp.revision);
            break;
        case Compare::Target::mod:
            e["target"] = "MOD";
            e["mod_revision"] = std::to_string(cmp.revision);
            break;
        case Compare::Target::lease:
            e["target"] = "LEASE";
            e["lease"] = cmp.lease;
            break;
        }
        c.push_back(e);
    }
    return text(json{{"compare", c}, {"success", ops(success)}, {"failure", ops(failure)}});
}

std::string encode_grant(int64_t ttl_s) { return text(json{{"TTL", ttl_s}}); }

std::string encode_lease(const std::string& lease) { return text(json{{"ID", lease}}); }

std::string encode_lease_keys(const std::string& lease) { return text(json{{"ID", lease}, {"keys", true}}); }

std::string encode_range(const std::string& key, const std::string& range_end)
{
    json req = {{"key", base64_encode(key)}};
    if (!range_end.empty())
        req["range_end"] = base64_encode(range_end);
    return text(req);
}

std::string encode_range_page(const std::string& key, const std::string& range_end, int64_t limit, int64_t revision,
                              bool keys_only)
{
    json req = {{"key", base64_encode(key)}, {"range_end", base64_encode(range_end)}};
    if (limit > 0)
        req["limit"] = std::to_string(limit);
    if (revision > 0)
        req["revision"] = std::to_string(revision);
    if (keys_only)
        req["keys_only"] = true;
    return text(req);
}

std::string encode_watch(const std::string& key, const std::string& range_end, int64_t start_revision)
{
    return text(json{{"create_request",
                      {{"key", base64_encode(key)},
                       {"range_end", base64_encode(range_end)},
                       {"start_revision", std::to_string(start_revision)}}}});
}

std::string encode_authenticate(const std::string& user, const std::string& password)
{
    return text(json{{"name", user}, {"password", password}});
}

}  // namespace shardid::etcd
