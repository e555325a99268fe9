// Every setting of shardid, in one table: name, descriptions, default,
// range, context and privilege. define_settings() defines them all from it,
// in its order (shardid.node_id_source comes before shardid.node_id, whose
// check reads it). The etcd settings take any value their type can hold:
// PostgreSQL replaces a value its check refuses at server start by the
// default, silently but for a WARNING, and a prefix or endpoint list
// replaced that way would make two clusters meant to be apart share ids. The
// coordinator worker checks them instead, and refuses to claim ("misconfigured"). A "%d" in a short description stands for the setting's
// maximum, so a range the core defines is written once.
//
// A setting that changes what the whole node does is set for the whole
// server (PGC_SIGHUP or PGC_POSTMASTER), never per session, role or
// database: shardid.max_clock_lead and shardid.clock_offset_ms move the
// logical clock every session shares, and shardid.wal_log_mark decides
// whether the node-wide state reaches standbys. Per-session settings only
// shape the IDs of that session (a field, a key, a wait).
#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "core/etcd/rules.hpp"
#include "pg/base/shard_declaration.hpp"
#include "core/decimal.hpp"
#include "core/eightbyte.hpp"
#include "core/etcd/shard_values.hpp"
#include "core/text.hpp"
#include "core/uuidv7.hpp"
#include "pg/base/pg.hpp"
#include "pg/base/settings.hpp"

extern "C" {
#include "miscadmin.h"
#include "utils/guc.h"
#include "utils/guc_tables.h"
}

namespace shardid::pg {

int node_id = node_id_unset;
int max_clock_lead_ms = 10000;
int clock_offset_ms = 0;
int launch_id = -1;
int cluster_id = 0;
char* call_number_key = nullptr;
bool wal_log_mark = true;
int uuidv7_shard_bits = 0;
int node_id_source_setting = int(NodeIdSourceSetting::setting);
char* etcd_endpoints = nullptr;
char* etcd_prefix = nullptr;
int etcd_lease_ttl_s = 10;
char* etcd_lease_ttl_text = nullptr;
char* etcd_user = nullptr;
char* etcd_password_file = nullptr;
char* etcd_cacert = nullptr;
char* etcd_cert = nullptr;
char* etcd_key = nullptr;
int etcd_node_id_min = 0;
int etcd_node_id_max = 1023;
char* etcd_node_id_min_text = nullptr;
char* etcd_node_id_max_text = nullptr;
int etcd_wait_ms = 10000;
int citus_fence_ms = 10000;
int max_shard_claims = 10000;
int shard_idle_release_s = 60;
char* shards_setting = nullptr;

namespace {

const config_enum_entry source_options[] = {
    {"setting", int(NodeIdSourceSetting::setting), false},
    {"etcd", int(NodeIdSourceSetting::etcd), false},
    {"citus", int(NodeIdSourceSetting::citus), false},
    {nullptr, 0, false},
};

// shardid.node_id: in etcd mode the node id is the node's, claimed at
// server start: a session, role or database value would make IDs under an
// id nobody claimed.
bool check_node_id(int*, void**, GucSource source)
{
    if (etcd_enabled() && source >= PGC_S_GLOBAL && source != PGC_S_OVERRIDE) {
        GUC_check_errcode(ERRCODE_CANT_CHANGE_RUNTIME_PARAM);
        GUC_check_errmsg(
            "shardid.node_id cannot be set per session, role or database when shardid.node_id_source is etcd");
        GUC_check_errdetail("The node id is claimed from etcd for the whole node at server start.");
        GUC_check_errhint("Set it in postgresql.conf (-1 claims the lowest free id) and restart the server.");
        return false;
    }
    return true;
}

// shardid.shards: checked as given (a shard is at most an int4), and kept
// parsed (shard_declaration()) under the text it was parsed from. Every
// assignment counts (assign_shards()), so that a generator's look at the
// declaration, once per ID, compares a number, not the text.
ShardDeclaration declared;
std::string declared_text = "\x01";
uint64_t shards_assigned = 1, shards_seen = 0;

void assign_shards(const char*, void*) { shards_assigned++; }

bool check_shards(char** value, void**, GucSource)
{
    std::vector<etcd::ShardRange> set;
    std::string why;
    if (!etcd::parse_shard_set(*value ? *value : "", INT32_MAX, &set, &why)) {
        GUC_check_errcode(ERRCODE_INVALID_PARAMETER_VALUE);
        GUC_check_errdetail("%s.", why.c_str());
        GUC_check_errhint("List shards and ranges of shards separated by commas, such as '0-511,1024'.");
        return false;
    }
    return true;
}

enum class Kind { integer, boolean, enumeration, string };

struct Setting {
    const char* name;
    Kind kind;
    void* variable;
    const char* short_desc;
    const char* long_desc;
    int boot;  // integer, boolean, enumeration
    int min, max;
    const char* boot_string;
    const config_enum_entry* options;
    GucContext context;
    int flags;
    GucIntCheckHook int_check;
    GucStringCheckHook string_check;
    // Takes effect at server start: defined only when preloading.
    bool at_start;
    GucStringAssignHook string_assign = nullptr;
};

constexpr int etcd_flags = GUC_SUPERUSER_ONLY;  // none of the coordination settings is for ordinary roles

// The lease TTL's range, as the core states it (etcd::min_lease_ttl_s,
// etcd::max_lease_ttl_s).
const char* lease_ttl_description()
{
    static char text[96];
    snprintf(text, sizeof text, "TTL of this node's etcd lease (%lld s to %lld s).", (long long)etcd::min_lease_ttl_s,
             (long long)etcd::max_lease_ttl_s);
    return text;
}

const Setting settings[] = {
    {"shardid.node_id_source", Kind::enumeration, &node_id_source_setting,
     "Where this node's id comes from: setting, etcd or citus.",
     "setting: shardid.node_id as configured. etcd: claimed from etcd at server start, with fencing and marks, so "
     "that no two nodes use one id. citus: the node's Citus group id (0 on the coordinator), read from Citus' "
     "metadata in the database that generates.",
     int(NodeIdSourceSetting::setting), 0, 0, nullptr, source_options, PGC_POSTMASTER, etcd_flags, nullptr, nullptr,
     true},
    {"shardid.node_id", Kind::integer, &node_id,
     "This node's id in shardid IDs (TraceId node, default Snowflake/Instagram shard).",
     "-1 means unset: generators that need it then fail (with shardid.node_id_source = etcd: claim the lowest free "
     "id). Each node must have its own value, which must fit the field of the scheme that uses it.",
     node_id_unset, node_id_unset, INT_MAX, nullptr, nullptr, PGC_SUSET, 0, check_node_id, nullptr, false},
    {"shardid.max_clock_lead", Kind::integer, &max_clock_lead_ms,
     "How far the logical clock may run ahead of the wall clock after it stepped back.",
     "When a tick's sequence is used up while the wall clock is behind the last issued ID, the logical clock moves "
     "one tick ahead; past this lead, generation fails instead.",
     10000, 0, INT_MAX, nullptr, nullptr, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, false},
    {"shardid.clock_offset_ms", Kind::integer, &clock_offset_ms,
     "Testing aid: milliseconds added to the wall clock the whole server reads.",
     "Negative values simulate a clock that stepped back. Leave at 0 in production.", 0, INT_MIN, INT_MAX, nullptr,
     nullptr, PGC_SIGHUP, GUC_UNIT_MS, nullptr, nullptr, false},
    {"shardid.launch_id", Kind::integer, &launch_id, "DecimalId launch id of this deployment (1..%d; 0 for tests).",
     "-1 means unset: next_decimal_id() then fails.", -1, -1, int(decimal_launch_max), nullptr, nullptr, PGC_SUSET, 0,
     nullptr, nullptr, false},
    {"shardid.cluster_id", Kind::integer, &cluster_id, "Cluster id in eight-byte ids (0..%d).", nullptr, 0, 0,
     int(eight_cluster_max), nullptr, nullptr, PGC_SUSET, 0, nullptr, nullptr, false},
    {"shardid.uuidv7_shard_bits", Kind::integer, &uuidv7_shard_bits,
     "Width of the shard field at the top of a UUIDv7's rand_b (0..%d).",
     "0: no shard field, rand_b is all random. Otherwise next_uuidv7() puts the node id there, next_uuidv7(shard) "
     "the shard; decode with uuidv7_decode(id, shard_bits).",
     0, 0, int(uuidv7_max_shard_bits), nullptr, nullptr, PGC_SUSET, 0, nullptr, nullptr, false},
    {"shardid.call_number_key", Kind::string, &call_number_key,
     "Name of the key-ring key from which the call-number bit shuffle is derived.",
     "Changing it changes every call number's text.", 0, 0, 0, "default", nullptr, PGC_SUSET, 0, nullptr, nullptr,
     false},
    {"shardid.wal_log_mark", Kind::boolean, &wal_log_mark,
     "WAL-logs the node's high-water mark and counter floors, so standbys replay them.",
     "Needs shared_preload_libraries = 'shardid' on the primary and on every standby. Off, a promoted standby does "
     "not know the old primary's mark.",
     true, 0, 0, nullptr, nullptr, PGC_SIGHUP, 0, nullptr, nullptr, false},
    {"shardid.etcd_wait", Kind::integer, &etcd_wait_ms,
     "How long a generator waits for a claim or a counter from etcd, or for a layout's next tick.",
     "After it, generation fails with SQLSTATE 55000; a next tick further away (a second at least) at once.", 10000, 0,
     3600000, nullptr, nullptr, PGC_SUSET, GUC_UNIT_MS | etcd_flags, nullptr, nullptr, false},
    {"shardid.citus_fence", Kind::integer, &citus_fence_ms,
     "How long a Citus worker issues IDs under its group id, and uses the coordinator's keys, after the coordinator "
     "last confirmed them (2 s to 10 min).",
     "With shardid.node_id_source = citus a worker's background worker asks the coordinator every second whether "
     "this server is still its group's primary; without an answer the worker stops issuing this long after the last "
     "one, and a new server of the group waits this long after the old one's last confirmation. The same worker "
     "leases the coordinator's key ring for this long (on the coordinator: the longest lease it grants, which a "
     "change of the ring waits out).",
     10000, 2000, 600000, nullptr, nullptr, PGC_SIGHUP, GUC_UNIT_MS | etcd_flags, nullptr, nullptr, false},
    {"shardid.max_shard_claims", Kind::integer, &max_shard_claims,
     "How many shard field values this node may hold in etcd at once.",
     "Each value a generator writes into an ID's shard field (the node id, or an explicit shard) is claimed in etcd "
     "and held while used; past this many, generation fails with SQLSTATE 53400.",
     10000, 16, 100000, nullptr, nullptr, PGC_POSTMASTER, etcd_flags, nullptr, nullptr, true},
    {"shardid.shard_idle_release", Kind::integer, &shard_idle_release_s,
     "How long a shard value held in etcd may go without an ID before this node gives it back.",
     "Another node can then claim it; this node's own node id is kept while the node id is.", 60, 1, 86400, nullptr,
     nullptr, PGC_SIGHUP, GUC_UNIT_S | etcd_flags, nullptr, nullptr, false},
    {"shardid.shards", Kind::string, &shards_setting,
     "The shards this node declares it owns, such as '0-511,1024' (empty: any).",
     "A generator given an explicit shard outside them fails with SQLSTATE 55000. With node ids from settings this is "
     "the operator's word; in etcd mode each shard is also claimed.",
     0, 0, 0, "", nullptr, PGC_SIGHUP, 0, nullptr, check_shards, false, assign_shards},
    {"shardid.etcd_endpoints", Kind::string, &etcd_endpoints, "etcd client URLs, separated by commas.",
     "Used when shardid.node_id_source is etcd; tried in turn.", 0, 0, 0, "", nullptr, PGC_POSTMASTER, etcd_flags,
     nullptr, nullptr, true},
    {"shardid.etcd_prefix", Kind::string, &etcd_prefix, "The etcd key prefix under which shardid keeps its keys.",
     "Nodes that share a prefix share node ids and counters.", 0, 0, 0, "/shardid", nullptr, PGC_POSTMASTER, etcd_flags,
     nullptr, nullptr, true},
    {"shardid.etcd_lease_ttl", Kind::string, &etcd_lease_ttl_text, lease_ttl_description(),
     "The node stops issuing IDs a margin before the lease can expire when it cannot renew it; another node can take "
     "its id after it expired.",
     0, 0, 0, "10s", nullptr, PGC_POSTMASTER, etcd_flags, nullptr, nullptr, true},
    {"shardid.etcd_user", Kind::string, &etcd_user, "etcd user name (empty: no authentication).", nullptr, 0, 0, 0, "",
     nullptr, PGC_POSTMASTER, etcd_flags, nullptr, nullptr, true},
    {"shardid.etcd_password_file", Kind::string, &etcd_password_file, "File holding the etcd user's password.", nullptr,
     0, 0, 0, "", nullptr, PGC_POSTMASTER, etcd_flags, nullptr, nullptr, true},
    {"shardid.etcd_cacert", Kind::string, &etcd_cacert, "CA certificate file for https etcd endpoints.", nullptr, 0, 0,
     0, "", nullptr, PGC_POSTMASTER, etcd_flags, nullptr, nullptr, true},
    {"shardid.etcd_cert", Kind::string, &etcd_cert, "Client certificate file for etcd.", nullptr, 0, 0, 0, "", nullptr,
     PGC_POSTMASTER, etcd_flags, nullptr, nullptr, true},
    {"shardid.etcd_key", Kind::string, &etcd_key, "Client key file for etcd.", nullptr, 0, 0, 0, "", nullptr,
     PGC_POSTMASTER, etcd_flags, nullptr, nullptr, true},
    {"shardid.etcd_node_id_min", Kind::string, &etcd_node_id_min_text,
     "Lowest node id claimed when shardid.node_id is -1.", nullptr, 0, 0, 0, "0", nullptr, PGC_POSTMASTER, etcd_flags,
     nullptr, nullptr, true},
    {"shardid.etcd_node_id_max", Kind::string, &etcd_node_id_max_text,
     "Highest node id claimed when shardid.node_id is -1.",
     "Keep it within the node field of every scheme in use (1023 fits them all).", 0, 0, 0, "1023", nullptr,
     PGC_POSTMASTER, etcd_flags, nullptr, nullptr, true},
};

// The short description, with "%d" replaced by the maximum (kept for the
// life of the process, as PostgreSQL keeps the pointer).
const char* short_desc(const Setting& s)
{
    const char* at = strstr(s.short_desc, "%d");
    if (at == nullptr)
        return s.short_desc;
    return MemoryContextStrdup(TopMemoryContext,
                               psprintf("%.*s%d%s", int(at - s.short_desc), s.short_desc, s.max, at + 2));
}

// The settings whose configured value was not accepted, as given, and
// whether that was at server start (preloaded) or in this session.
std::string refused, reason;
bool refused_at_start = false;
bool refused_without_preload = false;  // a setting that takes effect only when preloaded

// Would PostgreSQL accept `given` for the setting just defined? Asked as
// for a value from postgresql.conf, without setting it (nothing is logged):
// 0 is a refusal; a valid value not applied returns -1.
bool accepted(const char* name, const char* given)
{
    return set_config_option(name, given, PGC_POSTMASTER, PGC_S_FILE, GUC_ACTION_SET, false, DEBUG5, false) != 0;
}

void refuse(const char* name, const char* given, const char* why)
{
    refused += std::string(refused.empty() ? "" : ", ") + name + " = '" + printable(given) + "'" + why;
}

// Is `given` the name of an enumeration setting's default?
bool is_boot_option(const Setting& s, const char* given)
{
    for (const config_enum_entry* o = s.options; o->name != nullptr; o++)
        if (o->val == s.boot && pg_strcasecmp(o->name, given) == 0)
            return true;
    return false;
}

}  // namespace

const char* refused_settings() { return refused.c_str(); }

const ShardDeclaration& shard_declaration()
{
    if (shards_seen == shards_assigned)
        return declared;
    shards_seen = shards_assigned;
    const char* text = shards_setting ? shards_setting : "";
    if (declared_text != text) {
        std::string why;
        std::vector<etcd::ShardRange> set;
        if (!etcd::parse_shard_set(text, INT32_MAX, &set, &why))
            set.clear();  // checked when set: never reached
        declared.multirange = etcd::shard_set_multirange(set);
        declared.fingerprint = etcd::text_fingerprint(declared.multirange);
        declared.set.swap(set);
        declared.generation++;
        declared_text = text;
    }
    return declared;
}

bool shard_declared(int64_t shard)
{
    if (shards_setting == nullptr || shards_setting[0] == '\0')
        return true;
    return etcd::shard_set_contains(shard_declaration().set, shard);
}

const char* refused_reason() { return reason.empty() ? nullptr : reason.c_str(); }

const char* refused_hint()
{
    if (refused_without_preload)
        return "Add shardid to shared_preload_libraries in postgresql.conf and restart the server (or set the "
               "setting back to its default).";
    return refused_at_start
               ? "Correct the setting in postgresql.conf (or with ALTER SYSTEM) and restart the server."
               : "Correct the setting where it is configured (reload the configuration if that is postgresql.conf) and "
                 "start a new session.";
}

// The setting `name` as PostgreSQL keeps it (a placeholder too), or nullptr.
const config_generic* find_setting(const char* name)
{
#if PG_VERSION_NUM >= 160000
    return find_option(name, false, true, DEBUG5);
#else
    config_generic** vars = get_guc_variables();
    for (int i = 0, n = GetNumConfigOptions(); i < n; i++)
        if (pg_strcasecmp(vars[i]->name, name) == 0)
            return vars[i];
    return nullptr;
#endif
}

// Whether someone configured the setting `name` (a placeholder's value
// too): a placeholder whose line was removed from the configuration and
// reloaded keeps an empty value of the default source (PostgreSQL 16 on),
// which nobody configured.
bool configured(const char* name)
{
    const config_generic* g = find_setting(name);
    return g != nullptr && g->source > PGC_S_DEFAULT;
}

void setting_origin(const char* name, char* out, size_t size)
{
    const config_generic* g = find_setting(name);
    if (g == nullptr || g->source <= PGC_S_DYNAMIC_DEFAULT) {
        snprintf(out, size, "its default");
        return;
    }
    if (g->source == PGC_S_FILE && g->sourcefile != nullptr) {
        const char* slash = strrchr(g->sourcefile, '/');
        const char* file = slash ? slash + 1 : g->sourcefile;
        if (strcmp(file, PG_AUTOCONF_FILENAME) == 0)
            snprintf(out, size, "%s line %d, written by ALTER SYSTEM (ALTER SYSTEM RESET %s undoes it)", file,
                     g->sourceline, name);
        else
            snprintf(out, size, "%s line %d", file, g->sourceline);
        return;
    }
    const char* how = "a SET in this session";
    switch (g->source) {
    case PGC_S_ENV_VAR: how = "an environment variable"; break;
    case PGC_S_FILE: how = "a configuration file"; break;
    case PGC_S_ARGV: how = "the server's command line"; break;
    case PGC_S_GLOBAL: how = "ALTER ROLE ALL SET"; break;
    case PGC_S_DATABASE: how = "ALTER DATABASE SET"; break;
    case PGC_S_USER: how = "ALTER ROLE SET"; break;
    case PGC_S_DATABASE_USER: how = "ALTER ROLE IN DATABASE SET"; break;
    case PGC_S_CLIENT: how = "the client's connection options"; break;
    default: break;
    }
    snprintf(out, size, "%s", how);
}

void define_settings()
{
    for (const Setting& s : settings) {
        if (s.at_start && !process_shared_preload_libraries_in_progress) {
            // Loaded later: the node takes its id from shardid.node_id (no
            // worker to claim one), so a node told to take it from elsewhere
            // must not issue under shardid.node_id instead.
            const char* given = configured(s.name) ? GetConfigOption(s.name, true, false) : nullptr;
            if (s.kind == Kind::enumeration && given != nullptr && !is_boot_option(s, given)) {
                refuse(s.name, given, " (takes effect only with shared_preload_libraries = 'shardid')");
                refused_without_preload = true;
            }
            continue;
        }
        // A value configured before shardid was loaded waits as a
        // placeholder; defining the setting applies it, or keeps the
        // default with only a WARNING when it is malformed or out of range.
        // A default nobody chose is not trusted (see refused_settings()).
        // (Copied with pstrdup: PostgreSQL may raise in between, and no C++
        // object with a destructor may be alive then.)
        const char* placeholder = configured(s.name) ? GetConfigOption(s.name, true, false) : nullptr;
        const char* given = placeholder ? pstrdup(placeholder) : nullptr;
        const char* desc = short_desc(s);
        switch (s.kind) {
        case Kind::integer:
            DefineCustomIntVariable(s.name, desc, s.long_desc, static_cast<int*>(s.variable), s.boot, s.min, s.max,
                                    s.context, s.flags, s.int_check, nullptr, nullptr);
            break;
        case Kind::boolean:
            DefineCustomBoolVariable(s.name, desc, s.long_desc, static_cast<bool*>(s.variable), s.boot != 0, s.context,
                                     s.flags, nullptr, nullptr, nullptr);
            break;
        case Kind::enumeration:
            DefineCustomEnumVariable(s.name, desc, s.long_desc, static_cast<int*>(s.variable), s.boot, s.options,
                                     s.context, s.flags, nullptr, nullptr, nullptr);
            break;
        case Kind::string:
            DefineCustomStringVariable(s.name, desc, s.long_desc, static_cast<char**>(s.variable), s.boot_string,
                                       s.context, s.flags, s.string_check, s.string_assign, nullptr);
            break;
        }
        if (given != nullptr && !accepted(s.name, given))
            refuse(s.name, given, "");
    }
    MarkGUCPrefixReserved("shardid");
    refused_at_start = process_shared_preload_libraries_in_progress;
    if (refused.empty())
        return;
    reason = "a configured value was not accepted: " + refused;
    ereport(WARNING, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("shardid issues no IDs: %s", reason.c_str()),
                      errdetail("PostgreSQL keeps the default instead, and shardid does not issue IDs under a "
                                "value nobody configured."),
                      errhint("%s", refused_hint())));
}

}  // namespace shardid::pg
