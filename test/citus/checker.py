#!/usr/bin/python3
"""The Citus nemesis' checker: judges what test/citus/nemesis.py wrote
(history.jsonl, faults.jsonl, tables.jsonl, final.json, run.json) and
prints the summary; its last line is

  anomalies: N (D duplicates, O order violations, B below a previous holder,
  S shared counters, K key violations, L lost rows, M key mismatches),
  P operations

Usage: checker.py DIR [--control duplicates]; checker.py --self-test.
Exit status 0 exactly when there is no anomaly, every slot's clients had
every scheme at least test/etcd/nemesis/checker.py's MIN_OPS times with a
success, and the cluster issued again after the last fault (with
--control: exactly when it found duplicates).

Duplicates, order and counters are test/etcd/nemesis/checker.py's judgement
(`judge()`: per scheme, per group id or logical shard across every server
that served it, in real time), the user layout ("layout") ordered like
TraceId. This checker adds:

  duplicates        also a value only in a table (an INSERT whose answer
                    was lost and that committed) equal to one returned
  lost rows         an acknowledged INSERT whose row (its operation number
                    and value) is not in its table at the end
  key mismatches    two obfuscate_id() of one number on different servers
                    with no key change between the first's invocation and
                    the last's completion, different; a reveal_id() in the
                    same statement not giving the number back; at the end,
                    a primary whose obfuscation differs from the
                    coordinator's or whose reveal of the coordinator's
                    values is not the numbers
"""
import collections
import importlib.util
import json
import os
import sys


# The etcd nemesis' checker (test/etcd/nemesis/checker.py), under a name of its own.
_spec = importlib.util.spec_from_file_location(
    "etcd_checker", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "etcd", "nemesis", "checker.py"))
base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(base)

base.ORDERED.add("layout")
NAMES = ["duplicates", "order violations", "below a previous holder", "shared counters", "key violations",
         "lost rows", "key mismatches"]


def load(path):
    return base.load(path) if os.path.exists(path) else []


def judge(ops, tables, faults, final):
    ids = [o for o in ops if o["scheme"] != "obfuscate"]
    found, examples, _ = base.judge(ids, [])

    def note(kind, text):
        found[kind] += 1
        if len(examples[kind]) < 5:
            examples[kind].append(text)

    # Rows no acknowledged INSERT returned, equal to a value returned.
    ok = [o for o in ids if o["outcome"] == "ok"]
    returned = collections.Counter((base.family(o["scheme"]), str(o["value"])) for o in ok)
    acked = collections.Counter((base.family(o["scheme"]), str(o["value"])) for o in ok if o["kind"] == "insert")
    rows = collections.Counter((base.family(r["scheme"]), str(r["value"])) for r in tables if r["scheme"] != "obfuscate")
    extra = rows - acked
    for key, n in extra.items():
        if returned[key] <= 1 and returned[key] + n > 1:
            note("duplicates", f"{key[0]} {key[1]}: in a table {n} time(s) beyond the INSERTs that returned it, "
                               f"returned {returned[key]} time(s)")
    # Every acknowledged row present.
    present = {(r["op"], str(r["value"])) for r in tables}
    for o in ops:
        if o["outcome"] == "ok" and o["kind"] == "insert" and (o["op"], str(o["value"])) not in present:
            note("lost rows", f"{o['scheme']} {o['value']} (operation {o['op']} on {o['node']}, "
                              f"acknowledged at {o['t1']:.3f})")
    # Obfuscation: the same number, no key change in between, one answer.
    changes = [(f["t"], f["t"] + f["d"]) for f in faults if f["kind"] == "key-change"]
    by_x = collections.defaultdict(list)
    for o in ops:
        if o["scheme"] == "obfuscate" and o["outcome"] == "ok":
            if str(o["nid"]) != str(o["x"]):
                note("key mismatches", f"{o['node']} revealed {o['value']} as {o['nid']}, not {o['x']}")
            by_x[o["x"]].append(o)
    for x, group in by_x.items():
        group.sort(key=lambda o: o["t0"])
        for a, b in zip(group, group[1:]):
            if a["node"] == b["node"] or a["value"] == b["value"]:
                continue
            lo, hi = min(a["t0"], b["t0"]), max(a["t1"], b["t1"])
            if not any(s < hi and e > lo for s, e in changes):
                note("key mismatches", f"obfuscate_id({x}): {a['value']} on {a['node']} ({a['t0']:.3f}-{a['t1']:.3f}), "
                                       f"{b['value']} on {b['node']} ({b['t0']:.3f}-{b['t1']:.3f}), no key change between")
    if final is not None:
        names = [k for k in final if " reveals " not in k]
        ref = final.get(names[0]) if names else None
        for name in names:
            got = final[name]
            if not isinstance(got, list):
                note("key mismatches", f"at the end, {name} refused to obfuscate: {got}")
            elif isinstance(ref, list) and [r[1] for r in got] != [r[1] for r in ref]:
                note("key mismatches", f"at the end, {name} obfuscates otherwise than {names[0]}")
            elif any(r[0] != r[2] for r in got):
                note("key mismatches", f"at the end, {name} does not reveal its own values")
        for name, got in final.items():
            # The numbers 1..n back, or an error's text.
            if " reveals " in name and not (isinstance(got, list) and got == list(range(1, len(got) + 1))):
                note("key mismatches", f"at the end, {name}'s values: {str(got)[:120]}")
    for k in NAMES:
        found.setdefault(k, 0)
    return found, examples


def summary(ops, faults, start, end):
    lines = base.counts(ops, faults, 26)
    for f in faults:
        if f.get("error"):
            lines.append(f"  a fault's own step failed: {f['kind']} at {f['t'] - start:.0f} s: {f['error']}")
    lines.append("why operations failed (SQLSTATE and message, numbers elided), most frequent first:")
    reasons = collections.Counter()
    for o in ops:
        if o["outcome"] != "ok":
            text = "".join("N" if ch.isdigit() else ch for ch in (o.get("error") or "no error text"))
            reasons[(o["outcome"], text[:150])] += 1
    for (outcome, text), n in reasons.most_common():
        lines.append(f"  {n:7d} {outcome:<7} {text}")
    lines.append("longest gap without a successful operation, per slot:")
    for slot in sorted({o["client"].split("/")[0] for o in ops}):
        times = sorted(o["t1"] for o in ops if o["client"].split("/")[0] == slot and o["outcome"] == "ok")
        points = [start] + times + [end]
        gap, at = max((b - a, a) for a, b in zip(points, points[1:]))
        why = "; ".join(sorted({f"{f['kind']} {f['target']}" for f in faults if f["t"] < at + gap and f["t"] + f["d"] + 30 > at}))
        lines.append(f"  {slot:<4} {gap:6.1f} s from {at - start:6.1f} s ({why or 'no fault'})")
    return lines


def self_test():
    def op(node, scheme, value, t0, t1, nid=1, kind="insert", outcome="ok", opn=None, x=None):
        return {"client": node.split(".")[0] + "/1", "node": node, "scheme": scheme, "kind": kind, "t0": t0, "t1": t1,
                "outcome": outcome, "value": value, "nid": nid, "op": opn if opn is not None else int(t0 * 1000), "x": x}
    clean = [op("w1.a", "layout", 10, 0.0, 0.1), op("w1.a", "layout", 20, 0.2, 0.3),
             op("w1.b", "layout", 30, 5.0, 5.1), op("w1.b", "layout", 40, 5.2, 5.3),
             op("c.a", "obfuscate", 777, 1.0, 1.1, nid=5, x=5), op("w2.a", "obfuscate", 777, 2.0, 2.1, nid=5, x=5)]
    rows = [{"scheme": o["scheme"], "op": o["op"], "value": o["value"]} for o in clean]
    final = {"c.a": [[1, 9, 1]], "w1.b": [[1, 9, 1]], "w1.b reveals c.a": [1]}
    cases = [
        ("clean", clean, rows, [], final, {}),
        ("a layout ID below the previous server's of its group", clean + [op("w1.a", "layout", 35, 6.0, 6.1)],
         rows + [{"scheme": "layout", "op": 6000, "value": 35}], [], final, {"below a previous holder": 1}),
        ("a row lost", clean, rows[1:], [], final, {"lost rows": 1}),
        ("a row of an unknown INSERT equal to a returned value",
         clean + [op("w2.a", "layout", None, 7.0, 9.0, outcome="unknown")],
         rows + [{"scheme": "layout", "op": 7000, "value": 20}], [], final, {"duplicates": 1}),
        ("two servers obfuscating one number otherwise, no key change",
         clean + [op("w1.b", "obfuscate", 778, 3.0, 3.1, nid=5, x=5, kind="select")], rows + [], [], final, {"key mismatches": 1}),
        ("... the same across a key change", clean + [op("w1.b", "obfuscate", 778, 3.0, 3.1, nid=5, x=5, kind="select")], rows,
         [{"kind": "key-change", "t": 2.5, "d": 0.2}], final, {}),
        ("a primary revealing the coordinator's values wrongly at the end", clean, rows, [],
         dict(final, **{"w1.b reveals c.a": [2]}), {"key mismatches": 1}),
    ]
    failed = 0
    for name, ops, tables, faults, fin, want in cases:
        found, _ = judge(ops, tables, faults, fin)
        got = {k: v for k, v in found.items() if v}
        good = got == want
        failed += not good
        print(f"{'PASS' if good else 'FAIL'} Citus checker self-test: {name}: found {got or 'nothing'}")
    return 1 if failed else 0


def main():
    parsed = base.arguments(sys.argv[1:])
    if parsed is None:
        return self_test()
    d, control = parsed
    ops = load(os.path.join(d, "history.jsonl"))
    faults = load(os.path.join(d, "faults.jsonl"))
    tables = load(os.path.join(d, "tables.jsonl"))
    meta = json.load(open(os.path.join(d, "run.json"))) if os.path.exists(os.path.join(d, "run.json")) else {}
    final = json.load(open(os.path.join(d, "final.json"))) if os.path.exists(os.path.join(d, "final.json")) else None
    start = meta.get("start", min((o["t0"] for o in ops), default=0))
    end = meta.get("end", max((o["t1"] for o in ops), default=0))
    for f in faults:
        f["t"] += start
    for line in summary(ops, faults, start, end):
        print(line)
    found, examples = judge(ops, tables, faults, final)
    for kind, texts in examples.items():
        if texts:
            print(f"{kind}, for example:")
            for t in texts:
                print(f"  {t}")
    valid = bool(meta) and final is not None
    print(f"rows read back: {len(tables)}")
    if not meta.get("settled", False):
        print("the cluster did not issue every scheme on every primary after the last fault")
        valid = control is not None and valid
    slots = sorted({o["client"].split("/")[0] for o in ops})
    schemes = sorted({o["scheme"] for o in ops})
    by = collections.Counter((o["client"].split("/")[0], o["scheme"]) for o in ops)
    good = collections.Counter((o["client"].split("/")[0], o["scheme"]) for o in ops if o["outcome"] == "ok")
    for slot in slots:
        for s in schemes:
            if by[(slot, s)] < base.MIN_OPS or not good[(slot, s)]:
                print(f"too few operations: {slot} {s}: {by[(slot, s)]}, {good[(slot, s)]} ok")
                valid = control is not None and valid
    return base.verdict(found, NAMES, len(ops), valid, control)


if __name__ == "__main__":
    sys.exit(main())
