#!/usr/bin/python3
"""The nemesis run's checker: judges a history of operations (one JSON
object per line, as test/etcd/nemesis/nemesis.py writes it) and the fault
schedule, and prints the summary; its last line is

  anomalies: N (D duplicates, O order violations, B below a previous holder,
  S shared counters, K key violations), M operations

Usage: checker.py DIR [--control KIND]   (DIR holds history.jsonl,
faults.jsonl, run.json and tables.jsonl, every node's tables read back at
the end); checker.py --self-test checks the checker on planted histories.
Exit status 0 exactly when there is no anomaly and every contender was
asked for every scheme at least MIN_OPS times and succeeded at least once (with --control KIND: exactly when it
found anomalies of KIND, the kind the control exists for).

An operation: {"client", "node", "scheme", "kind", "t0", "t1", "outcome":
"ok"|"fail"|"unknown", "value", "nid", "error"}; t0/t1 monotonic seconds,
`nid` the node id the value carries (for DecimalIds the generator id, for
call numbers the run id; for an explicit shard, "<scheme>/shard", the
shard). A scheme's explicit shards share its values: duplicates and order
are judged per scheme family and shard field value, whoever wrote it.

  duplicates        a value returned twice for one scheme, on any nodes
  order violations  one shard field value (a node id, or an explicit
                    shard), one serving node: A completed before B was
                    invoked, yet A's value >= B's (time-ordered schemes)
  below a previous holder
                    the same across two serving nodes of one shard field
                    value: an ID at or below one another holder had
                    returned before
  shared counters   a DecimalId generator id or a call-number run id in
                    values returned by two nodes
  key violations    an INSERT refused by its primary key (23505): a
                    duplicate the database caught

Duplicates count the rows of every node's tables too (tables.jsonl): an
INSERT whose answer was lost (outcome unknown) may have committed a value
another node returned. Reported, not counted: overlapping holders, two
serving nodes whose successful operations under one node id overlap in
time (a pause or a slow answer can make that harmless; an ID below a
previous holder's is what it costs, and that is counted).
"""
import bisect
import collections
import json
import os
import sys

ORDERED = {"snowflake", "trace", "uuidv7", "minute", "instagram"}
COUNTERS = {"decimal": "DecimalId generator id", "call": "call-number run id"}


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


MIN_OPS = 10  # operations each contender must have had of each scheme for a verdict


def family(scheme):
    """The scheme whose values an operation's are: "snowflake/shard" writes snowflake IDs."""
    return scheme.split("/")[0]


def judge(ops, tables=()):
    found = collections.Counter()
    examples = collections.defaultdict(list)

    def note(kind, text):
        found[kind] += 1
        if len(examples[kind]) < 5:
            examples[kind].append(text)

    ok = [o for o in ops if o["outcome"] == "ok"]
    by_scheme = collections.defaultdict(collections.Counter)
    returned = collections.Counter()
    for o in ok:
        by_scheme[family(o["scheme"])][str(o["value"])] += 1
        if o.get("kind") == "insert":
            returned[(o["node"], family(o["scheme"]), str(o["value"]))] += 1
    # A row no successful INSERT of its node returned: committed by one
    # whose answer was lost. It counts like a returned value.
    for row in tables:
        if "value" in row and not returned[(row["node"], row["scheme"], str(row["value"]))]:
            by_scheme[row["scheme"]][str(row["value"])] += 1
    for scheme, values in by_scheme.items():
        for v, n in values.items():
            if n > 1:
                note("duplicates", f"{scheme} {v} returned {n} times")
    for o in ops:
        if o["outcome"] == "fail" and (o.get("error") or "").startswith("23505"):
            note("key violations", f"{o['scheme']} on {o['node']}: {o['error']}")

    # Real-time order per node id: sweep the operations by invocation,
    # adding those that completed before it, highest value per serving node.
    groups = collections.defaultdict(list)
    for o in ok:
        if family(o["scheme"]) in ORDERED and o["nid"] is not None:
            groups[(family(o["scheme"]), o["nid"])].append(o)
    for (scheme, nid), group in groups.items():
        by_end = sorted(group, key=lambda o: o["t1"])
        highest = {}
        i = 0
        for b in sorted(group, key=lambda o: o["t0"]):
            while i < len(by_end) and by_end[i]["t1"] < b["t0"]:
                a = by_end[i]
                if a["node"] not in highest or a["value"] > highest[a["node"]]["value"]:
                    highest[a["node"]] = a
                i += 1
            for node, a in highest.items():
                if a["value"] >= b["value"]:
                    kind = "order violations" if node == b["node"] else "below a previous holder"
                    note(kind, f"{scheme} node id {nid}: {a['value']} from {node} (done {a['t1']:.3f}) "
                               f">= {b['value']} from {b['node']} (asked {b['t0']:.3f})")

    # Two serving nodes under one node id at overlapping times (reported).
    overlapping = []
    for (scheme, nid), group in groups.items():
        spans = {}
        for o in group:
            lo, hi = spans.get(o["node"], (o["t0"], o["t1"]))
            spans[o["node"]] = (min(lo, o["t0"]), max(hi, o["t1"]))
        if len(spans) < 2:
            continue
        by_t0 = sorted(group, key=lambda o: o["t0"])
        for a, b in zip(by_t0, by_t0[1:]):
            if a["node"] != b["node"] and b["t0"] < a["t1"]:
                overlapping.append(f"{scheme} node id {nid}: {a['node']} ({a['t0']:.3f}-{a['t1']:.3f}) and "
                                   f"{b['node']} ({b['t0']:.3f}-{b['t1']:.3f})")
    examples["overlapping holders (reported, not counted)"] = overlapping[:5]
    found.setdefault("overlapping holders", 0)
    overlapping_count = len(overlapping)

    owners = collections.defaultdict(set)
    for o in ok:
        if o["scheme"] in COUNTERS and o["nid"] is not None:
            owners[(o["scheme"], o["nid"])].add(o["node"])
    for (scheme, nid), nodes in owners.items():
        if len(nodes) > 1:
            note("shared counters", f"{COUNTERS[scheme]} {nid} in values of {', '.join(sorted(nodes))}")
    del found["overlapping holders"]
    if not overlapping:
        del examples["overlapping holders (reported, not counted)"]
    return found, examples, overlapping_count


def too_few(ops, nodes, schemes):
    """What a verdict on the contenders lacks: (node, scheme, operations) of each contender and scheme under
    MIN_OPS operations, and (node, "any scheme", 0) for a contender that never succeeded (never issued under
    the contended id at all)."""
    n = collections.Counter((o["node"], o["scheme"]) for o in ops)
    few = [(node, s, n[(node, s)]) for node in nodes for s in schemes if n[(node, s)] < MIN_OPS]
    few += [(node, "any scheme", 0) for node in nodes if not any(o["node"] == node and o["outcome"] == "ok"
                                                                 for o in ops)]
    return few


def self_test():
    """The checker on planted histories: each anomaly must be found."""
    def op(node, scheme, value, t0, t1, nid=7, kind="insert", outcome="ok"):
        return {"client": node + "c0", "node": node, "scheme": scheme, "kind": kind, "t0": t0, "t1": t1,
                "outcome": outcome, "value": value, "nid": nid}
    clean = [op("n3", "snowflake", 10, 0.0, 0.1), op("n3", "snowflake", 20, 0.2, 0.3),
             op("n4", "snowflake", 30, 5.0, 5.1), op("n4", "snowflake", 40, 5.2, 5.3)]
    cases = [
        ("clean", clean, [], {}),
        ("a duplicate only in a table (an INSERT of unknown outcome that committed)",
         clean + [op("n4", "snowflake", None, 6.0, 8.0, outcome="unknown")],
         [{"node": "n3", "scheme": "snowflake", "value": 10}, {"node": "n3", "scheme": "snowflake", "value": 20},
          {"node": "n4", "scheme": "snowflake", "value": 30}, {"node": "n4", "scheme": "snowflake", "value": 40},
          {"node": "n4", "scheme": "snowflake", "value": 20}], {"duplicates": 1}),
        ("a returned duplicate", clean + [op("n1", "snowflake", 20, 6.0, 6.1, nid=None, kind="select")], [], {"duplicates": 1}),
        ("below a previous holder", clean + [op("n3", "snowflake", 35, 6.0, 6.1)], [], {"below a previous holder": 1}),
        ("order on one node", clean + [op("n4", "snowflake", 35, 6.0, 6.1)], [], {"order violations": 1}),
        ("below a previous holder of an explicit shard",
         [op("n1", "snowflake/shard", 100, 0.0, 0.1, nid=900), op("n2", "snowflake/shard", 90, 1.0, 1.1, nid=900)],
         [], {"below a previous holder": 1}),
        ("an explicit shard's ID equal to a node id's", clean + [op("n1", "snowflake/shard", 30, 9.0, 9.1)], [],
         {"duplicates": 1, "below a previous holder": 1}),
        ("a shared counter", [op("n1", "decimal", 1, 0, 0.1, nid=3), op("n2", "decimal", 2, 0, 0.1, nid=3)], [],
         {"shared counters": 1}),
    ]
    failed = 0
    for name, ops, tables, want in cases:
        found, _, _ = judge(ops, tables)
        got = {k: v for k, v in found.items() if v}
        ok = got == want
        failed += not ok
        print(f"{'PASS' if ok else 'FAIL'} checker self-test: {name}: found {got or 'nothing'}")
    _, _, overlaps_found = judge(clean + [op("n4", "snowflake", 50, 0.05, 0.15)], [])
    print(f"{'PASS' if overlaps_found else 'FAIL'} checker self-test: two holders at overlapping times are reported")
    failed += not overlaps_found
    return 1 if failed else 0


def overlaps(o, f):
    return o["t0"] < f["t"] + f["d"] and o["t1"] > f["t"]


RESTART_S = 3.0  # a server start, crash recovery included, on this machine
TICK_S = 60.0  # the minute layout's tick
# Faults after which a node claims anew (etcd losing its data: every node).
RECLAIM = {"kill-holder", "kill-node", "clock-restart", "delete-prefix", "replace-etcd", "restore-snapshot"}


def counts(ops, faults, width=22):
    """The summary's first lines: the faults by kind, the operations by outcome and scheme, and
    availability: overall, with no fault, and per kind of fault overlapping the operation."""
    lines = []
    kinds = collections.Counter(f["kind"] for f in faults)
    lines.append(f"faults: {sum(kinds.values())} of {len(kinds)} kinds")
    for k, n in sorted(kinds.items()):
        lines.append(f"  {k:<{width}} {n}")
    outcomes = collections.Counter(o["outcome"] for o in ops)
    lines.append(f"operations: {len(ops)}  ok {outcomes['ok']}  failed {outcomes['fail']}  unknown {outcomes['unknown']}")
    per_scheme = collections.Counter(o["scheme"] for o in ops)
    lines.append("  by scheme: " + ", ".join(f"{s} {n}" for s, n in sorted(per_scheme.items())))
    lines.append("availability (ok / operations overlapping a fault of the kind):")
    overall = outcomes["ok"] / len(ops) if ops else 0
    lines.append(f"  {'overall':<{width}} {overall:7.1%} of {len(ops)}")
    # Each operation's kinds of fault, in one pass over the faults that
    # start before it ends (sorted by start).
    by_start = sorted(faults, key=lambda f: f["t"])
    starts = [f["t"] for f in by_start]
    tally = collections.defaultdict(lambda: [0, 0])  # kind (None: no fault) -> [ok, all]
    for o in ops:
        hit = {f["kind"] for f in by_start[:bisect.bisect_left(starts, o["t1"])] if f["t"] + f["d"] > o["t0"]}
        for k in hit or {None}:
            tally[k][0] += o["outcome"] == "ok"
            tally[k][1] += 1
    if None in tally:
        good, n = tally[None]
        lines.append(f"  {'no fault':<{width}} {good / n:7.1%} of {n}")
    for k in sorted(kinds):
        if k in tally:
            good, n = tally[k]
            lines.append(f"  {k:<{width}} {good / n:7.1%} of {n}")
    return lines


def summary(ops, faults, start, end, ttl, wait, contenders=("n3", "n4"), lag=None):
    lines = counts(ops, faults)
    lines.append("longest gap without a successful ID, per node, against its bound:")
    lines.append(f"  (bound: the end of the faults on the node, its links, its id or etcd during the gap, plus the")
    lines.append(f"  lease TTL {ttl:g} s, shardid.etcd_wait {wait:g} s and {RESTART_S:g} s for a restart, plus {TICK_S:g} s")
    lines.append(f"  after a restart or a change of node id 7's holder (the minute layout's next tick; a fault on")
    lines.append(f"  either of {' and '.join(contenders)} can change it), plus the node's clock lag, if any; {wait + 1:g} s")
    lines.append(f"  without a fault)")
    lag = lag or {}

    def on_contender(f, node):
        # A fault that can take node id 7 from its holder (not a client
        # partition), when `node` is one of the contenders for it.
        return node in contenders and f["target"] in contenders and f["kind"] != "partition-client"

    def reclaims(f, node):
        # A restart, or a fault on either contender: a node then claims
        # above a mark it did not write in this life.
        return f["kind"] in RECLAIM or on_contender(f, node)
    over, over_examples = 0, []
    for node in sorted({o["node"] for o in ops}):
        times = sorted(o["t1"] for o in ops if o["node"] == node and o["outcome"] == "ok")
        points = [start] + times + [end]
        worst = None
        for a, b in zip(points, points[1:]):
            # After a restart, or when node id 7 changes hands (a kill of
            # its holder, or any fault on either contender), a node claims
            # above a mark it did not write in this life, and its minute
            # layout waits for the next minute (docs/coordination.md): up
            # to TICK_S more, and a node whose clock lags waits that much
            # longer for it.
            extra = TICK_S + lag.get(node, 0)
            on = [f for f in faults if f["t"] < b and f["t"] + f["d"] + extra > a and
                  (f["target"] == node or "etcd" in f["target"] or
                   (node in contenders and f["target"].startswith("holder-7")) or on_contender(f, node))]
            on = [f for f in on if f["t"] + f["d"] > a or reclaims(f, node)]
            bound = (max(f["t"] + f["d"] + (extra if reclaims(f, node) else 0) for f in on) - a + ttl +
                     wait + RESTART_S) if on else wait + 1
            if b - a > bound:
                over += 1
                if len(over_examples) < 5:
                    over_examples.append(f"  {node} {b - a:.1f} s from {a - start:.1f} s, bound {bound:.1f} s")
            if worst is None or b - a > worst[0]:
                worst = (b - a, a, bound, on)
        gap, at, bound, on = worst
        why = "; ".join(sorted({f"{f['kind']} {f['target']}" for f in on})) or "no fault on it"
        lines.append(f"  {node:<6} {gap:6.1f} s from {at - start:6.1f} s, bound {bound:5.1f} s"
                     f" ({'within' if gap <= bound else 'OVER'}; {why})")
    lines.append(f"gaps over their bound: {over}")
    lines += over_examples
    return lines


def arguments(argv):
    """A checker's command line: (DIR, control kind or None), or None for --self-test."""
    args = list(argv)
    if args == ["--self-test"]:
        return None
    control = None
    if "--control" in args:
        i = args.index("--control")
        control = args[i + 1]
        del args[i:i + 2]
    return args[0], control


def main():
    parsed = arguments(sys.argv[1:])
    if parsed is None:
        return self_test()
    d, control = parsed
    ops = load(os.path.join(d, "history.jsonl"))
    tables_path = os.path.join(d, "tables.jsonl")
    tables = load(tables_path) if os.path.exists(tables_path) else None
    faults = load(os.path.join(d, "faults.jsonl")) if os.path.exists(os.path.join(d, "faults.jsonl")) else []
    meta = json.load(open(os.path.join(d, "run.json"))) if os.path.exists(os.path.join(d, "run.json")) else {}
    start = meta.get("start", min((o["t0"] for o in ops), default=0))
    end = meta.get("end", max((o["t1"] for o in ops), default=0))
    for f in faults:  # the schedule's times are seconds into the run
        f["t"] += start
    # (Histories written before run.json named the contenders and clock
    # lags had these.)
    for line in summary(ops, faults, start, end, meta.get("lease_ttl_s", 5), meta.get("etcd_wait_s", 5),
                        tuple(meta.get("contenders", ["n3", "n4"])), meta.get("clock_lag_s", {"n4": 30.0})):
        print(line)
    found, examples, overlapping = judge(ops, tables or [])
    for kind, texts in examples.items():
        print(f"{kind}, for example:")
        for t in texts:
            print(f"  {t}")
    print(f"overlapping holders (reported): {overlapping}")
    valid = True
    if tables is None or any("unread" in r for r in tables):
        print("the nodes' tables were not all read back: no verdict on what unknown INSERTs committed")
        valid = False
    else:
        print(f"rows read back from the nodes' tables: {len(tables)}")
    contenders = meta.get("contenders", ["n3", "n4"])
    schemes = sorted({o["scheme"] for o in ops})
    few = too_few(ops, contenders, [s for s in schemes if "/" not in s])
    # The nodes that share explicit shards contend for them too.
    few += too_few(ops, meta.get("shard_contenders", []), [s for s in schemes if "/" in s])
    for node, scheme, n in few:
        print(f"too few operations: {node} {scheme}: {n} (at least {MIN_OPS} of each scheme, and one success)")
    ok_by = collections.Counter((o["node"], o["scheme"]) for o in ops if o["outcome"] == "ok")
    for node in contenders:
        print(f"successes of contender {node}: " + ", ".join(f"{s} {ok_by[(node, s)]}"
                                                            for s in sorted({o["scheme"] for o in ops})))
    if few and control is None:
        valid = False
    return verdict(found, ["duplicates", "order violations", "below a previous holder", "shared counters",
                           "key violations"], len(ops), valid, control)


def verdict(found, names, n_ops, valid, control):
    """Prints the last line, "anomalies: N (...), M operations", and returns the exit status: 0 exactly
    when the verdict is valid and there is no anomaly (with a control: anomalies of its kind)."""
    total = sum(found[n] for n in names)
    parts = ", ".join(f"{found[n]} {n}" for n in names)
    print(f"anomalies: {total} ({parts}), {n_ops} operations")
    if not n_ops or not valid:
        return 1
    if control is not None:
        return 0 if found[control] > 0 else 1
    return 0 if total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
