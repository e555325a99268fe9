#!/usr/bin/python3
"""Load through every node of a Citus cluster on every write path, then a
check of the whole history (test/citus/ids.sh runs it).

  load.py --seconds N [--until FILE] --node NAME=PORT:GROUP ... [--expect-duplicates]

Clients, one connection each, for every node: router INSERT (one row,
RETURNING id), multi-row INSERT (10 rows), COPY (10 rows, each naming its
client), an INSERT into a reference table and into a table of a distributed
tenant schema (schema-based sharding). One more client on the first node
runs INSERT ... SELECT, pushed down (colocated tables: the workers evaluate
the default) and repartitioned (a different distribution column). Every
table's id is DEFAULT next_trace_id(): the node that evaluates the default
writes its Citus group id into the ID.

The check, on what the clients saw and what the tables hold at the end:
  - no ID appears twice, in any table or any answer;
  - the IDs one client got increase (one node issues them in order);
  - an ID a client got through node X, and every row COPY wrote through X,
    decodes to X's group; every other ID decodes to a node of the cluster.
Prints PASS/FAIL lines and the figures. With --expect-duplicates (the
negative control: every node on one hand-set id) the duplicates check
passes exactly when there are duplicates.
"""
import argparse
import os
import collections
import random
import sys
import threading
import time

import psycopg2

TENANT_SCHEMAS = 4


def connect(port):
    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
    conn.autocommit = True
    return conn


class Client(threading.Thread):
    def __init__(self, name, node, port, path, deadline):
        super().__init__(daemon=True)
        self.name, self.node, self.port, self.path, self.deadline = name, node, port, path, deadline
        self.ids = []  # in the order returned
        self.batches = []  # the IDs of each statement (a multi-row INSERT returns them shard by shard)
        self.errors = collections.Counter()
        self.statements = 0

    def run(self):
        rnd = random.Random(self.name)
        conn = None
        while time.time() < self.deadline and not (UNTIL and os.path.exists(UNTIL)):
            try:
                if conn is None:
                    conn = connect(self.port)
                cur = conn.cursor()
                before = len(self.ids)
                self.step(cur, rnd)
                if len(self.ids) > before:
                    self.batches.append(self.ids[before:])
                self.statements += 1
            except psycopg2.Error as e:
                self.errors[(e.pgcode or "conn") + " " + str(e).splitlines()[0][:80]] += 1
                try:
                    conn.close()
                except Exception:
                    pass
                conn = None
                time.sleep(0.05)

    def step(self, cur, rnd):
        tag = f"{self.name}"
        if self.path == "router":
            cur.execute("INSERT INTO events (tenant, note) VALUES (%s, %s) RETURNING id", (rnd.randint(1, 1000), tag))
            self.ids.extend(r[0] for r in cur.fetchall())
        elif self.path == "multi":
            rows = ",".join(cur.mogrify("(%s, %s)", (rnd.randint(1, 1000), tag)).decode() for _ in range(10))
            cur.execute("INSERT INTO events (tenant, note) VALUES " + rows + " RETURNING id")
            self.ids.extend(r[0] for r in cur.fetchall())
        elif self.path == "copy":
            import io
            data = "".join(f"{rnd.randint(1, 1000)}\t{tag}\n" for _ in range(10))
            cur.copy_expert("COPY events (tenant, note) FROM STDIN", io.StringIO(data))
        elif self.path == "reference":
            cur.execute("INSERT INTO ref_events (note) VALUES (%s) RETURNING id", (tag,))
            self.ids.extend(r[0] for r in cur.fetchall())
        elif self.path == "schema":
            k = rnd.randint(1, TENANT_SCHEMAS)
            cur.execute(f"INSERT INTO tenant_{k}.orders (note) VALUES (%s) RETURNING id", (tag,))
            self.ids.extend(r[0] for r in cur.fetchall())
        elif self.path == "insert_select":
            # Pushed down: events_copy is colocated with events (same
            # distribution column): each worker evaluates the default.
            cur.execute("INSERT INTO events_copy (tenant, note) SELECT tenant, 'pushdown' FROM events "
                        "WHERE tenant %% 50 = %s", (rnd.randint(0, 49),))
            # Repartitioned: events_by_k is distributed by another column.
            cur.execute("INSERT INTO events_by_k (k, note) SELECT tenant * 7 + 1, 'repartition' FROM events "
                        "WHERE tenant %% 50 = %s", (rnd.randint(0, 49),))
            time.sleep(0.2)


UNTIL = None  # --until: the file whose existence ends the load
TABLES = ["events", "events_copy", "events_by_k", "ref_events"] + [f"tenant_{k}.orders" for k in
                                                                      range(1, TENANT_SCHEMAS + 1)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60, help="how long at most (with --until: a hang guard)")
    ap.add_argument("--until", help="end once this file exists (the events the load is to meet are over)")
    ap.add_argument("--node", action="append", required=True, help="NAME=PORT:GROUP")
    ap.add_argument("--expect-duplicates", action="store_true")
    ap.add_argument("--paths", default="router,multi,copy,reference,schema")
    args = ap.parse_args()
    global UNTIL
    UNTIL = args.until
    nodes = []
    for spec in args.node:
        name, rest = spec.split("=")
        port, group = rest.split(":")
        nodes.append((name, int(port), int(group)))
    deadline = time.time() + args.seconds
    clients = []
    for name, port, _ in nodes:
        for path in args.paths.split(","):
            clients.append(Client(f"{name}/{path}", name, port, path, deadline))
    if not args.expect_duplicates:
        clients.append(Client(f"{nodes[0][0]}/insert_select", nodes[0][0], nodes[0][1], "insert_select", deadline))
    for c in clients:
        c.start()
    for c in clients:
        c.join(args.seconds + 120)

    group_of = {name: group for name, _, group in nodes}
    groups = set(group_of.values())
    conn = connect(nodes[0][1])
    cur = conn.cursor()
    rows = []  # (table, id, note, node field)
    tables = ["events"] if args.expect_duplicates else TABLES
    for t in tables:
        cur.execute(f"SELECT id, note, (trace_id_decode(id)).node_no FROM {t}")
        rows.extend((t,) + r for r in cur.fetchall())
    fails = 0

    def check(name, ok, detail=""):
        nonlocal fails
        print(("PASS " if ok else "FAIL ") + name + (f" ({detail})" if detail and not ok else ""))
        fails += not ok

    by_id = collections.Counter(r[1] for r in rows)
    dup_rows = sum(n - 1 for n in by_id.values() if n > 1)
    answered = collections.Counter(i for c in clients for i in c.ids)
    dup_answers = sum(n - 1 for n in answered.values() if n > 1)
    statements = sum(c.statements for c in clients)
    errors = collections.Counter()
    for c in clients:
        errors.update(c.errors)
    print(f"# {len(rows)} rows in {len(tables)} tables, {sum(len(c.ids) for c in clients)} IDs answered, "
          f"{statements} statements, {sum(errors.values())} errors; duplicates: {dup_rows} in the tables, "
          f"{dup_answers} among answers")
    for e, n in errors.most_common(5):
        print(f"#   {n} x {e}")
    if args.expect_duplicates:
        check("negative control: every node on one hand-set id gives duplicates", dup_rows > 0 or dup_answers > 0,
              "none found")
        return 0 if fails == 0 else 1
    check("every path wrote rows: " + ", ".join(sorted({r[0] for r in rows})),
          all(any(r[0] == t for r in rows) for t in TABLES), "a table is empty")
    check("no ID twice in the tables", dup_rows == 0, f"{dup_rows} duplicates")
    check("no ID twice among the answers", dup_answers == 0, f"{dup_answers} duplicates")
    disorder = sum(1 for c in clients for a, b in zip(c.batches, c.batches[1:]) if min(b) <= max(a))
    check("the IDs each client got increase from one statement to the next", disorder == 0,
          f"{disorder} statements out of order")
    wrong = sum(1 for c in clients for i in c.ids if ((i >> 22) & 0xFFFF) != group_of[c.node])
    check("an ID answered through a node decodes to that node's group", wrong == 0, f"{wrong} do not")
    copy_wrong = sum(1 for r in rows if r[2].endswith("/copy") and r[3] != group_of[r[2].split("/")[0]])
    copy_rows = sum(1 for r in rows if r[2].endswith("/copy"))
    check(f"a row COPY wrote through a node decodes to that node's group ({copy_rows} rows)",
          copy_rows > 0 and copy_wrong == 0, f"{copy_wrong} do not")
    stray = sum(1 for r in rows if r[3] not in groups)
    check("every ID decodes to a node of the cluster", stray == 0, f"{stray} do not")
    # A statement Citus itself gave up (a repartitioned INSERT ... SELECT
    # whose intermediate results a shard move took away) rolls back whole:
    # counted above, not a failure of shardid's. Any error of shardid's is.
    ours = sum(n for e, n in errors.items() if e.startswith(("55000", "22003", "53400", "XX")) or "shardid" in e)
    check("no statement failed in shardid", ours == 0, f"{ours} failed")
    return 0 if fails == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
