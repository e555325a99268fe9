// The node state: what a node persists (a file in the data directory, and a
// WAL record its standbys replay) so that it never issues an ID again after
// a restart, a crash or a failover. One definition, one codec, used by the
// state file, the WAL record, redo, its description and shardid_status.
//
//   - mark_ms: the high-water mark, a Unix-ms time that every issued ID's
//     tick starts before (written about a second ahead of use);
//   - retired_ms: every ID of a layout shape that has no mark of its own
//     (below) lies in a tick that ends at or before it (marks are retired
//     into it once their tick is over);
//   - generator_floor, run_floor: the highest DecimalId generator id and
//     call-number run id this node ever took, in any database (-1: none);
//   - marks: for layouts whose tick is longer than the lease, a mark in
//     (tick, sequence) terms, so a restart resumes within the tick;
//   - etcd_release: with node ids from etcd, the token of this data
//     directory's last clean release of its claim, also recorded in the
//     mark in etcd (src/core/etcd/rules.hpp): a restart whose state holds the
//     token etcd holds resumes without raising its layouts (0: none);
//   - etcd_claim: with node ids from etcd, the highest mark in etcd that a
//     claim of this data directory started above (the previous holder's):
//     every layout resumes above the tick that contains it, after a clean
//     restart too, which finds its own token and raises nothing itself: a
//     layout with long ticks may have had no slot, so no mark of its own,
//     in the life that raised it (0: none);
//   - etcd_ttl: with node ids from etcd, the longest lease TTL (ms) this
//     node knows any node under its prefix to use (etcd's history records
//     it, src/core/etcd/continuity.hpp): a history this node makes after
//     etcd lost its data settles for that long, even right after a restart
//     (0: none known).
//   - call_eras: the call-number key eras this node recorded as the one
//     that hands out run ids (src/core/callnum.hpp): era, key fingerprint,
//     the last run id taken in it.
//   - history, history_began: the node's history, a random token drawn
//     when a data directory first holds no history (a new cluster, or one
//     of a release before 1.4), and when it was drawn. Each database with
//     shardid records the histories its IDs came from (its table
//     shardid_lineage, which pg_dump dumps and pg_upgrade carries): a
//     database naming a history the node neither is nor adopted was made
//     elsewhere, and generation there is refused (docs/install.md,
//     "Upgrading PostgreSQL"). WAL carries it: a standby continues its
//     primary's history.
//   - awaiting: 1 in a data directory pg_upgrade wrote into, until the
//     state of the server it upgraded is adopted: pg_upgrade carries the
//     relation files, never this state, so until then nothing is issued.
//   - adopted: the histories whose states were merged into this one
//     (shardid_adopt_state()): history, when (Unix ms).
//
// The text format, version 3 (versions 1 and 2 are read too):
//
//   shardid node state v3
//   mark <int64>
//   retired <int64>
//   generator <int64>
//   run <int64>
//   etcd_release <int64>
//   etcd_claim <int64>
//   etcd_ttl <int64>
//   layout <name> <epoch_ms> <unit_ms> <time_bits> <shard_bits> <sequence_bits> <sequence_first> <wraps> <word>
//   call_era <era> <key fingerprint> <low>    (1.3; ascending, each era once)
//   history <int64>, history_began <int64>, awaiting <0|1>   (1.4)
//   adopted <history> <at_ms>                  (1.4; each history once)
//
// Names are written with every byte outside '!'..'~', and '%', as %XX, so
// any name reads back. The codec is total: parse(format(s)) == s for every
// value a NodeState can hold (the fuzz target checks it).
//
// What a reader does not know: a line whose keyword (lowercase letters and
// '_') it does not know is skipped, so a newer minor version may add a line
// and an older standby still replays its records (it loses only what the
// new line says: add a line only when ignoring it is safe until the reader
// is upgraded, which is why standbys are upgraded first). A known line that
// does not parse, a missing mark, or a header of a higher version (v4 on)
// makes the whole state unreadable.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/callnum.hpp"
#include "core/decimal.hpp"
#include "core/layout.hpp"
#include "core/status.hpp"

namespace shardid {

struct LayoutMark {
    char name[max_name_len + 1] = {};  // the layout that first used the shape, for people
    Shape shape;
    uint64_t word = 0;  // every issued packed (tick, sequence) word of the shape is at most this
};

// The histories a node adopted (shardid_adopt_state()).
struct AdoptedHistory {
    int64_t history = 0;
    int64_t at_ms = 0;
};
struct Histories {
    static constexpr int max = 32;
    int n = 0;
    AdoptedHistory list[max];

    bool has(int64_t history) const
    {
        for (int i = 0; i < n; i++)
            if (list[i].history == history)
                return true;
        return false;
    }
    // Adds a history (true; nothing when it is there already), or false
    // when the list is full. History 0 (none) is never listed.
    bool add(int64_t history, int64_t at_ms)
    {
        if (history <= 0 || has(history))
            return history > 0;
        if (n == max)
            return false;
        list[n++] = AdoptedHistory{history, at_ms};
        return true;
    }
    bool operator==(const Histories& o) const
    {
        if (n != o.n)
            return false;
        for (int i = 0; i < n; i++)
            if (list[i].history != o.list[i].history || list[i].at_ms != o.list[i].at_ms)
                return false;
        return true;
    }
};

struct NodeState {
    static constexpr int max_marks = 128;
    int64_t mark_ms = 0;
    int64_t retired_ms = 0;
    int64_t generator_floor = -1;
    int64_t run_floor = -1;
    int64_t release_token = 0;
    int64_t claim_floor_ms = 0;
    int64_t fleet_ttl_ms = 0;
    int64_t history = 0;
    int64_t history_began_ms = 0;
    int64_t awaiting = 0;
    int n_marks = 0;
    LayoutMark marks[max_marks];
    CallEras call_eras;
    Histories adopted;

    bool operator==(const NodeState& o) const;
};

// The node state's scalar fields, in the order the text format writes
// them: each is one line "keyword value". A field needs a member of
// NodeState above (with the value a state without it has) and a row here:
// the codec, the comparison, the WAL record's description, the fuzz
// target's round trip and, for counter floors, the glue (shared memory,
// persisting, claiming, redo: src/pg/state/persist.cpp) all go through this
// table. `since` is the format version that introduced the keyword (a
// reader of an older file does not look for it); `required` fields must
// be present.
enum class NodeStateFieldKind {
    time_mark,      // every issued tick starts before it (src/core/state/time_mark.hpp)
    retired_floor,  // coarse layouts without a mark resume after it
    counter_floor,  // the highest value of a counter the node ever took: never taken again
    release_token,  // this data directory's own, never replayed from WAL (a standby's is its own)
    claim_floor,    // this data directory's own too: a standby claims its node id itself when promoted
    fleet_ttl,      // this data directory's own too: what its coordinator learned of the fleet
    history,        // the node's history (a random token; WAL carries it to standbys)
    history_began,  // when that history began (Unix ms)
    awaiting,       // 1: a pg_upgrade target that has not adopted its predecessor's state
};

// Fields that belong to the data directory, not to the node's history: the
// WAL record carries 0 for them (a standby has its own), and redo ignores them.
constexpr bool node_state_field_own(NodeStateFieldKind kind)
{
    return kind == NodeStateFieldKind::release_token || kind == NodeStateFieldKind::claim_floor ||
           kind == NodeStateFieldKind::fleet_ttl;
}
struct NodeStateField {
    const char* keyword;
    int64_t NodeState::*member;
    int since;
    bool required;
    NodeStateFieldKind kind;
    const char* description;  // for people: "<description> <value><unit>"
    const char* unit;
    // Counter floors: what the counter hands out, in messages. Each is also
    // handed out cluster-wide by etcd (key <prefix>/counter/<keyword>) when
    // node ids come from there; `max` is the highest value its field holds.
    const char* counts = nullptr;
    int64_t max = 0;
};
inline constexpr NodeStateField node_state_fields[] = {
    {"mark", &NodeState::mark_ms, 2, true, NodeStateFieldKind::time_mark, "high-water mark", " (Unix ms)"},
    {"retired", &NodeState::retired_ms, 3, false, NodeStateFieldKind::retired_floor, "retired marks end by", ""},
    {"generator", &NodeState::generator_floor, 2, false, NodeStateFieldKind::counter_floor, "generator id floor", "",
     "DecimalId generator id", decimal_generator_max},
    {"run", &NodeState::run_floor, 2, false, NodeStateFieldKind::counter_floor, "run id floor", "",
     "call-number run id", call_run_max},
    {"etcd_release", &NodeState::release_token, 3, false, NodeStateFieldKind::release_token, "etcd release token", ""},
    {"etcd_claim", &NodeState::claim_floor_ms, 3, false, NodeStateFieldKind::claim_floor, "etcd claim floor",
     " (Unix ms)"},
    {"etcd_ttl", &NodeState::fleet_ttl_ms, 3, false, NodeStateFieldKind::fleet_ttl, "etcd fleet's longest lease TTL",
     " ms"},
    {"history", &NodeState::history, 3, false, NodeStateFieldKind::history, "history", ""},
    {"history_began", &NodeState::history_began_ms, 3, false, NodeStateFieldKind::history_began, "history began",
     " (Unix ms)"},
    {"awaiting", &NodeState::awaiting, 3, false, NodeStateFieldKind::awaiting, "awaits its predecessor's state", ""},
};
constexpr int node_state_field_count = int(sizeof node_state_fields / sizeof node_state_fields[0]);

// Every counter floor says what it counts (messages, etcd's counters) and
// how far.
constexpr bool counter_floors_named()
{
    for (const NodeStateField& f : node_state_fields)
        if (f.kind == NodeStateFieldKind::counter_floor && (f.counts == nullptr || f.max <= 0))
            return false;
    return true;
}
static_assert(counter_floors_named(), "a counter floor of node_state_fields needs its `counts`");

// The index of a field in the table, by keyword (-1: none).
constexpr int node_state_field(const char* keyword)
{
    for (int i = 0; i < node_state_field_count; i++) {
        const char* a = node_state_fields[i].keyword;
        const char* b = keyword;
        while (*a != '\0' && *a == *b)
            a++, b++;
        if (*a == *b)
            return i;
    }
    return -1;
}

// The longest text a NodeState formats to.
constexpr size_t node_state_max_text = 56000;

// Writes the state as text into out[0..cap) (no terminating NUL) and
// returns its length; a length above cap means it did not fit. Allocates
// nothing and never throws.
size_t node_state_format(const NodeState& state, char* out, size_t cap);

// Parses text of `len` bytes; on success fills *state and returns true, on
// failure leaves *state empty (NodeState{}) and returns false.
bool node_state_parse(const char* text, size_t len, NodeState* state);

// Can the engine use every mark (well-formed shapes)? The codec reads
// anything it writes; this says whether it makes sense.
Status node_state_check(const NodeState& state);

// Histories as people and shardid_lineage write them: 16 lowercase hex
// digits. history_text() writes 16 characters and a NUL into out.
constexpr int history_text_len = 16;
void history_text(int64_t history, char out[history_text_len + 1]);
// A history from its text (exactly 16 lowercase hex digits, not all zero,
// below 2^63); false otherwise.
bool history_parse(const char* text, size_t len, int64_t* history);

// Is `history` this node's own or one it adopted?
bool history_known(const NodeState& node, int64_t history);

// May `node` adopt `from` (the state of the server a database came from)?
// Not a state that awaits adoption itself (an upgraded server's own, not
// its predecessor's), nor a node's own while it awaits its predecessor's;
// and the histories must fit the list.
Status adopt_check(const NodeState& node, const NodeState& from);

// Records what adopting `from` adds to node's histories (from's history
// and every history it adopted, at now_ms) and ends its wait. The rest of
// the state (marks, floors, eras) is raised by the glue, as redo raises it.
// Call after adopt_check().
void adopt_histories(NodeState& node, const NodeState& from, int64_t now_ms);

}  // namespace shardid
