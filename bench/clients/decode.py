"""Decodes per second of shardid's Python library (bench/clients.sh): each
scheme's decoder over N IDs given as text, best of 3 runs, beside a
hand-written int decode of the same snowflakes (the peer). Each line gives
the rate in real time and per second of this process's CPU time (the
figure a loaded machine changes least: test/clients/compare.sh checks it).
  python3 bench/clients/decode.py [N]"""
import datetime as dt
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "clients", "python"))
import shardid  # noqa: E402

N = int(sys.argv[1]) if len(sys.argv) > 1 else 300000
now = int(time.time() * 1000)
rnd = random.getrandbits
snowflakes = [str(((now - 1577836800000 - rnd(30)) << 22) | rnd(22)) for _ in range(N)]
traces = [str((((now // 1000) & 0x1FFFFFF) << 38) | (rnd(16) << 22) | (rnd(22) | 1)) for _ in range(N)]
decimals = [str(1 + rnd(29)) + f"{rnd(16) % 100000:05d}" + "00065" for _ in range(N)]
eights = [f"{rnd(63) | 1:016x}" for _ in range(N)]


def uuid_text():
    h = f"{(now << 16) | 0x7000 | rnd(12):016x}{(2 << 62) | rnd(62):016x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


uuids = [uuid_text() for _ in range(N)]
layout = shardid.layout("js_orders", 1704067200000, 1, 41, 4, 8)
safe = [str(((now - 1704067200000) << 12) | rnd(12)) for _ in range(N)]
near = dt.datetime.now(dt.timezone.utc)
EPOCH = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)


def naive(t):  # the peer: int arithmetic by hand, no checks
    n = int(t)
    return {"created_at": EPOCH + dt.timedelta(milliseconds=n >> 22), "shard": (n >> 12) & 1023, "sequence": n & 4095}


def rate(fn, inputs):
    best = cpu = float("inf")
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        for x in inputs:
            fn(x)
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return len(inputs) / best, len(inputs) / max(cpu, 1e-9)


rows = [
    ("snowflake_decode", rate(shardid.snowflake_decode, snowflakes)),
    ("trace_id_decode", rate(lambda t: shardid.trace_id_decode(t, near), traces)),
    ("decimal_id_decode", rate(shardid.decimal_id_decode, decimals)),
    ("eightbyte_id_decode", rate(shardid.eightbyte_id_decode, eights)),
    ("uuidv7_decode", rate(lambda t: shardid.uuidv7_decode(t, 8), uuids)),
    ("id_decode (a 53-bit layout)", rate(lambda t: shardid.id_decode(layout, t), safe)),
]
peer, peer_cpu = rate(naive, snowflakes)
for name, (r, c) in rows:
    print(f"python {name} {round(r)} per_s {r / peer:.2f} x_int_decode {round(c)} per_cpu_s")
print(f"python int_decode(peer) {round(peer)} per_s {round(peer_cpu)} per_cpu_s")
