#!/usr/bin/python3
"""Statements that need the coordinator's keys and call-number runs, timed,
while test/citus/fences.sh pauses the coordinator (section 4d).

  pause_load.py --port P --seconds N [--fresh] [--label L] [--raw FILE]

Each statement is SELECT obfuscate_id(i), next_call_number(). One session
runs them back to back (a pause of 2 ms between); with --fresh each
statement has a connection of its own (a new backend: its first key and its
first run), one every 400 ms. Prints one line:

  L ops N failed F longest_ms X p99_ms Y after R sqlstates S first_error E

(R: statements that succeeded after the last failure, all when none
failed; S: the failed statements' SQLSTATEs with counts; E: the first
error's message). A statement that fails to connect counts as failed.
With --raw, FILE gets a line for each statement: when it began (ms since
the epoch, the wall clock the shell's date reads) and how long it took (ms),
so that the statements during the pause can be told from the others.
"""
import argparse
import collections
import time

import psycopg2

STATEMENT = "SELECT obfuscate_id(%s), next_call_number()"


def connect(port):
    conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
    conn.autocommit = True
    return conn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--fresh", action="store_true")
    p.add_argument("--label", default="load")
    p.add_argument("--raw")
    a = p.parse_args()
    took = []
    raw = []
    states = collections.Counter()
    first_error = ""
    end = time.monotonic() + a.seconds
    conn = None if a.fresh else connect(a.port)
    i = 0
    after = 0
    while time.monotonic() < end:
        i += 1
        start = time.monotonic()
        began = time.time()
        try:
            c = connect(a.port) if a.fresh else conn
            with c.cursor() as cur:
                cur.execute(STATEMENT, (i,))
                cur.fetchall()
            if a.fresh:
                c.close()
            after += 1
        except psycopg2.Error as e:
            after = 0
            states[e.pgcode or "connect"] += 1
            if not first_error:
                first_error = (e.pgerror or str(e)).strip().splitlines()[0]
            if not a.fresh:
                try:
                    conn.close()
                except psycopg2.Error:
                    pass
                conn = connect(a.port)
        took.append((time.monotonic() - start) * 1000)
        raw.append("%d %d" % (began * 1000, took[-1]))
        time.sleep(0.4 if a.fresh else 0.002)
    if a.raw:
        with open(a.raw, "w") as f:
            f.write("\n".join(raw) + "\n")
    took.sort()
    p99 = took[int(len(took) * 0.99)] if took else 0
    print(
        "%s ops %d failed %d longest_ms %d p99_ms %d after %d sqlstates %s first_error %s"
        % (
            a.label,
            len(took),
            sum(states.values()),
            took[-1] if took else 0,
            p99,
            after,
            ",".join("%s:%d" % kv for kv in sorted(states.items())) or "-",
            first_error or "-",
        )
    )


if __name__ == "__main__":
    main()
