// The node id from shardid.node_id, and the choice of source.
#include "pg/source/node_source.hpp"

#include "core/schemes.hpp"
#include "pg/base/guard.hpp"
#include "pg/base/settings.hpp"
#include "pg/state/shared.hpp"

namespace shardid::pg {

namespace {

class SettingSource final : public NodeIdSource {
public:
    const char* name() const override { return "setting"; }

    bool hold(SourceTicket* ticket, Status*) const override
    {
        *ticket = SourceTicket{0, pg::node_id};
        return true;
    }

    bool node_id(const Layout& fit, const SourceTicket& ticket, uint64_t* id, Status* status) const override
    {
        if (ticket.id == node_id_unset) {
            *status = Status::fail(Error::not_configured, "shardid.node_id is not set")
                          .with_detail("Generating %s values needs this node's id, which must differ between nodes.",
                                       fit.name)
                          .with_hint("As a superuser, set it in postgresql.conf and reload, or run, one by one: "
                                     "LOAD 'shardid'; ALTER SYSTEM SET shardid.node_id = <0..%llu>; SELECT "
                                     "pg_reload_conf();",
                                     (unsigned long long)fit.shard_max());
            return false;
        }
        if (!check_shard(fit, ticket.id, "shardid.node_id", status)) {
            status->with_hint("Set shardid.node_id to a value between 0 and %llu in postgresql.conf and reload.",
                              (unsigned long long)fit.shard_max());
            return false;
        }
        *id = uint64_t(ticket.id);
        return true;
    }

    bool hold_value(SlotState*, const Layout&, uint64_t value, bool given, SourceTicket*, Status* status) const override
    {
        return !given || declared_shard(value, status);
    }

    // A setting never changes under an ID: nothing to confirm, nothing to
    // wait for (hold() never fails).
    bool confirm(const SourceTicket&, int64_t, Status*) const override { return true; }
    void wait(TimestampTz, const Status& why) const override { raise(why); }
    void waited() const override {}
    int64 take_counter(NodeCounter, int64) const override { return from_node_sequence; }
};

const SettingSource setting_source;

// A configured value PostgreSQL did not accept (refused_settings()): the
// source in use may itself be the default that replaced it, so nothing is
// issued, whichever it is.
class RefusedSource final : public NodeIdSource {
public:
    const char* name() const override { return "refused"; }

    bool hold(SourceTicket*, Status* status) const override
    {
        *status = refusal();
        return false;
    }
    bool node_id(const Layout&, const SourceTicket&, uint64_t*, Status* status) const override
    {
        *status = refusal();
        return false;
    }
    bool hold_value(SlotState*, const Layout&, uint64_t, bool, SourceTicket*, Status* status) const override
    {
        *status = refusal();
        return false;
    }
    bool confirm(const SourceTicket&, int64_t, Status* status) const override
    {
        *status = refusal();
        return false;
    }
    void wait(TimestampTz, const Status& why) const override { raise(why); }
    void waited() const override {}
    int64 take_counter(NodeCounter, int64) const override { raise(refusal()); }

private:
    static Status refusal()
    {
        return Status::fail(Error::not_configured, "a shardid setting has a configured value that was not accepted")
            .with_detail("%s: PostgreSQL kept the setting's default instead, and shardid issues no IDs under a value "
                         "nobody configured.",
                         refused_settings())
            .with_hint("%s", refused_hint());
    }
};

const RefusedSource refused_source;

}  // namespace

bool declared_shard(uint64_t shard, Status* status)
{
    if (shard_declared(int64_t(shard)))
        return true;
    note_claim_refusal(ClaimRefusal::outside_shards);
    *status =
        Status::fail(Error::not_configured, "shard %llu is not one of this node's shards", (unsigned long long)shard)
            .with_detail("shardid.shards = '%s' lists the shards this node owns; an ID with another shard "
                         "could equal one that shard's owner issues.",
                         shards_setting)
            .with_hint("Write this shard's rows on the node that owns it, or add the shard to shardid.shards "
                       "in postgresql.conf and reload.");
    return false;
}

namespace {

// Until their rooms register their own.
const NodeIdSource* etcd = &refused_source;
const NodeIdSource* citus = &refused_source;

const NodeIdSource& resolve_source()
{
    if (refused_reason() != nullptr)
        return refused_source;
    switch (NodeIdSourceSetting(node_id_source_setting)) {
    case NodeIdSourceSetting::etcd: return *etcd;
    case NodeIdSourceSetting::citus: return *citus;
    case NodeIdSourceSetting::setting: break;
    }
    return setting_source;
}

}  // namespace

void register_etcd_source(const NodeIdSource& source) { etcd = &source; }
void register_citus_source(const NodeIdSource& source) { citus = &source; }

const NodeIdSource& node_id_source()
{
    // Decided once per process, not per ID: shardid.node_id_source takes a
    // server start, and a refused value is decided when the settings are
    // defined (src/pg/base/settings.cpp), before any generation.
    static const NodeIdSource* resolved = nullptr;
    if (resolved == nullptr)
        resolved = &resolve_source();
    return *resolved;
}

}  // namespace shardid::pg
