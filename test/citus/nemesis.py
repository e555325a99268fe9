#!/usr/bin/python3
"""A fault-injection run on Citus in Jepsen's manner (test/citus/nemesis_run.sh
starts it; test/citus/checker.py judges what it wrote).

The system: a coordinator and two workers, each a slot of two servers, a
primary and its synchronous streaming standby ("c.a" and "c.b", "w1.a"
and "w1.b", "w2.a" and "w2.b"), with `shardid.node_id_source = citus`,
and a third worker without a standby ("w3.a") that had shardid before it
joined: it made its own key ring (its own `default`) and issued call
numbers alone, then was added with citus_add_node() and given the
coordinator's ring with shardid_sync_keys().
Clients, two per slot, connect to the slot's primary and write through it
with every scheme: TraceId, a user layout ('nem', 10 ms ticks), DecimalId,
call numbers, `next_instagram_id(shard)` with the slot's declared logical
shards (`shardid.shards`: c 100-131, w1 200-231, w2 300-331), and
`obfuscate_id()` of small numbers with the key 'nemesis'; half the
operations INSERT into a distributed table (the default or the function
evaluated on the node that receives the write, RETURNING it), half SELECT.
Half the SELECTs are sent as one message of several statements (a short
sleep first), whose last answers. A call number is
decoded with the key its INSERT used (the same key in the statements
before and after it), or not at all.
A client keeps its connection after its slot failed over (an application
that has not noticed) until the server refuses it, then connects to the
slot's new primary. Every operation is recorded: client, serving server,
monotonic invocation and completion times, outcome (ok with the value and
the group or shard it carries, failed with its SQLSTATE and message, or
unknown), and for INSERTs a unique operation number stored in the row.

The nemesis follows a schedule drawn from --seed, one fault at a time,
each printed as `fault KIND TARGET at T for D`:
  worker-failover-running  the worker's standby promoted and named by
                           citus_update_node(); the old primary runs on
                           (its clients still connected) for D seconds
  worker-failover-frozen   the same with the old primary stopped (SIGSTOP)
                           first, and thawed after D seconds
  worker-replaced          the old primary gone (kill -9), its group given
                           to the promoted standby
  coordinator-failover     the coordinator killed (kill -9), its standby
                           promoted and named by citus_set_coordinator_host()
  update-node-swap         the two workers' host and port swapped in the
                           metadata (citus_update_node()), swapped back
                           after D seconds
  shard-move, rebalance    citus_move_shard_placement() of one shard,
                           rebalance_table_shards(), each followed by
                           Citus' cleanup of what it left behind
  pause-coordinator-short, -long
                           the coordinator's processes stopped 3 s, and
                           shardid.citus_fence plus 4 s
  key-change               the key 'nemesis' dropped and made again with a
                           new secret, in one transaction on the coordinator
  call-key-change          shardid.call_number_key changed on every server
                           (ALTER SYSTEM, reload): to a new key made on the
                           coordinator, or back to one used before
  metadata-stop            w3's metadata taken away
                           (stop_metadata_sync_to_node()) for D seconds,
                           then given back with shardid_sync_keys()
  clock-step               a primary's clock stepped 3 s back
                           (shardid.clock_offset_ms) for D seconds
After a failover the old primary is rebuilt as the new primary's standby
(pg_basebackup), so every slot can fail over again. At the end every
table is read back through the coordinator, and every primary obfuscates
and reveals 200 numbers (final.json).

Control: --control same-group gives w1.a and a promoted copy of it, w1.b,
group 1 by setting (`shardid.node_id_source = setting`, node id 1) with
clients on both and no fault: the checker must find duplicates.
"""
import argparse
import importlib.util
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

import psycopg2

# The etcd nemesis (test/etcd/nemesis/nemesis.py), under a name of its own: its
# wait for an answer with a deadline, its record of an operation that
# failed, its record of one and its pace, its closing of a connection.
_spec = importlib.util.spec_from_file_location(
    "etcd_nemesis", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "etcd", "nemesis", "nemesis.py"))
_etcd = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_etcd)
Timeout, answered, close, now, record, wait = (_etcd.Timeout, _etcd.answered, _etcd.close, _etcd.now, _etcd.record,
                                              _etcd.wait)

PG_BIN = os.environ["PG_BIN"]
ROOT = os.getuid() == 0
# Below the ephemeral port range (32768 and up), so no outgoing connection
# holds a port the run must listen on.
BASE = int(os.environ.get("CITUS_NEMESIS_PORT", "27300"))
FENCE_S = 10  # shardid.citus_fence, its default
OP_TIMEOUT_S = 8.0
RATE = 40  # operations a second per client, at most
SLOTS = ["c", "w1", "w2", "w3"]
SHARDS = {"c": 100, "w1": 200, "w2": 300, "w3": 400}
SHARDS_N = 32
KINDS = ["worker-failover-running", "worker-failover-frozen", "worker-replaced", "coordinator-failover",
         "update-node-swap", "shard-move", "rebalance", "pause-coordinator-short", "pause-coordinator-long",
         "key-change", "clock-step", "call-key-change", "metadata-stop"]
TABLES = {"trace": "t_trace", "layout": "t_layout", "decimal": "t_decimal", "call": "t_call",
          "instagram/shard": "t_instagram", "obfuscate": "t_obfuscate"}


def run(cmd, check=True, **kw):
    if ROOT:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd="/", **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stdout.strip()[-800:]}")
    return r


class Server:
    """One PostgreSQL server of a slot, at a fixed port, its data in its
    own directory."""

    def __init__(self, slot, letter, port, work):
        self.slot, self.name, self.port = slot, f"{slot}.{letter}", port
        self.dir = os.path.join(work, self.name)
        self.frozen = False

    @property
    def data(self):
        return os.path.join(self.dir, "data")

    def start(self):
        run([f"{PG_BIN}/pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "server.log"), "-w", "-t", "120",
             "-o", f"-p {self.port} -c unix_socket_directories={self.dir}", "start"])

    def stop(self, mode="fast"):
        run([f"{PG_BIN}/pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop"], check=False)

    def pids(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                pm = int(f.readline())
        except (OSError, ValueError):
            return []
        children = subprocess.run(["pgrep", "-P", str(pm)], stdout=subprocess.PIPE, text=True).stdout.split()
        return [pm] + [int(p) for p in children]

    def signal(self, sig):
        for p in self.pids():
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        self.frozen = sig == signal.SIGSTOP

    def kill(self):
        self.signal(signal.SIGKILL)
        time.sleep(0.5)
        self.stop("immediate")
        try:
            os.unlink(os.path.join(self.data, "postmaster.pid"))
        except OSError:
            pass

    def conf(self, *lines):
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write("".join(line + "\n" for line in lines))

    def sql(self, text, timeout=30):
        c = psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres",
                             connect_timeout=5, options=f"-c statement_timeout={int(timeout * 1000)}")
        c.autocommit = True
        try:
            with c.cursor() as cur:
                cur.execute(text)
                return cur.fetchall() if cur.description else []
        finally:
            c.close()

    def one(self, text, timeout=30):
        return self.sql(text, timeout)[0][0]


CONF = [
    "listen_addresses = '127.0.0.1'",
    "shared_preload_libraries = 'citus,shardid'",
    "fsync = off",
    "shared_buffers = 16MB",
    "max_connections = 300",
    "max_prepared_transactions = 100",
    "wal_level = logical",
    "max_wal_senders = 10",
    "wal_keep_size = '256MB'",
    "hot_standby = on",
    "shardid.node_id_source = citus",
    "shardid.launch_id = 1",
    "citus.node_connection_timeout = 5000",
    "log_min_messages = warning",
]


class Slot:
    """A Citus node: a primary and its synchronous standby."""

    def __init__(self, name, i, work):
        self.name = name
        self.servers = [Server(name, "a", BASE + 2 * i, work), Server(name, "b", BASE + 2 * i + 1, work)]
        self.primary, self.standby = self.servers
        self.lock = threading.Lock()

    def init(self, before=None):
        """The primary made and started; `before` run on it before Citus
        is installed."""
        s = self.primary
        os.makedirs(s.dir)
        if ROOT:
            shutil.chown(s.dir, "postgres", "postgres")
        run([f"{PG_BIN}/initdb", "-D", s.data, "-U", "postgres", "-A", "trust", "--no-sync"])
        s.conf(*CONF, f"shardid.shards = '{SHARDS[self.name]}-{SHARDS[self.name] + SHARDS_N - 1}'")
        if before:
            # A server of its own first (node id 9 by setting), then
            # restarted with its node id from Citus.
            s.conf("shardid.node_id_source = setting", "shardid.node_id = 9")
            s.start()
            s.sql(before)
            s.stop()
            s.conf("shardid.node_id_source = citus")
        s.start()
        s.sql("CREATE EXTENSION citus")

    def build_standby(self):
        """The standby anew from the primary, then synchronous."""
        sb, p = self.standby, self.primary
        sb.stop("immediate")
        shutil.rmtree(sb.dir, ignore_errors=True)
        os.makedirs(sb.dir)
        if ROOT:
            shutil.chown(sb.dir, "postgres", "postgres")
        run([f"{PG_BIN}/pg_basebackup", "-h", "127.0.0.1", "-p", str(p.port), "-U", "postgres", "-D", sb.data,
             "-X", "stream", "-c", "fast", "-R"])
        with open(os.path.join(sb.data, "postgresql.auto.conf"), "a") as f:
            f.write(f"primary_conninfo = 'host=127.0.0.1 port={p.port} user=postgres "
                    f"application_name={sb.name.replace('.', '_')}'\n")
        sb.start()
        deadline = now() + 60
        while p.one("SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'") == 0:
            if now() > deadline:
                raise RuntimeError(f"{sb.name} did not stream from {p.name}")
            time.sleep(0.2)
        p.sql("ALTER SYSTEM SET synchronous_standby_names = '*'")
        p.sql("SELECT pg_reload_conf()")

    def promote(self):
        """The standby becomes the primary (synchronous standby none until
        the old primary is rebuilt)."""
        sb = self.standby
        run([f"{PG_BIN}/pg_ctl", "-D", sb.data, "-w", "-t", "60", "promote"])
        sb.sql("ALTER SYSTEM SET synchronous_standby_names = ''")
        sb.sql("SELECT pg_reload_conf()")

    def switch(self):
        """Clients go to the promoted standby: once the metadata names it."""
        with self.lock:
            self.primary, self.standby = self.standby, self.primary


OPS = {
    "trace": ("SELECT id, (trace_id_decode(id)).node_no FROM (SELECT next_trace_id() AS id) s",
              "INSERT INTO t_trace (tenant, op) VALUES ({tenant}, {op}) RETURNING id, (trace_id_decode(id)).node_no"),
    "layout": ("SELECT id, (id_decode('nem', id)).shard FROM (SELECT next_id('nem') AS id) s",
               # (id_decode() is STABLE, which Citus refuses in RETURNING: the
               # layout's shard field, bits 12-21, by arithmetic.)
               "INSERT INTO t_layout (tenant, op) VALUES ({tenant}, {op}) RETURNING id, ((id >> 12) & 1023)::int"),
    "decimal": ("SELECT id, (decimal_id_decode(id)).generator_id FROM (SELECT next_decimal_id() AS id) s",
                "INSERT INTO t_decimal (tenant, op) VALUES ({tenant}, {op}) "
                "RETURNING id, (decimal_id_decode(id)).generator_id"),
    "call": ("SELECT c, (call_number_decode(c)).run_id FROM (SELECT next_call_number() AS c) s",
             # (call_number_decode() is STABLE, which Citus refuses in
             # RETURNING: decoded by the next statement, with the key of
             # the statement before, or not at all. Not in a CTE: a
             # modifying CTE is a transaction block, whose remote commit
             # Citus runs where a backend cannot be terminated.)
             "INSERT INTO t_call (tenant, op) VALUES ({tenant}, {op}) RETURNING id, NULL"),
    "instagram/shard": (
        "SELECT id, (instagram_decode(id)).shard FROM (SELECT next_instagram_id({shard}) AS id) s",
        "INSERT INTO t_instagram (tenant, op, id) VALUES ({tenant}, {op}, next_instagram_id({shard})) "
        "RETURNING id, (instagram_decode(id)).shard"),
    # The value is the obfuscated number; "x" what was obfuscated.
    "obfuscate": ("SELECT obfuscate_id({x}, 'nemesis'), reveal_id(obfuscate_id({x}, 'nemesis'), 'nemesis')",
                  "INSERT INTO t_obfuscate (tenant, op, x, id) VALUES ({tenant}, {op}, {x}, obfuscate_id({x}, 'nemesis')) "
                  "RETURNING id, x"),
}
SETUP_SQL = """
CREATE EXTENSION shardid;
SELECT create_obfuscation_key('nemesis');
SELECT create_layout('nem', '2020-01-01 00:00+00', '10 milliseconds', 41, 10, 12);
CREATE TABLE t_trace (tenant int, op bigint NOT NULL, id bigint DEFAULT next_trace_id(), PRIMARY KEY (tenant, id));
CREATE TABLE t_layout (tenant int, op bigint NOT NULL, id bigint DEFAULT next_id('nem'), PRIMARY KEY (tenant, id));
CREATE TABLE t_decimal (tenant int, op bigint NOT NULL, id bigint DEFAULT next_decimal_id(), PRIMARY KEY (tenant, id));
CREATE TABLE t_call (tenant int, op bigint NOT NULL, id text DEFAULT next_call_number(), PRIMARY KEY (tenant, id));
CREATE TABLE t_instagram (tenant int, op bigint NOT NULL, id bigint, PRIMARY KEY (tenant, id));
CREATE TABLE t_obfuscate (tenant int, op bigint NOT NULL, x bigint, id bigint, PRIMARY KEY (tenant, op));
SELECT create_distributed_table('t_trace', 'tenant', shard_count := 8);
SELECT create_distributed_table('t_layout', 'tenant', colocate_with := 't_trace');
SELECT create_distributed_table('t_decimal', 'tenant', colocate_with := 't_trace');
SELECT create_distributed_table('t_call', 'tenant', colocate_with := 't_trace');
SELECT create_distributed_table('t_instagram', 'tenant', colocate_with := 't_trace');
SELECT create_distributed_table('t_obfuscate', 'tenant', colocate_with := 't_trace');
"""


class Client(threading.Thread):
    def __init__(self, cid, slot, seed, history, lock, stop, shard_base):
        super().__init__(daemon=True)
        self.cid, self.slot = cid, slot
        self.rng = random.Random(seed)
        self.history, self.lock, self.stop = history, lock, stop
        self.shard_base = shard_base
        self.conn, self.server = None, None
        self.seq = 0

    def drop(self):
        close(self.conn)
        self.conn, self.server = None, None

    def connect(self, deadline):
        with self.slot.lock:
            server = self.slot.primary
        self.conn = psycopg2.connect(host="127.0.0.1", port=server.port, user="postgres", dbname="postgres",
                                     connect_timeout=3, async_=1)
        self.server = server
        wait(self.conn, deadline)

    def run(self):
        while not self.stop.is_set():
            scheme = self.rng.choice(sorted(OPS))
            kind = self.rng.choice(["select", "insert"])
            self.seq += 1
            op = self.cid * 10_000_000 + self.seq
            x = self.rng.randrange(1, 200)
            t0 = now()
            deadline = t0 + OP_TIMEOUT_S
            rec = {"client": f"{self.slot.name}/{self.cid}", "node": None, "scheme": scheme, "kind": kind, "t0": t0,
                   "op": op}
            if scheme == "obfuscate":
                rec["x"] = x
            try:
                if self.conn is None:
                    self.connect(deadline)
                    rec["t0"] = t0 = now()  # the operation starts once connected
                    deadline = t0 + OP_TIMEOUT_S
                rec["node"] = self.server.name
                cur = self.conn.cursor()
                text = OPS[scheme][kind == "insert"].format(
                    tenant=self.rng.randrange(1000), op=op, x=x,
                    shard=self.shard_base + self.rng.randrange(SHARDS_N))
                if scheme == "call" and kind == "insert":
                    cur.execute("SELECT current_setting('shardid.call_number_key')")
                    wait(self.conn, deadline)
                    key_before = cur.fetchone()[0]
                if kind == "select" and self.rng.random() < 0.5:
                    # One message of several statements: the last answers.
                    # SELECTs only: an INSERT in such a message is one
                    # transaction block, whose remote part Citus commits in
                    # its commit callback, where the backend cannot be
                    # terminated; on a worker whose old primary runs on
                    # (its commits wait for the standby that was promoted)
                    # it waits for ever, and citus_update_node(force) for it.
                    text = "SELECT pg_sleep(0.02); SELECT 1; " + text
                    rec["message"] = True
                cur.execute(text)
                wait(self.conn, deadline)
                value, nid = cur.fetchone()
                if scheme == "call" and kind == "insert":
                    # The run id with the key of the statement before: a
                    # change of the key is seconds long, so the same key
                    # before and after is the INSERT's; else no run id.
                    cur.execute("SELECT (call_number_decode(%s)).run_id, current_setting('shardid.call_number_key')",
                                (value,))
                    wait(self.conn, deadline)
                    nid, key_after = cur.fetchone()
                    if key_after != key_before:
                        nid = None
                rec.update(outcome="ok", value=value, nid=nid)
            except (Timeout, psycopg2.Error, OSError) as e:
                if answered(rec, e, self.conn):
                    # Refused: an application that retries on the slot's
                    # current primary.
                    with self.slot.lock:
                        if self.slot.primary is not self.server:
                            self.drop()
                else:
                    self.drop()
            rec["t1"] = now()
            if rec["node"] is None:  # never connected: the slot's primary did not answer
                rec["node"] = self.slot.name + "?"
                rec["outcome"] = "fail"
            record(rec, t0, self.history, self.lock, RATE)
        self.drop()


# --- the schedule --------------------------------------------------------------
def schedule(seed, seconds, kinds=KINDS):
    """One fault at a time, drawn from the seed: (kind, target, d, the pause
    after it). Every kind once first (in an order drawn from the seed), then
    at random; more than the run can take (a fault often takes less than
    its estimate), the run stopping at its end."""
    rng = random.Random(seed)
    first = list(kinds)
    rng.shuffle(first)
    out = []
    budget = 4 * seconds
    i = 0
    while True:
        kind = first[i] if i < len(first) else rng.choice(first)
        i += 1
        target = {"coordinator-failover": "c", "pause-coordinator-short": "c", "pause-coordinator-long": "c",
                  "key-change": "c", "call-key-change": "all", "metadata-stop": "w3",
                  "update-node-swap": "w1+w2", "shard-move": "w1+w2",
                  "rebalance": "w1+w2"}.get(kind) or rng.choice(["w1", "w2"] + (["c"] if kind == "clock-step" else []))
        d = {"worker-failover-running": rng.uniform(4, 16), "worker-failover-frozen": rng.uniform(FENCE_S + 1, FENCE_S + 6),
             "update-node-swap": rng.uniform(4, 14), "pause-coordinator-short": 3.0,
             "pause-coordinator-long": FENCE_S + 4.0, "clock-step": rng.uniform(3, 10),
             "metadata-stop": rng.uniform(3, 10)}.get(kind, 0.0)
        cost = d + 12 + (15 if "failover" in kind or kind == "worker-replaced" else 0)
        if budget - cost < 0 and i > len(first):
            break
        budget -= cost
        out.append((kind, target, round(d, 1), rng.uniform(2, 5)))
    return out


class Nemesis:
    def __init__(self, slots, rng):
        self.slots = {s.name: s for s in slots}
        self.rng = rng
        self.call_keys = ["default"]  # the call-number keys used, the current last

    def call_key_change(self):
        """shardid.call_number_key on every server: a new key, or one used
        before (keys may come back)."""
        if len(self.call_keys) > 1 and self.rng.random() < 0.4:
            key = self.rng.choice(self.call_keys[:-1])
        else:
            key = f"call{len(self.call_keys)}"
            self.coordinator().sql(f"SELECT create_obfuscation_key('{key}')", timeout=60)
        self.call_keys.append(key)
        for slot in self.slots.values():
            for srv in slot.servers:
                try:
                    srv.sql(f"ALTER SYSTEM SET shardid.call_number_key = '{key}'")
                    srv.sql("SELECT pg_reload_conf()")
                except psycopg2.Error:
                    # Not running (a standby being rebuilt takes the
                    # primary's postgresql.auto.conf).
                    pass

    def metadata_stop(self, d):
        c = self.coordinator()
        w3 = self.slots["w3"].primary
        c.sql(f"SELECT stop_metadata_sync_to_node('127.0.0.1', {w3.port})", timeout=60)
        time.sleep(d)
        c.sql(f"SELECT start_metadata_sync_to_node('127.0.0.1', {w3.port})", timeout=60)
        c.sql("SELECT shardid_sync_keys()", timeout=60)

    def coordinator(self):
        return self.slots["c"].primary

    def node_id(self, server):
        return self.coordinator().one(f"SELECT nodeid FROM pg_dist_node WHERE nodeport = {server.port} AND groupid > 0")

    def metadata_synced(self, within=60):
        """Citus' metadata sync daemon done with every node: one still
        syncing to a worker whose standby is then promoted waits for ever
        (the old primary's commits wait for that standby), and so does
        citus_update_node(force) for it, the daemon not ending when told
        to (the 18 root's 30-minute run, a failover drawn 6 s after a
        swap)."""
        deadline = now() + within
        while self.coordinator().one("SELECT count(*) FROM pg_dist_node WHERE hasmetadata AND NOT metadatasynced"):
            if now() > deadline:
                raise RuntimeError(f"Citus' metadata was not synced to every node within {within} s")
            time.sleep(0.5)

    def worker_failover(self, slot, d, how):
        self.metadata_synced()
        old, new = slot.primary, slot.standby
        nodeid = self.node_id(old)
        if how == "frozen":
            old.signal(signal.SIGSTOP)
        elif how == "replaced":
            old.kill()
        try:
            slot.promote()
            # As Citus documents a worker's failover: force, after a
            # cooldown, what holds the node's shards (the old primary's
            # commits wait for the standby that was promoted). A backend of
            # the coordinator connected to a frozen worker cannot end before
            # the thaw (Citus cancels its remote statement with libpq's
            # blocking PQcancel as it exits), so the change may commit only
            # then: it runs beside the freeze.
            done = {}

            def update():
                try:
                    self.coordinator().sql(f"SELECT citus_update_node({nodeid}, '127.0.0.1', {new.port}, "
                                           "force := true, lock_cooldown := 2000)", timeout=120)
                    slot.switch()
                    done["at"] = now()
                except psycopg2.Error as e:
                    done["error"] = e
            th = threading.Thread(target=update, daemon=True)
            th.start()
            if how == "frozen":
                time.sleep(d)
            elif how == "running":
                th.join(120)
                time.sleep(d)
        finally:
            if how == "frozen":
                old.signal(signal.SIGCONT)
        th.join(120)
        if "at" not in done:
            raise RuntimeError(f"citus_update_node() did not complete: {done.get('error', 'timed out')}")
        if how == "frozen":
            time.sleep(3)  # the thawed server's clients see its refusals
        slot.build_standby()

    def coordinator_failover(self):
        slot = self.slots["c"]
        old = slot.primary
        old.kill()
        slot.promote()
        slot.standby.sql(f"SELECT citus_set_coordinator_host('127.0.0.1', {slot.standby.port})", timeout=60)
        slot.switch()
        slot.build_standby()

    def cleanup(self):
        """Citus' deferred drops of the shards a move left behind, now:
        they name a group, and a group named for another server during a
        swap would have its live copy dropped (Citus' cleanup, not
        shardid's, loses rows then)."""
        c = self.coordinator()
        c.sql("CALL citus_cleanup_orphaned_resources()", timeout=120)
        left = c.one("SELECT count(*) FROM pg_dist_cleanup")
        if left:
            raise RuntimeError(f"{left} of Citus' deferred drops are left after citus_cleanup_orphaned_resources()")

    def swap(self, d):
        self.cleanup()
        c = self.coordinator()
        w1, w2 = self.slots["w1"].primary, self.slots["w2"].primary
        n1, n2 = self.node_id(w1), self.node_id(w2)

        def exchange(p1, p2):
            c.sql(f"SELECT citus_update_node({n1}, '127.0.0.1', {BASE + 99});"
                  f"SELECT citus_update_node({n2}, '127.0.0.1', {p1});"
                  f"SELECT citus_update_node({n1}, '127.0.0.1', {p2})", timeout=60)
        exchange(w1.port, w2.port)
        time.sleep(d)
        exchange(w2.port, w1.port)

    def shard_move(self):
        c = self.coordinator()
        w1, w2 = self.slots["w1"].primary, self.slots["w2"].primary
        src, dst = (w1, w2) if self.rng.random() < 0.5 else (w2, w1)
        rows = c.sql(f"SELECT shardid FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid) "
                     f"WHERE s.logicalrelid = 't_trace'::regclass AND p.nodeport = {src.port} ORDER BY shardid")
        if not rows:
            src, dst = dst, src
            rows = c.sql(f"SELECT shardid FROM pg_dist_shard_placement p JOIN pg_dist_shard s USING (shardid) "
                         f"WHERE s.logicalrelid = 't_trace'::regclass AND p.nodeport = {src.port} ORDER BY shardid")
        c.sql(f"SELECT citus_move_shard_placement({self.rng.choice(rows)[0]}, '127.0.0.1', {src.port}, "
              f"'127.0.0.1', {dst.port}, shard_transfer_mode := 'block_writes')", timeout=120)
        self.cleanup()

    def inject(self, kind, target, d):
        if kind.startswith("worker-failover") or kind == "worker-replaced":
            self.worker_failover(self.slots[target], d, {"worker-failover-running": "running",
                                                         "worker-failover-frozen": "frozen"}.get(kind, "replaced"))
        elif kind == "coordinator-failover":
            self.coordinator_failover()
        elif kind == "update-node-swap":
            self.swap(d)
        elif kind == "shard-move":
            self.shard_move()
        elif kind == "rebalance":
            self.coordinator().sql("SELECT rebalance_table_shards('t_trace', shard_transfer_mode := 'block_writes')",
                                   timeout=300)
            self.cleanup()
        elif kind.startswith("pause-coordinator"):
            c = self.coordinator()
            c.signal(signal.SIGSTOP)
            time.sleep(d)
            c.signal(signal.SIGCONT)
        elif kind == "key-change":
            self.coordinator().sql("BEGIN; SELECT drop_obfuscation_key('nemesis'); "
                                   "SELECT create_obfuscation_key('nemesis'); COMMIT", timeout=60)
        elif kind == "call-key-change":
            self.call_key_change()
        elif kind == "metadata-stop":
            self.metadata_stop(d)
        elif kind == "clock-step":
            p = self.slots[target].primary
            p.sql("ALTER SYSTEM SET shardid.clock_offset_ms = -3000")
            p.sql("SELECT pg_reload_conf()")
            time.sleep(d)
            p = self.slots[target].primary
            p.sql("ALTER SYSTEM RESET shardid.clock_offset_ms")
            p.sql("SELECT pg_reload_conf()")


def read_back(coordinator, out):
    rows = []
    for scheme, table in TABLES.items():
        for op, value in coordinator.sql(f"SELECT op, id FROM {table}", timeout=120):
            rows.append({"scheme": scheme, "op": op, "value": value})
    with open(os.path.join(out, "tables.jsonl"), "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    return len(rows)


def final_keys(slots, out):
    """Every primary obfuscates 1..200 and reveals the coordinator's values."""
    xs = list(range(1, 201))
    answers = {}
    for s in slots:
        p = s.primary
        try:
            answers[p.name] = [list(r) for r in p.sql(
                "SELECT x, obfuscate_id(x, 'nemesis'), reveal_id(obfuscate_id(x, 'nemesis'), 'nemesis') "
                f"FROM generate_series(1, {len(xs)}) x ORDER BY x")]
        except psycopg2.Error as e:
            answers[p.name] = f"{e.pgcode} {str(e).splitlines()[0]}"
    c = slots[0].primary.name
    if isinstance(answers.get(c), list):
        opaque = [r[1] for r in answers[c]]
        for s in slots[1:]:
            p = s.primary
            try:
                revealed = [r[0] for r in p.sql(
                    f"SELECT reveal_id(v, 'nemesis') FROM unnest(ARRAY{opaque}::bigint[]) WITH ORDINALITY u(v, i) ORDER BY i")]
            except psycopg2.Error as e:
                revealed = f"{e.pgcode} {str(e).splitlines()[0]}"
            answers[p.name + " reveals " + c] = revealed
    with open(os.path.join(out, "final.json"), "w") as f:
        json.dump(answers, f)


def settled(slots, deadline):
    """Every primary issues IDs of every scheme again (or the deadline passed)."""
    while now() < deadline:
        try:
            for s in slots:
                s.primary.sql("SELECT next_trace_id(), next_id('nem'), next_decimal_id(), next_call_number(), "
                              f"next_instagram_id({SHARDS.get(s.name, SHARDS['w1'])}), obfuscate_id(1, 'nemesis')")
            return True
        except psycopg2.Error:
            time.sleep(0.5)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--control", choices=["same-group"])
    ap.add_argument("--kinds", help="only these kinds of fault, comma-separated (to reproduce one)")
    args = ap.parse_args()
    out = os.environ["NEMESIS_OUT"]
    work = os.path.join(out, "servers")
    os.makedirs(work)
    if ROOT:
        shutil.chown(work, "postgres", "postgres")
    slots = [Slot(name, i, work) for i, name in enumerate(SLOTS)]
    c = slots[0]
    print(f"# history in {out} (seed {args.seed})", flush=True)
    t_setup = now()
    try:
        # w3 had shardid before it joined, and before Citus: its own key
        # ring, its own call numbers (under its own 'default'); then it
        # joins and takes the coordinator's ring.
        for s in slots:
            s.init("CREATE EXTENSION shardid; SELECT next_call_number(), obfuscate_id(42) FROM generate_series(1, 100)"
                   if s.name == "w3" else None)
        w3 = slots[3].primary
        c.primary.sql(f"SELECT citus_set_coordinator_host('127.0.0.1', {c.primary.port})")
        for s in slots[1:3]:
            c.primary.sql(f"SELECT citus_add_node('127.0.0.1', {s.primary.port})")
        c.primary.sql(SETUP_SQL)
        c.primary.sql(f"SELECT citus_add_node('127.0.0.1', {w3.port})")
        c.primary.sql("SELECT shardid_sync_keys()")
        for s in slots[:3]:
            s.build_standby()
        if args.control == "same-group":
            # w1.b, a copy of w1.a, promoted and on its own; both given
            # group 1 by hand, and clients on each.
            w1 = slots[1]
            w1.primary.sql("ALTER SYSTEM SET synchronous_standby_names = ''")
            w1.primary.sql("SELECT pg_reload_conf()")
            run([f"{PG_BIN}/pg_ctl", "-D", w1.standby.data, "-w", "-t", "60", "promote"])
            for srv in (w1.primary, w1.standby):
                srv.sql("ALTER SYSTEM SET shardid.node_id_source = setting")
                srv.sql("ALTER SYSTEM SET shardid.node_id = 1")
                srv.stop()
                srv.start()
            twin = Slot("w1x", 0, work)
            twin.servers, twin.primary = [w1.standby], w1.standby
            slots.append(twin)
        if not settled(slots, now() + 60):
            raise RuntimeError("the cluster did not issue IDs within 60 s of its setup")
    except (RuntimeError, psycopg2.Error) as e:
        print(f"setup failed: {e}", flush=True)
        for s in slots:
            for srv in s.servers:
                srv.stop("immediate")
        return 1
    print(f"# setup took {now() - t_setup:.0f} s", flush=True)

    history, lock, stop = [], threading.Lock(), threading.Event()
    clients = []
    for i, s in enumerate(slots):
        for k in range(2):
            cid = i * 2 + k + 1
            clients.append(Client(cid, s, args.seed * 100 + cid, history, lock, stop,
                                  SHARDS.get(s.name, SHARDS["w1"])))
    faults = []
    start = now()
    for cl in clients:
        cl.start()
    rc = 0
    nemesis = Nemesis(slots[:4], random.Random(args.seed))
    plan = [] if args.control else schedule(args.seed, args.seconds, args.kinds.split(",") if args.kinds else KINDS)
    try:
        time.sleep(3)
        for kind, target, d, gap in plan:
            t = now()
            # Past the run's time once every kind ran (on a loaded machine
            # the faults take longer than their estimates: the run is
            # longer then, never missing a kind).
            if t - start > args.seconds and len({f["kind"] for f in faults}) >= len(set(k for k, *_ in plan)):
                break
            print(f"fault {kind} {target} at {t - start:.1f} for {d:.1f}", flush=True)
            err = None
            try:
                nemesis.inject(kind, target, d)
            except (RuntimeError, psycopg2.Error) as e:
                err = str(e).strip().splitlines()[0][:300]
                print(f"  the fault's own step failed: {err}", flush=True)
            faults.append({"kind": kind, "target": target, "t": t - start, "d": now() - t, "error": err})
            time.sleep(gap)
        left = args.seconds - (now() - start)
        if left > 0:
            time.sleep(left)
    finally:
        # The clients go on while the cluster settles, so what follows a
        # fault is in the history too.
        ok = settled(slots[:4], now() + FENCE_S * 3 + 30)
        time.sleep(2)
        stop.set()
        for cl in clients:
            cl.join(OP_TIMEOUT_S + 5)
        end = now()
        try:
            with open(os.path.join(out, "history.jsonl"), "w") as f:
                for rec in history:
                    f.write(json.dumps(rec) + "\n")
            with open(os.path.join(out, "faults.jsonl"), "w") as f:
                for flt in faults:
                    f.write(json.dumps(flt) + "\n")
            n = read_back(slots[0].primary, out)
            final_keys(slots[:4], out)
            with open(os.path.join(out, "run.json"), "w") as f:
                json.dump({"start": start, "end": end, "seed": args.seed, "seconds": args.seconds,
                           "fence_s": FENCE_S, "settled": ok, "control": args.control,
                           "servers": [srv.name for s in slots for srv in s.servers]}, f)
            print(f"# {len(history)} operations, {len(faults)} faults, {n} rows read back; settled: {ok}", flush=True)
        except (OSError, psycopg2.Error) as e:
            print(f"the read-back failed: {e}", flush=True)
            rc = 1
        for s in slots:
            for srv in s.servers:
                if srv.frozen:
                    srv.signal(signal.SIGCONT)
                srv.stop("immediate")
    return rc


if __name__ == "__main__":
    sys.exit(main())
