#!/usr/bin/env bash
# What shardid costs every backend in memory: fresh backends of a server
# without shardid, and of one with shardid preloaded (after an ID), side by
# side in one run: their resident memory (RSS), their proportional share
# (PSS: shared pages divided among the processes mapping them), the pages
# only they hold (private), and how many shared objects they map (libcurl
# among them or not). scripts/bench.sh runs it.
#   bash bench/backend_memory.sh [BACKENDS]
set -eu
cd "$(dirname "$0")/.."
. scripts/lib.sh
B=${1:-4}

plain=$(pg_tmpdir); with=$(pg_tmpdir)
trap 'cluster_stop "$plain" immediate; cluster_stop "$with" immediate; rm -rf "$plain" "$with"' EXIT
conf=("shared_buffers = '128MB'" "jit = off")
cluster_init "$plain" "${conf[@]}"
cluster_init "$with" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "${conf[@]}"
cluster_start "$plain" 15482
cluster_start "$with" 15483
cluster_psql "$with" 15483 -c "SET client_min_messages = warning" -c "CREATE EXTENSION shardid"

python3 - "$plain" 15482 "$with" 15483 "$B" <<'PY'
import statistics, subprocess, sys

def open_backend(dir_, port):
    p = subprocess.Popen(["psql", "-X", "-q", "-At", "-h", dir_, "-p", port, "-U", "postgres", "-d", "postgres"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    def ask(sql):
        p.stdin.write(sql + ";\n\\echo __done__\n"); p.stdin.flush()
        out = []
        while (line := p.stdout.readline().strip()) != "__done__":
            out.append(line)
        return out
    return p, ask

def memory(pid):
    kb = {}
    for line in open(f"/proc/{pid}/smaps_rollup"):
        parts = line.split()
        if len(parts) == 3 and parts[2] == "kB":
            kb[parts[0].rstrip(":")] = int(parts[1])
    objects = set()
    for line in open(f"/proc/{pid}/maps"):
        parts = line.split()
        if len(parts) >= 6 and ".so" in parts[5]:
            objects.add(parts[5])
    return {"rss": kb["Rss"], "pss": kb["Pss"], "private": kb["Private_Clean"] + kb["Private_Dirty"],
            "objects": len(objects), "curl": any("libcurl" in o for o in objects)}

def measure(dir_, port, query, n):
    held, rows = [], []
    for _ in range(n):  # held open together: the shared pages are shared by all of them
        p, ask = open_backend(dir_, port)
        ask(query)
        held.append((p, int(ask("SELECT pg_backend_pid()")[0])))
    for p, pid in held:
        rows.append(memory(pid))
    for p, _ in held:
        p.stdin.close(); p.wait()
    return {k: statistics.median(r[k] for r in rows) for k in ("rss", "pss", "private", "objects")} | \
           {"curl": any(r["curl"] for r in rows)}

plain_dir, plain_port, with_dir, with_port, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
plain = measure(plain_dir, plain_port, "SELECT 1", n)
with_ = measure(with_dir, with_port, "SELECT next_trace_id()", n)
print(f"## Memory of a backend: medians of {n} fresh backends held open together (kB, from /proc/<pid>/smaps_rollup)")
print(f"{'server':44s} {'RSS':>7s} {'PSS':>7s} {'private':>8s} {'shared objects':>15s}  libcurl mapped")
for name, m in (("without shardid", plain), ("shardid preloaded, after next_trace_id()", with_)):
    print(f"{name:44s} {m['rss']:7.0f} {m['pss']:7.0f} {m['private']:8.0f} {m['objects']:15.0f}  {'yes' if m['curl'] else 'no'}")
print(f"{'shardid adds':44s} {with_['rss'] - plain['rss']:+7.0f} {with_['pss'] - plain['pss']:+7.0f} "
      f"{with_['private'] - plain['private']:+8.0f} {with_['objects'] - plain['objects']:+15.0f}")
PY
