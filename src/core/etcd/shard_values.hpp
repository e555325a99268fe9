// Claims of shard field values in etcd (docs/coordination.md, "Shard
// values"): the rules, pure. In etcd mode a node issues an ID only while it
// holds the value of the ID's shard field: its own node id, or an explicit
// shard (next_snowflake_id(5)), each claimed on first use like a node id
// and kept while used. The glue: src/pg/etcd/shard_claims.cpp (the table in
// shared memory and the generators' side), src/pg/etcd/worker/values.cpp (the
// coordinator's side).
//
// Keys: a value V of claim space S is held through <prefix>/shard/S/V, put
// under the holder's lease (it goes when the lease does), and marked in
// <prefix>/shardmark/S/V, which outlives holders:
//   "<floor_ms> <16 hex token> <holder node id> held|released <word> <bound>"
// written with the claim (the floor: every ID of the value so far lies in
// or below its tick; the holder's node id; its claim's token; the word:
// what the holder's slot was raised above, the layout's pack(tick,
// sequence), 0: nothing) and, at a release, with the last tick the
// holder's slot issued and that slot's word. A new holder continues its
// slot above a released word (in the same tick: a layout with one-minute
// ticks does not wait for the next minute after a clean handover), or,
// after a holder that did not release (a crash, a lost lease), above the
// higher of the floor and that holder's node mark (<prefix>/mark/<id>):
// every ID a node issues lies below its node mark. A holder that finds its
// own mark raises above the word in it again (the raise may not have
// survived: an answer lost, a restart before the first ID).
//
// The bound (coarse layouts, ticks longer than a second; 0 otherwise): no
// word the holder issues with the value lies above it. The holder moves it
// ahead in etcd (under its claim) before its IDs reach it, an eighth of a
// tick's sequences at a time; a new holder after one that did not release
// continues above the bound, in the same tick, at once (a one-minute
// layout does not wait for the minute after the previous holder's window).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/layout.hpp"

namespace shardid::etcd {

// The claim space of a layout: IDs of two layouts can be equal, for one
// shard field value, only when their shapes are equal (epoch, unit, the
// three widths, wrapping, first sequence), the rule by which layouts
// already share node state. Its name in keys, e.g. snowflake's
// "e1288834974657u1t41s10q12"; "w" marks a wrapping layout, "f<n>" a
// first sequence other than 0.
std::string space_name(const Shape& shape);
std::string shard_key(const std::string& prefix, const std::string& space, int64_t value);
std::string shard_mark_key(const std::string& prefix, const std::string& space, int64_t value);
// <prefix>/shardwant/S/V: node V wants value V of S back as its own id
// (another node holds it as an explicit shard), put under its lease.
std::string shard_want_key(const std::string& prefix, const std::string& space, int64_t value);
// <prefix>/shardretired/S: the marks of values given back for idleness are
// deleted (etcd does not grow with every value ever asked for) and their
// words folded into this one key of their space, "<word>": the highest
// word any of them carried. A value without a mark continues above it.
std::string shard_retired_key(const std::string& prefix, const std::string& space);
// "<word>", a non-negative decimal; false for anything else.
bool parse_retired(const std::string& text, uint64_t* word);

struct ShardMark {
    int64_t floor_ms = 0;  // the holder's floor (held), or its last tick issued (released)
    uint64_t token = 0;    // the claim's token (etcd::Mark): whose mark it is
    int holder = -1;       // the node id of the holder that wrote it
    bool released = false;
    uint64_t word = 0;   // held: the word its slot was raised above; released: its slot's word; 0: none
    uint64_t bound = 0;  // held, coarse layouts: no word issued with the value lies above it; 0: none
};
std::string shard_mark_value(const ShardMark& mark);
// False for anything shard_mark_value() never writes, and a holder outside
// 0..max_holder.
bool parse_shard_mark(const std::string& text, int max_holder, ShardMark* out);

// Whether the holder of a value of `shape` keeps a bound in its mark:
// layouts whose ticks are longer than a second and whose time field does
// not wrap.
bool keeps_bound(const Shape& shape);
// The bound to record so that the next word, at least `need` (the slot's
// last word, or what a generator waits for), is covered at the wall clock
// now_ms: an eighth of a tick's sequences above it, never past the end of
// its tick; within lead_ms / 2 of the tick's end, into the next tick (its
// IDs then begin at once). It also reaches the holder's fence (reach_ms,
// as a wall time: while the lease may be the holder's, it issues without
// etcd): every tick before the fence's whole, and the first eighth of the
// fence's tick, so an etcd outage shorter than the fence stalls no layout
// (a 2-second tick's layout crossed its bound within a 5 s pause before).
// A holder that stopped without releasing is followed above it, and the
// next holder claims only once the lease expired, past the fence: its IDs
// begin at once. 0 when the tick of `need` is beyond the time field.
uint64_t bound_target(const Shape& shape, uint64_t need, int64_t now_ms, int64_t lead_ms, int64_t reach_ms);
// Whether a recorded bound must move now: it is below `need`, or less than
// half its step (a sixteenth of a tick's sequences) above it, or the tick
// nears its end and the bound is not yet in the next tick, or the fence
// (reach_ms) moved into a tick the bound does not reach.
bool bound_due(const Shape& shape, uint64_t bound, uint64_t need, int64_t now_ms, int64_t lead_ms, int64_t reach_ms);

// The floor a new holder starts above: a released mark's own tick; a held
// one's floor or, above it, the node mark of its holder (node_mark_ms; -1:
// no node mark: the holder's IDs cannot be bounded, false).
bool shard_floor(const ShardMark& mark, int64_t node_mark_ms, int64_t* floor_ms);

// shardid.shards: the shard values a node declares it owns, as
// "0-511,1024" (ranges and single values, ascending or not, 0..max).
struct ShardRange {
    int64_t lo, hi;
};
bool parse_shard_set(const std::string& text, int64_t max, std::vector<ShardRange>* out, std::string* why);
bool shard_set_contains(const std::vector<ShardRange>& set, int64_t value);
// The set as PostgreSQL's int4multirange/int8multirange text, "{[0,511],[1024,1024]}"
// ("{}" when empty), in the order parse_shard_set() sorted it: the same
// set always gives the same text (Citus: what a worker declares to the
// coordinator, and the fingerprint its generators compare).
std::string shard_set_multirange(const std::vector<ShardRange>& set);
// A 64-bit FNV-1a fingerprint of a text, never 0 (0 means "none").
uint64_t text_fingerprint(const std::string& text);

}  // namespace shardid::etcd
