#!/usr/bin/python3
"""The client libraries against the extension, ID by ID (test/clients/compare.sh).

  compare.py --host DIR --port P --client NAME=COMMAND [--client ...] [--expect-mismatch NAME]

IDs of every scheme are made by the installed extension (generated, and
composed over every shard value and the edges of each field), decoded by
SQL, and decoded by each client's command line (COMMAND is followed by
"decode SCHEME [options]" or "encode base62 ..."; it reads standard input).
Every line must agree field by field: the same OUT columns in the same
order, the same values, created_at at the same millisecond in ISO 8601
(UTC, "Z"; whole seconds for TraceIds); an input SQL refuses must be
refused by the client on that line with the same SQLSTATE. One PASS/FAIL
line per client and case.

--expect-mismatch NAME: NAME is a decoder known to be wrong (the negative
control); each of its cases must FIND mismatches, else FAIL.
"""
import argparse
import datetime as dt
import json
import re
import shlex
import subprocess
import sys

import psycopg2

NEAR = "2026-12-01T12:00:00Z"
NEAR_OLD = "1990-06-01T00:00:00+02:00"

SETUP = r"""
SET TimeZone = 'UTC';
CREATE TEMP TABLE cases (scheme text, opts text, n int, input text, expected text);
-- A random bigint of `bits` bits (random() alone has 52: as a float,
-- random() * 9223372036854775807 rounds to 2^63).
CREATE FUNCTION pg_temp.rand_bits(bits int) RETURNS bigint LANGUAGE sql VOLATILE
    AS $$ SELECT ((floor(random() * 4294967296)::bigint << 31) | floor(random() * 2147483648)::bigint) >> (63 - bits) $$;
CREATE FUNCTION pg_temp.ms(t timestamptz) RETURNS numeric LANGUAGE sql IMMUTABLE
    AS $$ SELECT floor(extract(epoch FROM t) * 1000) $$;
-- SQL's answer for one input: the OUT columns as JSON (created_at in Unix
-- ms), or "error SQLSTATE".
CREATE FUNCTION pg_temp.sql_decode(scheme text, input text, opt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r json;
BEGIN
    CASE scheme
    WHEN 'trace' THEN
        SELECT json_build_object('created_at', pg_temp.ms(d.created_at), 'node_no', d.node_no, 'counter', d.counter)
          INTO r FROM trace_id_decode(input::bigint, opt::timestamptz) d;
    WHEN 'decimal' THEN
        SELECT row_to_json(d) INTO r FROM decimal_id_decode(input::bigint) d;
    WHEN 'snowflake' THEN
        SELECT json_build_object('created_at', pg_temp.ms(d.created_at), 'shard', d.shard, 'sequence', d.sequence)
          INTO r FROM snowflake_decode(input::bigint) d;
    WHEN 'instagram' THEN
        SELECT json_build_object('created_at', pg_temp.ms(d.created_at), 'shard', d.shard, 'sequence', d.sequence)
          INTO r FROM instagram_decode(input::bigint) d;
    WHEN 'layout' THEN
        SELECT json_build_object('created_at', pg_temp.ms(d.created_at), 'shard', d.shard, 'sequence', d.sequence)
          INTO r FROM id_decode(opt, input::bigint) d;
    WHEN 'eightbyte' THEN
        SELECT json_build_object('created_at', pg_temp.ms(d.created_at), 'sequence', d.sequence,
                                 'generator_id', d.generator_id, 'cluster_id', d.cluster_id, 'mode', d.mode)
          INTO r FROM eightbyte_id_decode(CASE WHEN left(input, 2) = '\x' THEN input ELSE '\x' || input END::bytea) d;
    WHEN 'uuidv7' THEN
        SELECT json_build_object('created_at', pg_temp.ms(d.created_at), 'counter', d.counter, 'shard', d.shard)
          INTO r FROM uuidv7_decode(input::uuid, opt::int) d;
    WHEN 'encode base62' THEN RETURN to_json(base62_encode(input::bigint, opt::int))::text;
    WHEN 'encode base32' THEN RETURN to_json(base32_encode(input::bigint, opt::int))::text;
    WHEN 'decode base62' THEN RETURN to_json(base62_decode(input))::text;
    WHEN 'decode base32' THEN RETURN to_json(base32_decode(input))::text;
    END CASE;
    RETURN r::text;
EXCEPTION WHEN OTHERS THEN
    RETURN 'error ' || SQLSTATE;
END $$;
"""

# (scheme, options, the SQL that gives the inputs as rows of text). Every
# set is made by the extension, or composed from every value of a field.
EDGES = "VALUES ('1'), ('9223372036854775807'), ('0'), ('-1'), ('9223372036854775808'), ('abc'), (''), (' 42 '), ('+7'), ('1e3')"
LAYOUTS = [
    # name, create_layout arguments (NULL: a preset), IntervalStyle and TimeZone the JSON is printed in
    ("snowflake", None, "postgres", "UTC"),
    ("twitter", None, "postgres", "Asia/Kolkata"),
    ("icicle", None, "iso_8601", "America/Los_Angeles"),
    ("discord", None, "sql_standard", "UTC"),
    ("instagram", None, "postgres", "Europe/Berlin"),
    ("js_orders", "'2024-01-01', '1 ms', 41, 4, 8", "postgres", "UTC"),
    ("per_second", "'2024-01-01', '1 s', 33, 10, 20", "iso_8601", "Asia/Kolkata"),
    ("quarter_second", "'2021-06-01 12:34:56.789+00', '250 ms', 40, 6, 10", "postgres", "America/St_Johns"),
    ("far_days", "'2000-01-01', '1 day', 26, 8, 10", "postgres", "UTC"),
    ("wide_shard", "'2024-01-01', '1 s', 30, 32, 1", "postgres", "UTC"),
]


def layout_inputs(name, shard_bits, seq_bits, time_bits, unit_ms):
    total = shard_bits + seq_bits + time_bits
    shards = min(1 << shard_bits, 8192)
    # Generated: every shard value (up to 8192) twice or more, as many as
    # the layout issues in 3 s (its sequence is the node's, all shards'),
    # up to 16,384; composed and random IDs cover the rest of the fields.
    n = min(max(2 * shards, 16384), (1 << seq_bits) * max(1, 3000 // unit_ms))
    gen_shard_max = min((1 << shard_bits) - 1, 2147483647)
    q = f"""
      SELECT next_id('{name}', s % {shards})::text FROM generate_series(0, {n - 2}) s
      UNION ALL SELECT next_id('{name}', {gen_shard_max})::text
      UNION ALL SELECT id_compose('{name}', l.epoch, s, q)::text
        FROM shardid_layouts l, (VALUES (0), ({gen_shard_max})) a(s), (VALUES (0), ({min((1 << seq_bits) - 1, 2147483647)})) b(q)
       WHERE l.name = '{name}'
      UNION ALL SELECT ((((2::numeric ^ {time_bits}) - 1) * (2::numeric ^ {shard_bits + seq_bits})) + r)::bigint::text
        FROM (VALUES (0), (1), ({(1 << (shard_bits + seq_bits)) - 1})) v(r)
      UNION ALL SELECT pg_temp.rand_bits({total})::text FROM generate_series(1, 3000)
      UNION ALL SELECT pg_temp.rand_bits(63)::text FROM generate_series(1, 300)
      UNION ALL {EDGES}"""
    return q


def cases(cur):
    """(scheme, CLI options, opt for SQL, SQL of the inputs)."""
    out = [
        ("trace", ["--near", NEAR], NEAR, """
            SELECT next_trace_id()::text FROM generate_series(1, 20000)
            UNION ALL SELECT ((floor(random() * 33554432)::bigint << 38) | (n::bigint << 22)
                              | (1 + floor(random() * 4194303))::bigint)::text FROM generate_series(0, 65535) n
            UNION ALL SELECT ((t::bigint << 38) | (65535::bigint << 22) | c)::text
              FROM (VALUES (0), (33554431)) a(t), (VALUES (1), (4194303)) b(c)
            UNION ALL VALUES ('4194304') UNION ALL """ + EDGES),
        ("trace", ["--near", NEAR_OLD], NEAR_OLD, """
            SELECT next_trace_id()::text FROM generate_series(1, 2000)
            UNION ALL SELECT ((floor(random() * 33554432)::bigint << 38) | (n::bigint << 22) | 1)::text
              FROM generate_series(0, 65535, 7) n UNION ALL """ + EDGES),
        ("decimal", [], None, """
            SELECT next_decimal_id()::text FROM generate_series(1, 5000)
            UNION ALL SELECT ((1 + floor(random() * 922337202))::bigint * 10000000000
                              + floor(random() * 100000)::bigint * 100000 + floor(random() * 100000)::bigint)::text
              FROM generate_series(1, 20000)
            UNION ALL SELECT (c * 10000000000 + g * 100000 + l)::text
              FROM (VALUES (1::bigint), (922337202)) a(c), (VALUES (0::bigint), (99999)) b(g), (VALUES (0::bigint), (99999)) d(l)
            UNION ALL VALUES ('9999999999'), ('10000000000'), ('9223372030000000000') UNION ALL """ + EDGES),
        ("snowflake", [], None, """
            SELECT next_snowflake_id(s)::text FROM generate_series(0, 1023) s, generate_series(1, 20)
            UNION ALL SELECT ((1::bigint << 22) * floor(random() * 2199023255552)::bigint + r)::text
              FROM generate_series(1, 3000), LATERAL (SELECT floor(random() * 4194304)::bigint AS r) x
            UNION ALL """ + EDGES),
        ("instagram", [], None, """
            SELECT next_instagram_id(s)::text FROM generate_series(0, 8191) s, generate_series(1, 3)
            UNION ALL SELECT pg_temp.rand_bits(63)::text FROM generate_series(1, 3000)
            UNION ALL """ + EDGES),
        ("eightbyte", [], None, r"""
            SELECT encode(next_eightbyte_id('spread'), 'hex') FROM generate_series(1, 5000)
            UNION ALL SELECT '\x' || encode(next_eightbyte_id('time_sequential'), 'hex') FROM generate_series(1, 5000)
            UNION ALL SELECT encode(eightbyte_id_build(timestamptz 'epoch' + floor(random() * 4398046511103) * interval '1 ms',
                                                       q, g, c, m), 'hex')
              FROM generate_series(0, 2047) g, (VALUES (0), (15)) cl(c), (VALUES ('spread'), ('time_sequential')) mo(m),
                   LATERAL (SELECT (g % 64) AS q) x
            UNION ALL SELECT lpad(to_hex(pg_temp.rand_bits(63)), 16, '0') || ''
              FROM generate_series(1, 3000)
            UNION ALL VALUES ('0000000000000000'), ('ffffffffffffffff'), ('FFFFFFFFFFFFFFFF'), ('0123'),
                             ('0123456789abcdeg'), ('012345678'), (''), ('\x')"""),
    ]
    for bits in (0, 8, 13, 32):
        out.append(("uuidv7", ["--shard-bits", str(bits)], str(bits), f"""
            SELECT next_uuidv7()::text FROM generate_series(1, 3000)
            UNION ALL SELECT next_uuidv7(s)::text FROM generate_series(0, {min((1 << bits) - 1, 4095) if bits else -1}) s
            UNION ALL SELECT gen_random_uuid()::text FROM generate_series(1, 100)
            UNION ALL SELECT upper(next_uuidv7()::text) FROM generate_series(1, 100)
            UNION ALL SELECT '{{' || replace(next_uuidv7()::text, '-', '') || '}}' FROM generate_series(1, 100)
            UNION ALL VALUES ('00000000-0000-0000-0000-000000000000'), ('ffffffff-ffff-7fff-bfff-ffffffffffff'),
                             ('ffffffff-ffff-ffff-ffff-ffffffffffff'), ('0189-0a5d-ac96-774b-bcce-b302-099a-8057'),
                             ('{{01890a5d-ac96-774b-bcce-b302099a8057'), ('01890a5d-ac96-774b-bcce-b302099a8057-'),
                             ('not a uuid'), ('')"""))
    for name, args, style, zone in LAYOUTS:
        if args is not None:
            cur.execute(f"SELECT create_layout('{name}', {args}, short_lived => true)")
        cur.execute(f"SET IntervalStyle = '{style}'; SET TimeZone = '{zone}'")
        cur.execute("SELECT row_to_json(l)::text, time_bits, shard_bits, sequence_bits, "
                    "(extract(epoch FROM time_unit) * 1000)::bigint FROM shardid_layouts l WHERE name = %s", (name,))
        row_json, tb, sb, qb, unit_ms = cur.fetchone()
        cur.execute("RESET IntervalStyle; SET TimeZone = 'UTC'")
        out.append(("layout", ["--layout", row_json], name, layout_inputs(name, sb, qb, tb, unit_ms)))
    for base in ("base62", "base32"):
        for width in (0, 11, 13, 20):
            out.append((f"encode {base}", ["--width", str(width)], str(width), """
                SELECT (pg_temp.rand_bits(63) >> floor(random() * 64)::int)::text FROM generate_series(1, 5000)
                UNION ALL VALUES ('0'), ('1'), ('9223372036854775807'), ('9223372036854775808'), ('-1'), ('x')"""))
        out.append((f"decode {base}", [], None, f"""
            SELECT {base}_encode(pg_temp.rand_bits(63)) FROM generate_series(1, 5000)
            UNION ALL SELECT lower({base}_encode(pg_temp.rand_bits(40), 13)) FROM generate_series(1, 500)
            UNION ALL VALUES ('0'), ('AzL8n0Y58m7'), ('AzL8n0Y58m8'), ('7ZZZZZZZZZZZZ'), ('8000000000000'), ('ilo'),
                             ('IL0O'), ('U'), ('abc!'), (''), ('é')"""))
    return out


def unix_ms_of_iso(text):
    """Unix ms of the clients' ISO text, independently of them (datetime for
    years 0001-9999, the proleptic calendar by hand beyond)."""
    m = re.fullmatch(r"([+-]\d{6}|\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{3}))?Z", text)
    if not m:
        return None
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    ms = int(m[7] or 0)
    if 1 <= y <= 9999:
        t = dt.datetime(y, mo, d, h, mi, s, tzinfo=dt.timezone.utc) - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
        return (t.days * 86400 + t.seconds) * 1000 + ms
    days = sum(366 if (yy % 4 == 0 and yy % 100 != 0) or yy % 400 == 0 else 365 for yy in range(1970, y)) if y >= 1970 \
        else -sum(366 if (yy % 4 == 0 and yy % 100 != 0) or yy % 400 == 0 else 365 for yy in range(y, 1970))
    leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
    days += sum([31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][:mo - 1]) + d - 1
    return ((days * 24 + h) * 60 + mi) * 60000 + s * 1000 + ms


def run_client(command, scheme, options, inputs):
    verb, _, what = scheme.partition(" ")
    argv = shlex.split(command) + ([verb, what] if what else ["decode", scheme]) + options
    p = subprocess.run(argv, input="\n".join(inputs) + "\n", capture_output=True, text=True, timeout=600)
    errors = {}
    for line in p.stderr.splitlines():
        m = re.match(r"shardid: line (\d+): .*\(SQLSTATE ([0-9A-Z]{5})\)$", line)
        if m:
            errors[int(m[1])] = m[2]
    return p.returncode, p.stdout.splitlines(), errors, p.stderr


def compare(scheme, rows, rc, out_lines, errors):
    """Mismatches (descriptions), SQL's rows against one client's answers."""
    bad = []
    it = iter(out_lines)
    n_err = 0
    for i, (text, expected) in enumerate(rows, 1):
        if expected.startswith("error "):
            n_err += 1
            code = expected.split()[1]
            if errors.get(i) != code:
                bad.append(f"line {i} {text!r}: SQL refuses it ({code}), the client {'gave ' + errors[i] if i in errors else 'decoded it'}")
                if i not in errors:
                    next(it, None)
            continue
        if i in errors:
            bad.append(f"line {i} {text!r}: the client refused it ({errors[i]}), SQL gives {expected}")
            continue
        got_line = next(it, None)
        want = json.loads(expected)
        if scheme.startswith(("encode ", "decode ")):
            got = got_line if scheme.startswith("encode ") else (int(got_line) if got_line and got_line.isdigit() else got_line)
            if got != want:
                bad.append(f"line {i} {text!r}: SQL {want!r}, client {got!r}")
            continue
        try:
            got = json.loads(got_line)
        except (TypeError, ValueError):
            bad.append(f"line {i} {text!r}: the client wrote {got_line!r}, not a JSON object")
            continue
        if list(got) != list(want):
            bad.append(f"line {i} {text!r}: columns {list(got)}, SQL's are {list(want)}")
            continue
        for k, v in want.items():
            g = got[k]
            if k == "created_at":
                ms = unix_ms_of_iso(g) if isinstance(g, str) else None
                seconds_only = scheme == "trace"
                shape = isinstance(g, str) and (g.endswith("Z") and ((".") not in g) == seconds_only)
                if ms != int(v) or not shape:
                    bad.append(f"line {i} {text!r}: created_at {g!r}, SQL's is {int(v)} ms")
            elif g != v or type(g) is not type(v):
                bad.append(f"line {i} {text!r}: {k} {g!r}, SQL's is {v!r}")
    extra = list(it)
    if extra:
        bad.append(f"{len(extra)} lines more than inputs")
    if (rc != 0) != (n_err > 0):
        bad.append(f"exit status {rc} with {n_err} inputs SQL refuses")
    return bad, n_err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--client", action="append", required=True, help="NAME=COMMAND")
    ap.add_argument("--expect-mismatch", action="append", default=[])
    a = ap.parse_args()
    clients = [c.split("=", 1) for c in a.client]
    conn = psycopg2.connect(host=a.host, port=a.port, user="postgres", dbname="postgres")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute(SETUP)
    failed = 0
    for scheme, options, opt, sql in cases(cur):
        if scheme == "uuidv7":  # next_uuidv7() puts the node id, next_uuidv7(s) s, in that many bits
            cur.execute(f"SET shardid.uuidv7_shard_bits = {int(opt)}")
        cur.execute(f"SELECT input, pg_temp.sql_decode(%s, input, %s) FROM ({sql.replace('%', '%%')}) s(input)",
                    (scheme, opt))
        rows = cur.fetchall()
        label = f"{scheme}{' ' + opt if opt and scheme in ('layout', 'uuidv7') else ''}"
        if scheme == "trace":
            label += f" near {opt}"
        for name, command in clients:
            if name in a.expect_mismatch and scheme == "uuidv7":
                continue  # UUIDs are text: no Number in the way
            rc, out_lines, errors, stderr = run_client(command, scheme, options, [r[0] for r in rows])
            bad, n_err = compare(scheme, rows, rc, out_lines, errors)
            if name in a.expect_mismatch:
                ok = bool(bad)
                what = f"control {name}: {label}: the comparison finds it wrong ({len(bad)} mismatches of {len(rows)}" \
                       f"{', e.g. ' + bad[0] if bad else ''})"
            else:
                ok = not bad
                what = f"{name} decodes {label} as SQL does: {len(rows)} inputs ({n_err} refused by both)"
            print(("PASS " if ok else "FAIL ") + what[:600], flush=True)
            if not ok:
                failed += 1
                for b in bad[:3]:
                    print(f"#   {b[:300]}")
                if not out_lines and stderr:
                    print("#   " + stderr.strip().splitlines()[-1][:300])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
