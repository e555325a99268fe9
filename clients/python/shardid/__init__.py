"""shardid's decoders for Python: every ID of shardid that holds no secret,
read exactly as the extension's SQL functions read it (docs/clients.md).
Standard library only.

Errors are ShardidError, whose ``code`` is the SQLSTATE the SQL function
raises for the same input (22P02, 22003, 22023, 22008).
"""
import datetime as _dt
import json as _json
import re as _re
import time as _time
from typing import NamedTuple

__version__ = "1.3.0"
__all__ = [
    "ShardidError", "Layout", "PRESETS", "SCHEMES", "layout_from_json", "parse_interval", "iso_string",
    "trace_id_decode", "decimal_id_decode", "id_decode", "snowflake_decode", "instagram_decode",
    "eightbyte_id_decode", "uuidv7_decode", "base62_encode", "base62_decode", "base32_encode", "base32_decode",
    "decode_text",
]


class ShardidError(ValueError):
    """Input the SQL function would refuse; ``code`` is its SQLSTATE."""

    def __init__(self, code, message, detail=None):
        super().__init__(message)
        self.code = code
        self.detail = detail


INT64_MAX = (1 << 63) - 1
INT32_MAX = 2147483647
MS_PER_DAY = 86400000
# timestamptz's range in Unix milliseconds: 4713 BC to 294276 AD.
TIMESTAMPTZ_MIN_MS = -210866803200000
TIMESTAMPTZ_END_MS = 9224318016000000
_UNIX_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def _clip(s):
    return s if len(s) <= 64 else s[:64] + "..."


# As PostgreSQL's bigint input reads it: white space around, a sign.
_DIGITS = _re.compile(r"[ \t\n\r\f\v]*[+-]?[0-9]+[ \t\n\r\f\v]*\Z")


def to_int(value, what="id"):
    """An ID as an int: an int or a string of decimal digits (a float is refused)."""
    if isinstance(value, bool):
        raise ShardidError("22023", f"a {what} must be an int or a string of digits, not bool")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if not _DIGITS.match(value):
            raise ShardidError("22P02", f'invalid input syntax for type bigint: "{_clip(value)}"',
                               "IDs are written in decimal digits.")
        v = int(value.strip(" \t\n\r\f\v"))
        if v > INT64_MAX or v < -INT64_MAX - 1:
            raise ShardidError("22003", f'value "{_clip(value)}" is out of range for type bigint')
        return v
    raise ShardidError("22023", f"a {what} must be an int or a string of digits, not {type(value).__name__}")


def _positive(i, scheme):
    if i <= 0:
        raise ShardidError("22003", f"{scheme} id {i} is out of range: {scheme} ids are positive")
    if i > INT64_MAX:
        raise ShardidError("22003", f"value {i} is out of range for type bigint")


# --- time ---------------------------------------------------------------
def _check_timestamptz(ms):
    if ms < TIMESTAMPTZ_MIN_MS or ms >= TIMESTAMPTZ_END_MS:
        raise ShardidError("22008", "timestamp out of range",
                           f"{ms} ms after the Unix epoch is beyond the range of timestamp with time zone.")
    return ms


def iso_string(unix_ms, precision="ms"):
    """ISO 8601 in UTC ending in Z for Unix milliseconds: with milliseconds,
    or whole seconds when precision is "s". Years outside 0000-9999 get a
    sign and six digits (as JavaScript's toISOString writes them)."""
    days, in_day = divmod(unix_ms, MS_PER_DAY)
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + 3 if mp < 10 else mp - 9
    y = yoe + era * 400 + (1 if m <= 2 else 0)
    year = f"{y:04d}" if 0 <= y <= 9999 else ("-" if y < 0 else "+") + f"{abs(y):06d}"
    hh, rest = divmod(in_day, 3600000)
    mi, rest = divmod(rest, 60000)
    ss, ms = divmod(rest, 1000)
    frac = "" if precision == "s" else f".{ms:03d}"
    return f"{year}-{m:02d}-{d:02d}T{hh:02d}:{mi:02d}:{ss:02d}{frac}Z"


def _datetime_of(unix_ms):
    try:
        return _UNIX_EPOCH + _dt.timedelta(milliseconds=unix_ms)
    except OverflowError:
        raise ShardidError("22008", "timestamp out of range for a Python datetime",
                           f"{unix_ms} ms after the Unix epoch is outside years 1 to 9999; decode_text() and the "
                           "command line give it as text.") from None


_TIMESTAMP = _re.compile(r"([+-]?\d{4,6})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
                         r"(Z|z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)\Z")


def _days_from_civil(y, m, d):
    y -= m <= 2
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (m - 3 if m > 2 else m + 9) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def to_unix_ms(value, what="time"):
    """A time as Unix milliseconds: an aware datetime, an int of
    milliseconds, or ISO 8601 text with a time zone."""
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise ShardidError("22023", f"{what} must be an aware datetime (with tzinfo)")
        delta = value - _UNIX_EPOCH
        return (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _parse_timestamp(value, what)
    raise ShardidError("22023", f"{what} must be a datetime, ISO 8601 text or milliseconds")


def _parse_timestamp(text, what):
    m = _TIMESTAMP.match(text.strip())
    if not m:
        raise ShardidError("22007", f'invalid input syntax for {what}: "{_clip(text)}"',
                           "Give ISO 8601 with a time zone, such as 2026-12-01T12:00:00Z or 2026-12-01T12:00:00+01:00.")
    ys, mos, ds, hs, mis, ss, fs, zone = m.groups()
    y, mo, d, h, mi, s = int(ys), int(mos), int(ds), int(hs), int(mis), int(ss or 0)
    fs = fs or ""
    leap = (y % 4 == 0 and y % 100 != 0) or y % 400 == 0
    dim = [31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
    if not (1 <= mo <= 12) or not (1 <= d <= dim[mo - 1]) or h > 23 or mi > 59 or s > 59:
        raise ShardidError("22008", f'date/time field value out of range: "{_clip(text)}"')
    if len(fs) > 3 and fs[3:].strip("0"):
        raise ShardidError("22023", f'{what} "{_clip(text)}" is finer than a millisecond')
    offset = 0
    if zone not in ("Z", "z"):
        digits = zone[1:].replace(":", "")
        offset = (int(digits[0:2]) * 3600 + int(digits[2:4] or 0) * 60 + int(digits[4:6] or 0)) * (
            -1 if zone[0] == "-" else 1)
    return _days_from_civil(y, mo, d) * MS_PER_DAY + ((h * 60 + mi) * 60 + s - offset) * 1000 + int((fs + "000")[:3])


# --- layouts ------------------------------------------------------------
class Layout(NamedTuple):
    """A "time | shard | sequence" layout: the time in units of unit_ms since epoch_ms."""
    name: str
    epoch_ms: int
    unit_ms: int
    time_bits: int
    shard_bits: int
    sequence_bits: int


def layout(name, epoch_ms, unit_ms, time_bits, shard_bits, sequence_bits):
    """A layout, checked as create_layout() checks it."""
    for k, b in (("time_bits", time_bits), ("shard_bits", shard_bits), ("sequence_bits", sequence_bits)):
        if isinstance(b, bool) or not isinstance(b, int) or not 0 <= b <= 63:
            raise ShardidError("22023", f"bit widths must be between 0 and 63, not {b!r} ({k})")
    epoch_ms, unit_ms = to_int(epoch_ms, "epoch"), to_int(unit_ms, "time unit")
    if unit_ms < 1:
        raise ShardidError("22023", f'time unit of layout "{name}" must be at least 1 ms')
    if time_bits < 1 or sequence_bits < 1:
        raise ShardidError("22023", f'layout "{name}" needs at least 1 time bit and 1 sequence bit')
    total = time_bits + shard_bits + sequence_bits
    if total > 63:
        raise ShardidError("22023", f'layout "{name}" has {total} bits, more than the 63 of a positive bigint')
    if epoch_ms < 0:
        raise ShardidError("22023", f'epoch of layout "{name}" is before 1970')
    if (1 << time_bits) - 1 > (INT64_MAX - epoch_ms) // unit_ms:
        raise ShardidError("22023", f'layout "{name}" spans more time than a bigint of milliseconds')
    return Layout(name, epoch_ms, unit_ms, time_bits, shard_bits, sequence_bits)


# The built-in layouts (shardid_layouts' rows with builtin = true).
PRESETS = {
    "snowflake": layout("snowflake", 1577836800000, 1, 41, 10, 12),
    "twitter": layout("twitter", 1288834974657, 1, 41, 10, 12),
    "icicle": layout("icicle", 1455788600316, 1, 41, 10, 12),
    "discord": layout("discord", 1420070400000, 1, 41, 10, 12),
    "instagram": layout("instagram", 1314220021721, 1, 40, 13, 10),
}

_ISO_INTERVAL = _re.compile(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d+))?S)?)?\Z")
_PG_INTERVAL = _re.compile(r"(?:(-?\d+) days?)?\s*(?:(-)?(\d+):(\d{2}):(\d{2})(?:\.(\d+))?)?\Z")
_SQL_INTERVAL = _re.compile(r"(?:(\d+) )?(\d+):(\d{2}):(\d{2})(?:\.(\d+))?\Z")


def parse_interval(text):
    """An interval as PostgreSQL prints it, in milliseconds, for a layout's
    time_unit: IntervalStyle postgres (the default: "00:00:00.001", "1 day
    02:00:00"), sql_standard ("1 2:00:00") or iso_8601 ("PT0.001S")."""
    if not isinstance(text, str):
        raise ShardidError("22023", "time_unit must be an interval as text")
    t = text.strip()

    def bad(why):
        return ShardidError("22023", f'time_unit "{_clip(t)}" {why}',
                            "Give the interval as PostgreSQL prints it with IntervalStyle postgres (the default), "
                            "sql_standard or iso_8601.")

    def us_of(sign, h, mi, s, frac):
        f = (frac or "").ljust(6, "0")
        if len(f) > 6:
            raise bad("is finer than a microsecond")
        return sign * ((int(h) * 3600 + int(mi) * 60 + int(s)) * 1000000 + int(f))

    us = None
    m = _ISO_INTERVAL.match(t)
    if m and t != "P" and not t.endswith("T"):
        us = int(m[1] or 0) * 86400000000 + us_of(1, m[2] or 0, m[3] or 0, m[4] or 0, m[5])
    elif _re.search(r"\b(years?|mons?|months?)\b", t) or _re.match(r"P.*[YW]", t) or _re.match(r"P(?:\d+Y)?\d+M", t):
        raise bad("must not contain months or years")
    elif t and (m := _PG_INTERVAL.match(t)):
        us = int(m[1] or 0) * 86400000000 + us_of(-1 if m[2] else 1, m[3] or 0, m[4] or 0, m[5] or 0, m[6])
    elif m := _SQL_INTERVAL.match(t):
        us = int(m[1] or 0) * 86400000000 + us_of(1, m[2], m[3], m[4], m[5])
    if us is None:
        raise bad("is not an interval shardid can read")
    if us < 1000 or us % 1000:
        raise bad("must be a whole number of milliseconds, at least 1 ms")
    return us // 1000


def layout_from_json(value):
    """A layout from a row of shardid_layouts as JSON (SELECT row_to_json(l)
    FROM shardid_layouts l WHERE name = ...), as text or a parsed dict; or a
    built-in layout's name. Every field present is checked against the others."""
    if isinstance(value, Layout):
        return value
    if isinstance(value, str) and value in PRESETS:
        return PRESETS[value]
    row = value
    if isinstance(value, str):
        try:
            row = _json.loads(value)
        except ValueError as e:
            raise ShardidError("22P02", f"invalid layout JSON: {e}",
                               "Give a row of shardid_layouts as SELECT row_to_json(l) FROM shardid_layouts l "
                               "WHERE name = ... prints it.") from None
    if not isinstance(row, dict):
        raise ShardidError("22023", "a layout must be a JSON object: a row of shardid_layouts")
    for k in ("epoch", "time_unit", "time_bits", "shard_bits", "sequence_bits"):
        if k not in row:
            raise ShardidError("22023", f'the layout JSON has no "{k}"')
    name = row.get("name", "layout")
    if not isinstance(name, str):
        raise ShardidError("22023", 'the layout\'s "name" must be text')
    if not isinstance(row["epoch"], str):
        raise ShardidError("22023", 'the layout\'s "epoch" must be a timestamp as text')
    lay = layout(name, _parse_timestamp(row["epoch"], "epoch"), parse_interval(row["time_unit"]), row["time_bits"],
                 row["shard_bits"], row["sequence_bits"])
    total = lay.time_bits + lay.shard_bits + lay.sequence_bits
    derived = {"total_bits": total, "javascript_safe": total <= 53, "shards": 1 << lay.shard_bits,
               "ids_per_tick": 1 << lay.sequence_bits}
    for k, want in derived.items():
        got = row.get(k)
        if got is None:
            continue
        if isinstance(want, bool) != isinstance(got, bool) or got != want:
            raise ShardidError("22023", f'the layout JSON\'s "{k}" is {got!r}, but its widths give {want!r}',
                               "The row was changed after PostgreSQL printed it: give it as printed.")
    return lay


def _layout_fields(lay, i):
    _positive(i, lay.name)
    total = lay.time_bits + lay.shard_bits + lay.sequence_bits
    if total < 63 and i >> total:
        raise ShardidError("22023", f"{i} is not a {lay.name} id", f"It has bits set above the layout's {total} bits.")
    tick = i >> (lay.sequence_bits + lay.shard_bits)
    shard = (i >> lay.sequence_bits) & ((1 << lay.shard_bits) - 1)
    sequence = i & ((1 << lay.sequence_bits) - 1)
    unix_ms = _check_timestamptz(lay.epoch_ms + tick * lay.unit_ms)
    if shard > INT32_MAX or sequence > INT32_MAX:
        what, v = ("shard", shard) if shard > INT32_MAX else ("sequence", sequence)
        raise ShardidError("22003", f"{what} {v} of {lay.name} id {i} is out of range for type integer")
    return unix_ms, shard, sequence


# --- the schemes: raw fields (created_at as Unix ms) --------------------
_TRACE_PERIOD_S = 1 << 25
_NEAR_LIMIT_S = 1 << 50


def _trace_raw(id_, near):
    i = to_int(id_)
    if i <= 0:
        raise ShardidError("22003", f"trace id {i} is out of range: trace ids are positive")
    if i > INT64_MAX:
        raise ShardidError("22003", f"value {i} is out of range for type bigint")
    counter = i & 0x3FFFFF
    if counter == 0:
        raise ShardidError("22023", f"{i} is not a trace id", "Its counter field is 0; trace id counters start at 1.")
    near_ms = int(_time.time() * 1000) if near is None else to_unix_ms(near, "near")
    near_s = near_ms // 1000
    if near_s > _NEAR_LIMIT_S or near_s < -_NEAR_LIMIT_S:
        raise ShardidError("22008", "reference time is out of range for decoding a trace id")
    tick = (i >> 38) & (_TRACE_PERIOD_S - 1)
    limit = near_s + 86400
    unix_s = limit - (limit - tick) % _TRACE_PERIOD_S
    return _check_timestamptz(unix_s * 1000), (i >> 22) & 0xFFFF, counter


_DECIMAL_FIELD = 100000
_DECIMAL_COUNTER_MAX = 922337202


def decimal_id_decode(id_):
    """decimal_id_decode(id): {counter, generator_id, launch_id}."""
    i = to_int(id_)
    _positive(i, "decimal")
    counter = i // (_DECIMAL_FIELD * _DECIMAL_FIELD)
    if counter == 0 or counter > _DECIMAL_COUNTER_MAX:
        raise ShardidError("22023", f"{i} is not a decimal id",
                           f"Its counter (the digits above the last ten) is {counter}; decimal id counters run "
                           f"from 1 to {_DECIMAL_COUNTER_MAX}.")
    return {"counter": counter, "generator_id": (i // _DECIMAL_FIELD) % _DECIMAL_FIELD, "launch_id": i % _DECIMAL_FIELD}


_REVERSE_BYTE = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))
_HEX = _re.compile(r"[0-9a-fA-F]*\Z")


def _eight_word(id_):
    if isinstance(id_, (bytes, bytearray, memoryview)):
        b = bytes(id_)
        if len(b) != 8:
            raise ShardidError("22023", f"an eight-byte id must be exactly 8 bytes, not {len(b)}")
        return int.from_bytes(b, "big")
    if not isinstance(id_, str):
        raise ShardidError("22023", "an eight-byte id must be bytes or 16 hex digits")
    h = id_[2:] if id_.startswith("\\x") else id_
    if not _HEX.match(h):
        raise ShardidError("22023", f'invalid hexadecimal eight-byte id: "{_clip(id_)}"', "Give its 8 bytes as 16 hex digits.")
    if len(h) != 16:
        raise ShardidError("22023", f"an eight-byte id must be exactly 8 bytes, not {len(h) / 2:g}")
    return int(h, 16)


def _eight_raw(id_):
    w = _eight_word(id_)
    spread = not (w >> 12) & 1
    t = w & ~((1 << 22) - 1)
    unix_ms = int.from_bytes(t.to_bytes(8, "little").translate(_REVERSE_BYTE), "big") if spread else t >> 22
    return (unix_ms, (w >> 16) & 63, ((w >> 13) & 7) << 8 | (w >> 4) & 0xFF, w & 15,
            "spread" if spread else "time_sequential")


_HEX2 = _re.compile(r"[0-9a-fA-F]{2}\Z")
_UUID_CANONICAL = _re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


def _uuid_hex(text):
    """UUID text as PostgreSQL's uuid input reads it: 32 hex digits, a hyphen
    allowed after any group of four but the last, the whole optionally in
    braces; None when it is not."""
    i = 0
    braces = text[:1] == "{"
    i += braces
    out = []
    for n in range(16):
        pair = text[i:i + 2]
        if not _HEX2.match(pair):
            return None
        out.append(pair)
        i += 2
        if text[i:i + 1] == "-" and n % 2 == 1 and n < 15:
            i += 1
    if braces:
        if text[i:i + 1] != "}":
            return None
        i += 1
    return "".join(out) if i == len(text) else None


def _uuid_raw(id_, shard_bits):
    if isinstance(shard_bits, bool) or not isinstance(shard_bits, int) or not 0 <= shard_bits <= 32:
        raise ShardidError("22023", f"shard width {shard_bits} is out of range", "A UUIDv7 shard field is 0 to 32 bits wide.")
    text = id_ if isinstance(id_, str) else str(id_)
    hex_ = text.replace("-", "") if _UUID_CANONICAL.match(text) else _uuid_hex(text)
    if hex_ is None:
        raise ShardidError("22P02", f'invalid input syntax for type uuid: "{_clip(text)}"')
    v = int(hex_, 16)
    version = (v >> 76) & 15
    variant = (v >> 62) & 3
    if version != 7:
        raise ShardidError("22023", "uuid is not a UUIDv7", f"Its version is {version}; a UUIDv7 has version 7.")
    if variant != 2:
        raise ShardidError("22023", "uuid is not a UUIDv7",
                           f"Its variant bits are {variant >> 1}{variant & 1}; a UUIDv7 has the RFC 9562 variant, binary 10.")
    rand_b = v & ((1 << 62) - 1)
    return v >> 80, (v >> 64) & 0xFFF, 0 if shard_bits == 0 else rand_b >> (62 - shard_bits)


# --- the public decoders ------------------------------------------------
def trace_id_decode(id_, near=None):
    """trace_id_decode(id, near): {created_at, node_no, counter}; near defaults to now."""
    ms, node_no, counter = _trace_raw(id_, near)
    return {"created_at": _datetime_of(ms), "node_no": node_no, "counter": counter}


def id_decode(lay, id_):
    """id_decode(layout, id): {created_at, shard, sequence}; lay: a Layout, a
    shardid_layouts row as JSON, or a preset's name."""
    ms, shard, sequence = _layout_fields(layout_from_json(lay), to_int(id_))
    return {"created_at": _datetime_of(ms), "shard": shard, "sequence": sequence}


def snowflake_decode(id_):
    """snowflake_decode(id): {created_at, shard, sequence}."""
    return id_decode(PRESETS["snowflake"], id_)


def instagram_decode(id_):
    """instagram_decode(id): {created_at, shard, sequence}."""
    return id_decode(PRESETS["instagram"], id_)


def eightbyte_id_decode(id_):
    """eightbyte_id_decode(id): {created_at, sequence, generator_id, cluster_id, mode}; id: 8 bytes or 16 hex digits."""
    ms, sequence, generator_id, cluster_id, mode = _eight_raw(id_)
    return {"created_at": _datetime_of(ms), "sequence": sequence, "generator_id": generator_id,
            "cluster_id": cluster_id, "mode": mode}


def uuidv7_decode(id_, shard_bits=0):
    """uuidv7_decode(id, shard_bits): {created_at, counter, shard}; id: UUID text or uuid.UUID."""
    ms, counter, shard = _uuid_raw(id_, shard_bits)
    return {"created_at": _datetime_of(ms), "counter": counter, "shard": shard}


# --- base62 and Crockford base32 ----------------------------------------
def _alphabet(name, digits, aliases):
    value_of = {c: i for i, c in enumerate(digits)}
    for i in range(0, len(aliases) - 1, 2):
        value_of[aliases[i]] = value_of[aliases[i + 1]]
    return name, digits, len(digits), value_of


_BASE62 = _alphabet("base62", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "")
_BASE32 = _alphabet("base32", "0123456789ABCDEFGHJKMNPQRSTVWXYZ", "aAbBcCdDeEfFgGhHjJkKmMnNpPqQrRsStTvVwWxXyYzZI1i1L1l1O0o0")


def _encode(a, value, width):
    name, digits, base, _ = a
    v = to_int(value, "value")
    if v < 0:
        raise ShardidError("22003", f"{name} cannot encode negative value {v}")
    if v > INT64_MAX:
        raise ShardidError("22003", f"value {v} is out of range for type bigint")
    if isinstance(width, bool) or not isinstance(width, int) or not 0 <= width <= 64:
        raise ShardidError("22023", f"width must be between 0 and 64, not {width}")
    out = []
    while True:
        v, r = divmod(v, base)
        out.append(digits[r])
        if v == 0:
            break
    return "".join(reversed(out)).rjust(width, digits[0])


def _decode(a, text):
    name, digits, base, value_of = a
    if not isinstance(text, str):
        raise ShardidError("22023", f"{name} text must be a str")
    if not text:
        raise ShardidError("22P02", f"invalid {name} input: empty string")
    v = 0
    for pos, c in enumerate(text, 1):
        d = value_of.get(c)
        if d is None:
            shown = f'"{c}"' if 0x20 <= ord(c) < 0x7F else f"(U+{ord(c):04X})"
            raise ShardidError("22P02", f"invalid {name} character {shown} at position {pos}",
                               f"The {name} digits are {digits}.")
        v = v * base + d
        if v > INT64_MAX:
            raise ShardidError("22003", f"{name} value is out of range: above {INT64_MAX}")
    return v


def base62_encode(value, width=0):
    """base62_encode(value, width): 0-9A-Za-z, left-padded with 0."""
    return _encode(_BASE62, value, width)


def base62_decode(text):
    """base62_decode(text): an int."""
    return _decode(_BASE62, text)


def base32_encode(value, width=0):
    """base32_encode(value, width): Crockford's alphabet, left-padded with 0."""
    return _encode(_BASE32, value, width)


def base32_decode(text):
    """base32_decode(text): an int; case-insensitive, I and L read as 1, O as 0."""
    return _decode(_BASE32, text)


# --- one line of the command line ---------------------------------------
SCHEMES = ("trace", "decimal", "snowflake", "instagram", "eightbyte", "uuidv7", "layout")


def decode_text(scheme, text, near=None, shard_bits=0, layout=None):
    """The SQL function's OUT columns for one ID given as text, in their
    order, created_at as ISO 8601 text in UTC (whole seconds for TraceIds,
    milliseconds otherwise): what the command line prints."""
    if scheme == "trace":
        ms, node_no, counter = _trace_raw(text, near)
        return {"created_at": iso_string(ms, "s"), "node_no": node_no, "counter": counter}
    if scheme == "decimal":
        return decimal_id_decode(text)
    if scheme in ("snowflake", "instagram", "layout"):
        if scheme == "layout" and layout is None:
            raise ShardidError("22023", "the layout scheme needs a layout (--layout)")
        lay = PRESETS[scheme] if scheme != "layout" else layout_from_json(layout)
        ms, shard, sequence = _layout_fields(lay, to_int(text))
        return {"created_at": iso_string(ms), "shard": shard, "sequence": sequence}
    if scheme == "eightbyte":
        ms, sequence, generator_id, cluster_id, mode = _eight_raw(text)
        return {"created_at": iso_string(ms), "sequence": sequence, "generator_id": generator_id,
                "cluster_id": cluster_id, "mode": mode}
    if scheme == "uuidv7":
        ms, counter, shard = _uuid_raw(text, shard_bits)
        return {"created_at": iso_string(ms), "counter": counter, "shard": shard}
    raise ShardidError("22023", f'unknown scheme "{scheme}"', f"The schemes are {', '.join(SCHEMES)}.")
