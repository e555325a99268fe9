#!/usr/bin/python3
"""A client under load for the coordination suites: one connection, one
statement every INTERVAL ms for SECONDS, each timed and recorded.

    load.py DSN SECONDS INTERVAL_MS SQL OUT.tsv

Writes one line per operation to OUT.tsv: start and end (Unix ms), the
outcome (ok, failed) and the value or the error. Prints a summary line
(key=value): ops, ok, failed, p50_ms, p99_ms, max_ms, longest_gap_ms (the
longest time between two successful completions, and from the start and
to the end), first_ms, last_ok_ms. Bounded: it stops by itself."""
import sys
import time

import psycopg2


def main():
    dsn, seconds, interval_ms, sql, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
    conn = psycopg2.connect(dsn)
    conn.autocommit = True
    cur = conn.cursor()
    start = time.time()
    ops = []
    k = 0
    while time.time() - start < seconds:
        t0 = time.time()
        try:
            cur.execute(sql)
            value = cur.fetchone()[0] if cur.description else ""
            ops.append((t0, time.time(), "ok", str(value)))
        except psycopg2.Error as e:
            ops.append((t0, time.time(), "failed", (e.pgcode or "") + " " + str(e).splitlines()[0]))
            if conn.closed:
                conn = psycopg2.connect(dsn)
                conn.autocommit = True
            cur = conn.cursor()
        k += 1
        pause = start + k * interval_ms / 1000 - time.time()
        if pause > 0:
            time.sleep(pause)
    end = time.time()
    with open(out, "w") as f:
        for t0, t1, outcome, value in ops:
            f.write(f"{int(t0 * 1000)}\t{int(t1 * 1000)}\t{outcome}\t{value}\n")
    lat = sorted((t1 - t0) * 1000 for t0, t1, outcome, _ in ops)
    ok = [t1 for _, t1, outcome, _ in ops if outcome == "ok"]
    marks = [start] + ok + [end]
    gap = max(b - a for a, b in zip(marks, marks[1:])) * 1000

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0

    print(f"ops={len(ops)} ok={len(ok)} failed={len(ops) - len(ok)} p50_ms={pct(0.5):.1f} p99_ms={pct(0.99):.1f} "
          f"max_ms={(lat[-1] if lat else 0):.1f} longest_gap_ms={gap:.0f} first_ms={int(start * 1000)} "
          f"last_ok_ms={int((ok[-1] if ok else 0) * 1000)}")


if __name__ == "__main__":
    main()
