// What a generator is told of a shard value it may not use now
// (src/pg/etcd/shard_claims.hpp): the claim states' names and the
// refusals' words, in one place.
#include "pg/etcd/shard_claims.hpp"

namespace shardid::pg {

const char* claim_state_name(ClaimState s)
{
    static const char* const names[] = {"free",        "claiming",    "held",      "held elsewhere",
                                        "refused",     "taking over", "releasing", "ahead of the clock",
                                        "not declared"};
    return names[int(s)];
}

Status claim_refused(ClaimState state, const char* note, uint64_t value, const char* layout)
{
    const unsigned long long v = (unsigned long long)value;
    switch (state) {
    case ClaimState::busy:
        return Status::fail(Error::not_claimed, "shard %llu of layout %s is held by another node", v, layout)
            .with_detail("%s holds shard %llu of this layout's claim space in etcd; a node issues IDs with a shard "
                         "only while it holds it, so that no two nodes issue one ID.",
                         note[0] ? note : "Another node", v)
            .with_hint("Write this shard's rows on that node, or release it there with shardid_release_shard(); "
                       "docs/sharding.md describes moving a shard.");
    case ClaimState::ahead:
        return Status::fail(Error::clock_lead_exceeded,
                            "shard %llu of layout %s continues above IDs ahead of this node's clock", v, layout)
            .with_detail("%s", note[0] ? note : "Its previous holder's IDs lie too far ahead.")
            .with_hint("Wait until this node's clock is within shardid.max_clock_lead of those IDs' time, or raise "
                       "shardid.max_clock_lead.");
    case ClaimState::refused:
        return Status::fail(Error::not_claimed, "shard %llu of layout %s cannot be claimed", v, layout)
            .with_detail("Its keys in etcd hold what no holder could have written as this node sees it: edited by "
                         "hand, or a mark of a node whose clock ran far ahead (until this node's clock comes near "
                         "it).")
            .with_hint("shardid_shard_claims() (superusers and pg_monitor) and the server log name the key.");
    case ClaimState::releasing:
        // Given back as this statement asks (unused for a while, released
        // by hand, or wanted by the node whose id it is): a wait, as for a
        // claim, and asked for again once given back (the refusal a
        // statement ends with is then the claim's: held by another node,
        // most often). A value no longer declared is refused before
        // (hold_claim(), as undeclared).
        return Status::fail(Error::not_claimed, "this node is giving shard %llu of layout %s back", v, layout)
            .with_detail("The coordinator gives the value back in etcd (unused for shardid.shard_idle_release, "
                         "released by shardid_release_shard(), or wanted by the node whose node id it is); it is "
                         "asked for again once given back.")
            .with_hint("See SELECT * FROM shardid_shard_claims(); and SELECT * FROM shardid_coordination(); for "
                       "the last error.");
    case ClaimState::undeclared:
        return Status::fail(Error::not_configured, "shard %llu is not one of this node's shards", v)
            .with_detail("shardid.shards, as this node read it at its last reload, does not list it (a range of "
                         "shards moved to another node); an ID with it could equal one its new owner issues.")
            .with_hint("Write this shard's rows on the node that owns it now.");
    default:
        return Status::fail(Error::not_claimed, "this node does not hold shard %llu of layout %s yet", v, layout)
            .with_detail("IDs with a shard are issued only while this node holds it in etcd; the coordinator is "
                         "claiming it (state \"%s\").",
                         claim_state_name(state))
            .with_hint("See SELECT * FROM shardid_shard_claims(); and SELECT * FROM shardid_coordination(); for "
                       "the last error.");
    }
}

Status claim_table_full(int whose, int capacity)
{
    const char* who = whose == 2 ? "this database" : whose == 3 ? "this role" : "this node";
    return Status::fail(Error::limit_exceeded, "%s holds as many shard values as it may on this node", who)
        .with_detail("A node holds at most shardid.max_shard_claims = %d shard values besides its own ids, a "
                     "database half of them, a role but a superuser a quarter; one unused for "
                     "shardid.shard_idle_release is given back.",
                     capacity)
        .with_hint("Raise shardid.max_shard_claims in postgresql.conf and restart the server, or write fewer "
                   "distinct shards from this node.");
}

}  // namespace shardid::pg
