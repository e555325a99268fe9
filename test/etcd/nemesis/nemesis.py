#!/usr/bin/python3
"""A fault-injection run in Jepsen's manner (test/etcd/nemesis/run.sh starts it).

The system: four PostgreSQL nodes with node ids from etcd (n1 and n2 with
`node_id = -1`; n3 and n4 both ask for node id 7, so the claim changes
hands; n4's clock runs 30 s behind; n1's lease TTL is 3 s, the others' 5 s,
so the history n1 makes after etcd lost its data must settle for the
others' TTL), a three-member etcd, and every link a
client or a node uses through a TCP proxy of this process that the nemesis
can cut in one direction or both (client -> node, node -> each etcd member).
Clients, two per node, call the generators of seven schemes (and, on n1
and n2, explicit shards 900 and 901, which the two swap every 20 s, and
Instagram's logical shards over 128 values, 64 each, swapped likewise) in
INSERT ...
RETURNING and in SELECT, in autocommit, and record every operation: client,
node, monotonic invocation and completion times, and its outcome (ok with
the value and the node id it carries, failed, or unknown).

The nemesis follows a schedule drawn from --seed before the run: faults
that overlap, each printed as `fault KIND TARGET at T for D` when it
starts; and, at fixed points, etcd losing its data under the live nodes:
the prefix deleted (`delete-prefix`), etcd replaced by a new, empty
cluster on the same endpoints (`replace-etcd`), and etcd restored from a
snapshot at least 10 s old (`restore-snapshot`: the nemesis saves one
every 5 s). Afterwards
test/etcd/nemesis/checker.py judges the whole history.

Controls: --control same-id gives n3 and n4 node id 7 by setting;
--control no-mark deletes every mark under the prefix from etcd, ten times a
second, from outside (the shipped library has no switch that ignores it), so
a new holder of id 7 finds none. Each must make the checker find the
anomalies it exists for.
"""
import argparse
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import psycopg2
import psycopg2.extensions

PG_BIN = os.environ["PG_BIN"]
ROOT = os.getuid() == 0
# Below the ephemeral port range (32768 and up), so no outgoing connection
# holds a port the run must listen on.
BASE = int(os.environ.get("NEMESIS_PORT", "27100"))
LEASE_TTL_S = 5
# n1's lease TTL: shorter than the others', so that a history it makes
# after etcd lost its data settles for theirs (docs/coordination.md).
SHORT_TTL_NODE, SHORT_TTL_S = "n1", 3
ETCD_WAIT_S = 5
OP_TIMEOUT_S = 8.0
RATE = 60  # operations a second per client, at most
NODES = ["n1", "n2", "n3", "n4"]
MEMBERS = ["e1", "e2", "e3"]
# kill-holder: kill -9 of whichever of n3 and n4 holds node id 7, so that the
# claim changes hands (the killed one comes back once the other holds it);
# twice in every run (the second hands it back).
KINDS = ["partition-etcd", "partition-client", "pause-node", "pause-coordinator", "pause-etcd", "kill-node",
         "kill-etcd", "kill-etcd-leader", "clock-restart"]
# etcd losing its data (docs/coordination.md, "etcd loses its data"), or
# restored from an older snapshot ("etcd restored from a backup"): each
# once in a run of a minute or more, in turn every 300 s of a long one;
# each lasts as long as the history's settling (a lease TTL and its margin)
# and a bit.
LOSSES = ["delete-prefix", "replace-etcd", "restore-snapshot"]
SNAPSHOT_EVERY_S = 5
SNAPSHOT_AGE_S = 10
LOSS_S = LEASE_TTL_S + 1 + 2


def now():
    return time.monotonic()


def alive(pid):
    """The process runs (a zombie, killed but not reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def as_pg(cmd):
    return (["runuser", "-u", "postgres", "--"] if ROOT else []) + cmd


def run(cmd, **kw):
    """A command's outcome; one that outlives its timeout counts as failed."""
    try:
        return subprocess.run(cmd, cwd="/", stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(cmd, 124, e.stdout or "")


# --- TCP proxies -------------------------------------------------------------
class Proxy:
    """Forwards 127.0.0.1:port to 127.0.0.1:target. cut("in"|"out"|"both")
    stops forwarding in that direction (in: towards the target) without
    closing anything, as a partition does; heal() resumes it."""

    def __init__(self, name, port, target):
        self.name, self.port, self.target = name, port, target
        self.allow = {"in": True, "out": True}
        self.cond = threading.Condition()
        self.closed = False
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(128)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.target), timeout=2)
                u.settimeout(None)
            except OSError:
                c.close()
                continue
            for s in (c, u):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self.pipe, args=(c, u, "in"), daemon=True).start()
            threading.Thread(target=self.pipe, args=(u, c, "out"), daemon=True).start()

    def wait_allowed(self, direction):
        with self.cond:
            while not self.allow[direction] and not self.closed:
                self.cond.wait(0.5)

    def pipe(self, src, dst, direction):
        try:
            while not self.closed:
                self.wait_allowed(direction)
                r, _, _ = select.select([src], [], [], 0.5)
                if not r:
                    continue
                data = src.recv(65536)
                if not data:
                    break
                self.wait_allowed(direction)
                dst.sendall(data)
        except (OSError, ValueError):  # ValueError: closed by the other direction
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def cut(self, direction):
        with self.cond:
            for d in (["in", "out"] if direction == "both" else [direction]):
                self.allow[d] = False

    def heal(self):
        with self.cond:
            self.allow = {"in": True, "out": True}
            self.cond.notify_all()

    def close(self):
        self.closed = True
        self.heal()
        self.sock.close()


# --- etcd --------------------------------------------------------------------
class Etcd:
    def __init__(self, work):
        self.work = work
        self.port = {m: BASE + 10 + 2 * i for i, m in enumerate(MEMBERS)}
        self.peer = {m: BASE + 11 + 2 * i for i, m in enumerate(MEMBERS)}
        self.proc = {}
        self.cluster = ",".join(f"{m}=http://127.0.0.1:{self.peer[m]}" for m in MEMBERS)
        self.snapshots = []  # (monotonic time taken, file)
        self.snapshot_lock = threading.Lock()

    def start(self, m, state="new"):
        if self.alive(m):
            return  # (a restart due after etcd was replaced whole)
        log = open(os.path.join(self.work, f"etcd-{m}.log"), "a")
        self.proc[m] = subprocess.Popen(
            ["etcd", "--name", m, "--data-dir", os.path.join(self.work, f"etcd-{m}"),
             "--listen-client-urls", f"http://127.0.0.1:{self.port[m]}",
             "--advertise-client-urls", f"http://127.0.0.1:{self.port[m]}",
             "--listen-peer-urls", f"http://127.0.0.1:{self.peer[m]}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer[m]}",
             "--initial-cluster", self.cluster, "--initial-cluster-state", state, "--log-level", "error"],
            stdout=log, stderr=log, cwd="/")

    def healthy(self, timeout=30):
        end = now() + timeout
        eps = ",".join(f"http://127.0.0.1:{p}" for p in self.port.values())
        while now() < end:
            if run(["etcdctl", f"--endpoints={eps}", "endpoint", "health"], timeout=10).returncode == 0:
                return True
            time.sleep(0.2)
        return False

    def delete_marks(self, stop):
        """The no-mark control: every mark deleted as soon as it is written
        (the retired words too: what nodes republish after etcd lost its
        data is a mark of every value of a layout)."""
        eps = ",".join(f"http://127.0.0.1:{p}" for p in self.port.values())
        while not stop.is_set():
            for marks in ("/nemesis/mark/", "/nemesis/shardmark/", "/nemesis/shardretired/"):
                run(["etcdctl", f"--endpoints={eps}", "--command-timeout=1s", "del", "--prefix", marks], timeout=3)
            time.sleep(0.1)

    def leader(self):
        eps = ",".join(f"http://127.0.0.1:{self.port[m]}" for m in MEMBERS if self.alive(m))
        r = run(["etcdctl", f"--endpoints={eps}", "--command-timeout=2s", "endpoint", "status", "-w", "json"],
                timeout=5)
        try:
            for st in json.loads(r.stdout):
                if st["Status"]["header"]["member_id"] == st["Status"]["leader"]:
                    port = int(st["Endpoint"].rsplit(":", 1)[1])
                    return next(m for m in MEMBERS if self.port[m] == port)
        except (ValueError, KeyError, StopIteration, TypeError):
            pass
        return None

    def alive(self, m):
        return m in self.proc and self.proc[m].poll() is None

    def delete_prefix(self):
        """Everything under the nodes' prefix, deleted by hand."""
        eps = ",".join(f"http://127.0.0.1:{self.port[m]}" for m in MEMBERS if self.alive(m))
        r = run(["etcdctl", f"--endpoints={eps}", "--command-timeout=5s", "del", "--prefix", "/nemesis/"], timeout=10)
        if r.returncode != 0:
            print(f"# delete-prefix: {r.stdout.strip()[-200:]}", flush=True)

    def replace(self):
        """A new, empty cluster on the same endpoints: every member killed,
        its data gone, and started again as a new cluster."""
        with self.snapshot_lock:
            for m in MEMBERS:
                self.kill(m)
            for m in MEMBERS:
                shutil.rmtree(os.path.join(self.work, f"etcd-{m}"), ignore_errors=True)
            for m in MEMBERS:
                self.start(m, "new")
        if not self.healthy(30):
            print("# replace-etcd: the new cluster is not healthy", flush=True)

    def save_snapshots(self, stop):
        """A snapshot of etcd every SNAPSHOT_EVERY_S seconds, as an operator's
        backup would be taken (the newest few kept)."""
        n = 0
        while not stop.wait(SNAPSHOT_EVERY_S):
            live = [m for m in MEMBERS if self.alive(m)]
            if not live:
                continue
            path = os.path.join(self.work, f"snapshot-{n}.db")
            with self.snapshot_lock:
                r = run(["etcdctl", f"--endpoints=http://127.0.0.1:{self.port[live[0]]}", "--command-timeout=5s",
                         "snapshot", "save", path], timeout=10)
            if r.returncode == 0:
                self.snapshots.append((now(), path))
                n += 1
            for _, old in self.snapshots[:-8]:
                try:
                    os.remove(old)
                except OSError:
                    pass
            self.snapshots = self.snapshots[-8:]

    def restore(self):
        """etcd restored from a snapshot at least SNAPSHOT_AGE_S old: every
        member killed, its data replaced by the snapshot's (the same
        cluster token: the same cluster id), and started again."""
        old = [s for s in self.snapshots if s[0] <= now() - SNAPSHOT_AGE_S]
        if not old:
            print("# restore-snapshot: no snapshot old enough; etcd replaced instead", flush=True)
            return self.replace()
        taken, path = old[-1]
        print(f"# restore-snapshot: the snapshot of {now() - taken:.1f} s ago", flush=True)
        with self.snapshot_lock:
            for m in MEMBERS:
                self.kill(m)
            for m in MEMBERS:
                d = os.path.join(self.work, f"etcd-{m}")
                shutil.rmtree(d, ignore_errors=True)
                r = run(["etcdctl", "snapshot", "restore", path, "--name", m, "--data-dir", d, "--initial-cluster",
                         self.cluster, "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer[m]}"],
                        timeout=30, env={**os.environ, "ETCDCTL_API": "3"})
                if r.returncode != 0:
                    print(f"# restore-snapshot {m}: {r.stdout.strip()[-200:]}", flush=True)
            for m in MEMBERS:
                self.start(m, "new")
        if not self.healthy(30):
            print("# restore-snapshot: the restored cluster is not healthy", flush=True)

    def kill(self, m):
        if self.alive(m):
            self.proc[m].send_signal(signal.SIGCONT)
            self.proc[m].kill()
            self.proc[m].wait()

    def signal(self, m, sig):
        if self.alive(m):
            self.proc[m].send_signal(sig)


# --- PostgreSQL nodes --------------------------------------------------------
class Node:
    def __init__(self, name, i, work, etcd_proxies, args):
        self.name = name
        self.dir = os.path.join(work, name)
        self.port = BASE + 30 + i
        self.offset_ms = -30000 if name == "n4" else 0
        self.env = []
        os.mkdir(self.dir)
        if ROOT:
            shutil.chown(self.dir, "postgres")
        r = run(as_pg([f"{PG_BIN}/initdb", "-D", f"{self.dir}/data", "-U", "postgres", "-A", "trust", "--no-sync"]))
        if r.returncode:
            sys.exit(f"initdb {name}: {r.stdout[-500:]}")
        if args.control == "same-id" and name in ("n3", "n4"):
            source = ["shardid.node_id_source = setting", "shardid.node_id = 7"]
        else:
            source = ["shardid.node_id_source = etcd",
                      "shardid.etcd_endpoints = '%s'" % ",".join(f"http://127.0.0.1:{p.port}" for p in etcd_proxies),
                      "shardid.etcd_prefix = '/nemesis'",
                      f"shardid.etcd_lease_ttl = {SHORT_TTL_S if name == SHORT_TTL_NODE else LEASE_TTL_S}s",
                      f"shardid.etcd_wait = {ETCD_WAIT_S}s",
                      "shardid.node_id = %d" % (7 if name in ("n3", "n4") else -1)]
        conf = ["listen_addresses = '127.0.0.1'", f"port = {self.port}", f"unix_socket_directories = '{self.dir}'",
                "fsync = off", "max_connections = 40", "shared_preload_libraries = 'shardid'",
                "shardid.launch_id = 1", "shardid.max_clock_lead = 120s", "shardid.call_number_key = 'nemesis'", "shardid.uuidv7_shard_bits = 10",
                "shardid.shard_idle_release = 1s",
                "lc_messages = 'C'"] + source
        with open(f"{self.dir}/data/postgresql.conf", "a") as f:
            f.write("\n".join(conf) + "\n")

    def pid(self):
        try:
            with open(f"{self.dir}/data/postmaster.pid") as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def pids(self):
        pm = self.pid()
        if pm is None:
            return []
        kids = run(["pgrep", "-P", str(pm)]).stdout.split()
        return [pm] + [int(k) for k in kids]

    def coordinator(self):
        pm = self.pid()
        out = run(["pgrep", "-P", str(pm), "-f", "shardid coordinator"]).stdout.split() if pm else []
        return int(out[0]) if out else None

    def start(self):
        pm = self.pid()
        if pm is not None and alive(pm):
            print(f"# {self.name} is running already (pid {pm}): not started again", flush=True)
            return True
        # A postmaster killed with -9 may stay a zombie here (nothing reaps
        # it), and its pid file and socket lock files name it.
        for f in [f"{self.dir}/data/postmaster.pid"] + [os.path.join(self.dir, f) for f in os.listdir(self.dir)
                                                         if f.startswith(".s.PGSQL")]:
            if os.path.exists(f):
                os.remove(f)
        r = run(as_pg(self.env + [f"{PG_BIN}/pg_ctl", "-D", f"{self.dir}/data", "-l", f"{self.dir}/server.log",
                                  "-o", f"-c shardid.clock_offset_ms={self.offset_ms}", "-w", "-t", "60", "start"]))
        if r.returncode != 0:
            print(f"# pg_ctl start {self.name}: {r.stdout.strip()[-300:]}", flush=True)
        return r.returncode == 0

    def resume(self):
        """SIGCONT to every process of the node: a restart ends a pause."""
        for p in self.pids():
            try:
                os.kill(p, signal.SIGCONT)
            except OSError:
                pass

    def stop(self, mode="fast"):
        self.resume()
        r = run(as_pg([f"{PG_BIN}/pg_ctl", "-D", f"{self.dir}/data", "-m", mode, "-w", "-t", "60", "stop"]))
        if r.returncode != 0 and self.pid() is not None and alive(self.pid()):
            print(f"# pg_ctl stop -m {mode} {self.name}: {r.stdout.strip()[-200:]}; killed instead", flush=True)
            self.kill()

    def kill(self):
        self.resume()
        pids = self.pids()
        if not pids:
            print(f"# {self.name}: no process to kill", flush=True)
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        for p in pids:
            for _ in range(200):
                if not alive(p):
                    break
                time.sleep(0.05)

    def sql(self, text):
        c = psycopg2.connect(host=self.dir, port=self.port, user="postgres", dbname="postgres", connect_timeout=5)
        c.autocommit = True
        with c.cursor() as cur:
            cur.execute(text)
            rows = cur.fetchall() if cur.description else []
        c.close()
        return rows


def issues(node):
    """The node issues IDs, of the minute layout too: on a new prefix its
    first IDs come in the minute after etcd's history settled
    (docs/coordination.md, "etcd loses its data")."""
    try:
        node.sql("SET shardid.etcd_wait = 0; SELECT next_trace_id(), next_id('minute')")
        return True
    except psycopg2.Error:
        return False


# --- clients -----------------------------------------------------------------
OPS = {
    "snowflake": ("SELECT id, (snowflake_decode(id)).shard FROM (SELECT next_snowflake_id() AS id) s",
                  "INSERT INTO t_snowflake VALUES (next_snowflake_id()) RETURNING id, (snowflake_decode(id)).shard"),
    "trace": ("SELECT id, (trace_id_decode(id)).node_no FROM (SELECT next_trace_id() AS id) s",
              "INSERT INTO t_trace VALUES (next_trace_id()) RETURNING id, (trace_id_decode(id)).node_no"),
    "decimal": ("SELECT id, (decimal_id_decode(id)).generator_id FROM (SELECT next_decimal_id() AS id) s",
                "INSERT INTO t_decimal VALUES (next_decimal_id()) RETURNING id, (decimal_id_decode(id)).generator_id"),
    "call": ("SELECT c, (call_number_decode(c)).run_id FROM (SELECT next_call_number() AS c) s",
             "INSERT INTO t_call VALUES (next_call_number()) RETURNING id, (call_number_decode(id)).run_id"),
    "uuidv7": ("SELECT u::text, (uuidv7_decode(u, 10)).shard FROM (SELECT next_uuidv7() AS u) s",
               "INSERT INTO t_uuidv7 VALUES (next_uuidv7()) RETURNING id::text, (uuidv7_decode(id, 10)).shard"),
    "minute": ("SELECT id, (id_decode('minute', id)).shard FROM (SELECT next_id('minute') AS id) s",
               "INSERT INTO t_minute VALUES (next_id('minute')) RETURNING id, (id_decode('minute', id)).shard"),
    "instagram": ("SELECT id, (instagram_decode(id)).shard FROM (SELECT next_instagram_id() AS id) s",
                  "INSERT INTO t_instagram VALUES (next_instagram_id()) RETURNING id, (instagram_decode(id)).shard"),
    # Explicit shards, on SHARD_NODES only: the value recorded is the shard,
    # and the checker judges each shard value like a node id.
    "snowflake/shard": (
        "SELECT id, (snowflake_decode(id)).shard FROM (SELECT next_snowflake_id({shard}) AS id) s",
        "INSERT INTO t_snowflake VALUES (next_snowflake_id({shard})) RETURNING id, (snowflake_decode(id)).shard"),
    "minute/shard": (
        "SELECT id, (id_decode('minute', id)).shard FROM (SELECT next_id('minute', {shard}) AS id) s",
        "INSERT INTO t_minute VALUES (next_id('minute', {shard})) RETURNING id, (id_decode('minute', id)).shard"),
    # Instagram's logical shards: many values, each node a block of them.
    "instagram/shard": (
        "SELECT id, (instagram_decode(id)).shard FROM (SELECT next_instagram_id({shards}) AS id) s",
        "INSERT INTO t_instagram VALUES (next_instagram_id({shards})) RETURNING id, (instagram_decode(id)).shard"),
}
# n1 and n2 write explicit shards 900 and 901, and swap them every
# SHARD_PERIOD_S seconds: each value idles out on one node (after
# shardid.shard_idle_release, 1 s here) and the other claims it, above the
# first one's IDs; around each swap the two ask for one value at once.
SHARD_NODES = ("n1", "n2")
SHARD_PERIOD_S = 20
SHARD_VALUES = (900, 901)


def shard_now(node):
    phase = int(time.time() / SHARD_PERIOD_S) % 2
    return SHARD_VALUES[phase if node == SHARD_NODES[0] else 1 - phase]


# Instagram's logical shards 1000-1127: n1 writes one block of 64, n2 the
# other, and they swap blocks every SHARD_PERIOD_S (each value idles out on
# one node and the other claims it, above the first one's IDs).
LOGICAL = 1000
LOGICAL_BLOCK = 64


def logical_now(node, rng):
    phase = int(time.time() / SHARD_PERIOD_S) % 2
    block = phase if node == SHARD_NODES[0] else 1 - phase
    return LOGICAL + block * LOGICAL_BLOCK + rng.randrange(LOGICAL_BLOCK)
# One call-number key on every node, as docs/coordination.md requires for
# call numbers unique across nodes (the run ids alone do not make them so).
SETUP_SQL = """
CREATE EXTENSION shardid;
SELECT create_obfuscation_key('nemesis', '\\x00112233445566778899aabbccddeeff'::bytea);
SELECT create_layout('minute', '2020-01-01 00:00+00', '1 minute', 31, 10, 22);
CREATE TABLE t_snowflake (id bigint PRIMARY KEY);
CREATE TABLE t_trace (id bigint PRIMARY KEY);
CREATE TABLE t_decimal (id bigint PRIMARY KEY);
CREATE TABLE t_call (id text PRIMARY KEY);
CREATE TABLE t_uuidv7 (id uuid PRIMARY KEY);
CREATE TABLE t_minute (id bigint PRIMARY KEY);
CREATE TABLE t_instagram (id bigint PRIMARY KEY);
"""


class Timeout(Exception):
    pass


def wait(conn, deadline):
    while True:
        state = conn.poll()
        if state == psycopg2.extensions.POLL_OK:
            return
        left = deadline - now()
        if left <= 0:
            raise Timeout()
        if state == psycopg2.extensions.POLL_READ:
            select.select([conn.fileno()], [], [], left)
        elif state == psycopg2.extensions.POLL_WRITE:
            select.select([], [conn.fileno()], [], left)


def record(rec, t0, history, lock, rate):
    """The operation into the history; then a pause, so that a client makes
    about `rate` operations a second (a 30-minute history stays a size the
    checker reads at once), and waits a tenth of a second after a failure."""
    with lock:
        history.append(rec)
    pause = (0.1 if rec["outcome"] != "ok" else 0) + 1 / rate - (rec["t1"] - t0)
    if pause > 0:
        time.sleep(pause)


def close(conn):
    if conn is not None:
        try:
            conn.close()
        except psycopg2.Error:
            pass


def answered(rec, e, conn):
    """An operation that raised e, recorded in rec: failed, with its SQLSTATE
    and message, when the server answered on a connection still open (True);
    otherwise unknown (False: the connection is to be dropped)."""
    code = getattr(e, "pgcode", None)
    if isinstance(e, psycopg2.Error) and code and conn is not None and not conn.closed:
        rec.update(outcome="fail", error=f"{code} {str(e).splitlines()[0]}")
        return True
    text = "timeout" if isinstance(e, Timeout) else (str(e).splitlines() or ["connection lost"])[0]
    rec.update(outcome="unknown", error=text)
    return False


class Client(threading.Thread):
    def __init__(self, cid, node, proxy, seed, history, lock, stop):
        super().__init__(daemon=True)
        self.cid, self.node, self.proxy = cid, node, proxy
        self.rng = random.Random(seed)
        self.history, self.lock, self.stop = history, lock, stop
        self.conn = None

    def connect(self, deadline):
        self.conn = psycopg2.connect(host="127.0.0.1", port=self.proxy.port, user="postgres", dbname="postgres",
                                     connect_timeout=3, async_=1)
        wait(self.conn, deadline)

    def drop(self):
        close(self.conn)
        self.conn = None

    def run(self):
        while not self.stop.is_set():
            scheme = self.rng.choice([s for s in sorted(OPS) if "/shard" not in s or self.node in SHARD_NODES])
            kind = self.rng.choice(["select", "insert"])
            t0 = now()
            deadline = t0 + OP_TIMEOUT_S
            rec = {"client": self.cid, "node": self.node, "scheme": scheme, "kind": kind, "t0": t0}
            try:
                if self.conn is None:
                    self.connect(deadline)
                    rec["t0"] = t0 = now()  # the operation starts once connected
                    deadline = t0 + OP_TIMEOUT_S
                cur = self.conn.cursor()
                cur.execute(OPS[scheme][kind == "insert"].replace("{shard}", str(shard_now(self.node)))
                            .replace("{shards}", str(logical_now(self.node, self.rng))))
                wait(self.conn, deadline)
                value, nid = cur.fetchone()
                rec.update(outcome="ok", value=value, nid=nid)
            except (Timeout, psycopg2.Error, OSError) as e:
                if not answered(rec, e, self.conn):
                    self.drop()
            rec["t1"] = now()
            record(rec, t0, self.history, self.lock, RATE)
        self.drop()


# --- the schedule --------------------------------------------------------------
def schedule(seed, seconds):
    """The faults, drawn from the seed alone: (t, kind, target, d, extra)."""
    rng = random.Random(seed)
    out, t = [], 2.0
    busy = {}  # a target's process faults never overlap: until when it is busy
    while True:
        t += rng.expovariate(1 / 2.5)
        if t >= seconds - 4:
            break
        kind = rng.choice(KINDS)
        d = round(rng.uniform(1.0, 8.0), 1)
        extra = {}
        if kind in ("partition-etcd", "partition-client"):
            target = rng.choice(NODES)
            extra["direction"] = rng.choice(["both", "in", "out"])
        elif kind in ("pause-etcd", "kill-etcd"):
            target = rng.choice(MEMBERS)
        elif kind == "kill-etcd-leader":
            target = "etcd-leader"
        else:
            target = rng.choice(NODES)
            if kind == "clock-restart":
                extra["offset_ms"] = rng.choice([-1, 1]) * rng.randint(5000, 60000)
        if kind not in ("partition-etcd", "partition-client"):
            key = "etcd" if target == "etcd-leader" or target in MEMBERS else target
            if busy.get(key, 0) > t or busy.get("etcd-any", 0) > t and key == "etcd":
                continue
            busy[key] = t + d + 2
        out.append({"t": round(t, 2), "kind": kind, "target": target, "d": d, **extra})
    # Twice the holder of node id 7 dies for longer than the lease, at a
    # quarter and at 60 % of the run; no other process fault on n3 or n4
    # overlaps those.
    # (In a run of a minute up to ten, earlier: etcd's losses come after.)
    shares = (0.15, 0.45) if 60 <= seconds < 600 else (0.25, 0.6)
    forced = [{"t": round(seconds * share, 2), "kind": "kill-holder", "target": "holder-7",
               "d": float(LEASE_TTL_S + 4)} for share in shares]
    # etcd loses its data: twice in a run of a minute or more, every 300 s
    # in a long one; never while node id 7's holder may be down (its
    # restart waits for the other contender to hold the id, a few seconds), a
    # node down while the new history settles cannot re-publish what it knows.
    losses = ([0.66 * seconds, 0.77 * seconds, 0.88 * seconds] if seconds >= 60 else []) if seconds < 600 else list(
        range(150, seconds - 60, 300))

    def clear(t):
        while any(t < g["t"] + g["d"] + 10 and t + LOSS_S + 2 > g["t"] for g in forced):
            t += 1
        return t
    losses = [t for t in map(clear, losses) if t + LOSS_S + 2 < seconds]
    forced += [{"t": round(t, 2), "kind": LOSSES[i % len(LOSSES)], "target": "etcd-data", "d": float(LOSS_S)}
               for i, t in enumerate(losses)]
    def clash(f):
        near = [g for g in forced if f["t"] < g["t"] + g["d"] + 2 and f["t"] + f["d"] + 2 > g["t"]]
        # Nothing on n3 and n4 around a kill of node id 7's holder. Around
        # etcd losing its data, no fault but a client's partition: a node
        # that is down, frozen or cut off from etcd while the new history
        # settles cannot re-publish its counter values, which another node
        # may then be handed (docs/coordination.md, "etcd loses its data").
        return (f["target"] in ("n3", "n4") and f["kind"] not in ("partition-etcd", "partition-client") and
                any(g["kind"] == "kill-holder" for g in near)) or (
            f["kind"] != "partition-client" and any(g["kind"] in LOSSES for g in near))
    return sorted([f for f in out if not clash(f)] + forced, key=lambda f: f["t"])


class Nemesis:
    def __init__(self, nodes, etcd, client_proxies, etcd_proxies, log):
        self.nodes, self.etcd = nodes, etcd
        self.client_proxies, self.etcd_proxies = client_proxies, etcd_proxies
        self.log = log
        self.pending = []  # (time, action)
        self.lock = threading.Lock()
        self.node_locks = {n: threading.Lock() for n in nodes}
        self.threads = []

    def later(self, at, action):
        with self.lock:
            self.pending.append((at, action))

    def due(self, t):
        with self.lock:
            ready = [a for a in self.pending if a[0] <= t]
            self.pending = [a for a in self.pending if a[0] > t]
        for _, action in sorted(ready, key=lambda a: a[0]):
            try:
                action()
            except Exception as e:
                print(f"# a fault's end not undone whole: {e!r}", flush=True)

    def inject(self, f, start):
        kind, target, d = f["kind"], f["target"], f["d"]
        end = start + f["t"] + d
        if kind == "partition-etcd":
            for p in self.etcd_proxies[target]:
                p.cut(f["direction"])
            self.later(end, lambda: [p.heal() for p in self.etcd_proxies[target]])
        elif kind == "partition-client":
            self.client_proxies[target].cut(f["direction"])
            self.later(end, self.client_proxies[target].heal)
        elif kind == "pause-node":
            pids = self.nodes[target].pids()
            for p in pids:
                os.kill(p, signal.SIGSTOP)
            self.later(end, lambda: [self.cont(p) for p in pids])
        elif kind == "pause-coordinator":
            p = self.nodes[target].coordinator()
            if p:
                os.kill(p, signal.SIGSTOP)
                self.later(end, lambda: self.cont(p))
        elif kind == "pause-etcd":
            self.etcd.signal(target, signal.SIGSTOP)
            self.later(end, lambda: self.etcd.signal(target, signal.SIGCONT))
        elif kind in ("kill-etcd", "kill-etcd-leader"):
            m = target if kind == "kill-etcd" else (self.etcd.leader() or "e1")
            f["target"] = target if kind == "kill-etcd" else f"etcd-leader={m}"
            self.etcd.kill(m)
            self.later(end, lambda: self.etcd.start(m, "existing"))
        elif kind == "delete-prefix":
            self.etcd.delete_prefix()
        elif kind == "replace-etcd":
            self.etcd.replace()
        elif kind == "restore-snapshot":
            self.etcd.restore()
        elif kind == "kill-holder":
            holder = next((n for n in ("n3", "n4") if self.holds(n)), None)
            f["target"] = f"holder-7={holder}"
            if holder:
                with self.node_locks[holder]:
                    self.nodes[holder].kill()
                other = "n4" if holder == "n3" else "n3"
                self.later(end, lambda: self.restart(holder, None, after=other))
        elif kind == "kill-node":
            with self.node_locks[target]:
                self.nodes[target].kill()
            self.later(end, lambda: self.restart(target, None))
        elif kind == "clock-restart":
            self.restart(target, f["offset_ms"])
            self.later(end, lambda: self.restart(target, -30000 if target == "n4" else 0))
        self.log.write(json.dumps({**f, "t": round(now() - start, 2)}) + "\n")
        self.log.flush()

    def holds(self, name):
        try:
            return self.nodes[name].sql("SELECT state FROM shardid_coordination()") == [("held",)]
        except psycopg2.Error:
            return False

    def cont(self, p):
        try:
            os.kill(p, signal.SIGCONT)
        except OSError:
            pass

    def restart(self, name, offset_ms, after=None):
        """In a thread of its own, one at a time per node, so that a slow
        stop (a coordinator waiting for etcd) does not hold up the schedule.
        `after`: the other contender for node id 7; the killed holder comes
        back only once that one holds the id (at most 30 s later), so the
        claim changes hands even when an etcd leader change extended the
        dead holder's lease until its restart, and the two raced for it."""
        def work():
            deadline = now() + 30
            while after is not None and now() < deadline and not self.holds(after):
                time.sleep(0.2)
            if after is not None and not self.holds(after):
                print(f"# {after} did not take node id 7 from {name} within 30 s", flush=True)
            with self.node_locks[name]:
                n = self.nodes[name]
                if offset_ms is not None:
                    n.stop("fast")
                    n.offset_ms = offset_ms
                if not n.start():
                    print(f"# could not start {name} again", flush=True)
        t = threading.Thread(target=work, daemon=True)
        t.start()
        self.threads.append(t)

    def settle(self):
        for t in self.threads:
            t.join(120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--control", choices=["same-id", "no-mark"])
    ap.add_argument("--clients", type=int, default=2)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="shardid-nemesis.")
    os.chmod(work, 0o755)
    out = os.environ.get("NEMESIS_OUT") or tempfile.mkdtemp(prefix="shardid-nemesis-history.")
    print(f"# history and schedule in {out} (seed {args.seed}, {args.seconds} s"
          f"{', control ' + args.control if args.control else ''})", flush=True)
    plan = schedule(args.seed, args.seconds)
    with open(os.path.join(out, "schedule.json"), "w") as f:
        json.dump(plan, f, indent=1)

    etcd = Etcd(work)
    nodes, proxies, etcd_proxies, client_proxies = {}, [], {}, {}
    try:
        for m in MEMBERS:
            etcd.start(m)
        if not etcd.healthy():
            sys.exit("etcd did not start")
        for i, name in enumerate(NODES):
            etcd_proxies[name] = [Proxy(f"{name}-{m}", BASE + 50 + 3 * i + j, etcd.port[m])
                                  for j, m in enumerate(MEMBERS)]
            proxies += etcd_proxies[name]
        for i, name in enumerate(NODES):
            nodes[name] = Node(name, i, work, etcd_proxies[name], args)
            client_proxies[name] = Proxy(f"client-{name}", BASE + 40 + i, nodes[name].port)
            proxies.append(client_proxies[name])
        for name in NODES:
            if not nodes[name].start():
                sys.exit(f"{name} did not start")
            nodes[name].sql(SETUP_SQL)
        # The claims are made before the clock starts: n1, n2 and one of n3
        # and n4 (the other waits for id 7) issue (at most a minute and the
        # history's settling: the minute layout's first tick).
        deadline = now() + 90
        for group in (["n1"], ["n2"], ["n3", "n4"]):
            while now() < deadline and not any(issues(nodes[n]) for n in group):
                time.sleep(0.2)
        history, lock, stop = [], threading.Lock(), threading.Event()
        clients = [Client(f"{name}c{k}", name, client_proxies[name], args.seed * 1000 + 10 * i + k, history, lock,
                          stop) for i, name in enumerate(NODES) for k in range(args.clients)]
        faults_log = open(os.path.join(out, "faults.jsonl"), "w")
        nem = Nemesis(nodes, etcd, client_proxies, etcd_proxies, faults_log)
        start = now()
        for c in clients:
            c.start()
        if args.control == "no-mark":
            threading.Thread(target=etcd.delete_marks, args=(stop,), daemon=True).start()
        threading.Thread(target=etcd.save_snapshots, args=(stop,), daemon=True).start()
        queue = list(plan)
        while now() - start < args.seconds:
            t = now() - start
            nem.due(now())
            while queue and queue[0]["t"] <= t and now() - start < args.seconds:
                f = queue.pop(0)
                print(f"fault {f['kind']} {f['target']} at {f['t']:.1f} for {f['d']:.1f}"
                      + (f" ({f['direction']})" if "direction" in f else "")
                      + (f" (clock {f['offset_ms'] / 1000:+.0f} s)" if "offset_ms" in f else ""), flush=True)
                try:
                    nem.inject(f, start)
                except Exception as e:  # a process gone meanwhile, say: the run goes on
                    print(f"# fault {f['kind']} {f['target']} not injected whole: {e!r}", flush=True)
            time.sleep(0.05)
        # Heal everything, then let the clients see the healed system.
        nem.due(float("inf"))
        for p in proxies:
            p.heal()
        nem.settle()
        for n in nodes.values():
            n.resume()
        end = now()
        stop.set()
        for c in clients:
            c.join(OP_TIMEOUT_S + 5)
        with lock:
            done = list(history)
        with open(os.path.join(out, "history.jsonl"), "w") as f:
            for rec in done:
                f.write(json.dumps(rec) + "\n")
        # Every node's tables, read back: an INSERT whose outcome was
        # unknown may have committed, and a duplicate it holds is judged too.
        with open(os.path.join(out, "tables.jsonl"), "w") as f:
            for name, n in nodes.items():
                for scheme in [s for s in OPS if "/" not in s]:
                    try:
                        for (value,) in n.sql(f"SELECT id{'::text' if scheme == 'uuidv7' else ''} FROM t_{scheme}"):
                            f.write(json.dumps({"node": name, "scheme": scheme, "value": value}) + "\n")
                    except psycopg2.Error as e:
                        print(f"# tables of {name}: {e}".strip(), flush=True)
                        f.write(json.dumps({"node": name, "scheme": scheme, "unread": str(e)[:200]}) + "\n")
        with open(os.path.join(out, "run.json"), "w") as f:
            json.dump({"seed": args.seed, "seconds": args.seconds, "control": args.control, "start": start,
                       "end": end, "lease_ttl_s": LEASE_TTL_S, "etcd_wait_s": ETCD_WAIT_S,
                       "contenders": ["n3", "n4"], "shard_contenders": list(SHARD_NODES), "clock_lag_s": {n.name: -n.offset_ms / 1000 for n in nodes.values()
                                                                   if n.offset_ms < 0}}, f)
    finally:
        for n in nodes.values():
            for p in n.pids():
                try:
                    os.kill(p, signal.SIGCONT)
                except OSError:
                    pass
            n.stop("immediate")
        for m in MEMBERS:
            etcd.kill(m)
        for p in proxies:
            p.close()
        for name, n in nodes.items():  # the servers' logs stay with the history
            if os.path.exists(f"{n.dir}/server.log"):
                shutil.copy(f"{n.dir}/server.log", os.path.join(out, f"{name}.log"))
        shutil.rmtree(work, ignore_errors=True)
    print(f"# run over: {len(done)} operations; the checker judges {out}", flush=True)
    return out


if __name__ == "__main__":
    main()
