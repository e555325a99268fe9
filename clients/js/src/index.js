// shardid's decoders for JavaScript: every ID of shardid that holds no
// secret, read exactly as the extension's SQL functions read it
// (docs/clients.md). BigInt throughout: an ID is never a Number above
// 2^53 - 1, where Number rounds it silently.
//
// Errors are ShardidError, whose `code` is the SQLSTATE the SQL function
// raises for the same input (22P02, 22003, 22023, 22008).

export const VERSION = '1.3.0';

export class ShardidError extends Error {
  constructor(code, message, detail) {
    super(message);
    this.name = 'ShardidError';
    this.code = code;
    if (detail !== undefined) this.detail = detail;
  }
}

const INT64_MAX = (1n << 63n) - 1n;
const INT32_MAX = 2147483647n;
const MS_PER_DAY = 86400000n;
// timestamptz's range in Unix milliseconds: 4713 BC to 294276 AD.
const TIMESTAMPTZ_MIN_MS = -210866803200000n;
const TIMESTAMPTZ_END_MS = 9224318016000000n;

// --- IDs in -------------------------------------------------------------

/**
 * An ID as a BigInt: a BigInt, a string of decimal digits, or a Number that
 * is a safe integer (at most 2^53 - 1; above, a Number has already lost the
 * ID's low bits and is refused).
 */
export function toBigInt(value, what = 'id') {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'string') {
    // The common case first: 1 to 18 plain digits, always a bigint.
    if (value.length > 0 && value.length <= 18) {
      let digits = true;
      for (let i = 0; i < value.length; i++) {
        const c = value.charCodeAt(i);
        if (c < 48 || c > 57) {
          digits = false;
          break;
        }
      }
      if (digits) return BigInt(value);
    }
    // As PostgreSQL's bigint input reads it: white space around, a sign.
    if (!/^[ \t\n\r\f\v]*[+-]?[0-9]+[ \t\n\r\f\v]*$/.test(value)) {
      throw new ShardidError('22P02', `invalid input syntax for type bigint: "${clip(value)}"`,
        'IDs are written in decimal digits.');
    }
    const v = BigInt(value.trim());
    if (v > INT64_MAX || v < -INT64_MAX - 1n) {
      throw new ShardidError('22003', `value "${clip(value)}" is out of range for type bigint`);
    }
    return v;
  }
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) {
      throw new ShardidError('22023', `a ${what} given as a JavaScript number must be a safe integer, not ${value}`,
        'Numbers above 2^53 - 1 have lost their low bits: pass a BigInt or a string of digits.');
    }
    return BigInt(value);
  }
  throw new ShardidError('22023', `a ${what} must be a BigInt or a string of digits, not ${typeof value}`);
}

function clip(s) {
  return s.length > 64 ? `${s.slice(0, 64)}...` : s;
}

function positive(id, scheme) {
  if (id <= 0n) {
    throw new ShardidError('22003', `${scheme} id ${id} is out of range: ${scheme} ids are positive`);
  }
  if (id > INT64_MAX) {
    throw new ShardidError('22003', `value ${id} is out of range for type bigint`);
  }
}

// --- time ---------------------------------------------------------------

function floorDiv(a, b) {
  const q = a / b;
  return (a % b !== 0n && (a < 0n) !== (b < 0n)) ? q - 1n : q;
}
function floorMod(a, b) {
  return a - floorDiv(a, b) * b;
}

function checkTimestamptz(ms) {
  if (ms < TIMESTAMPTZ_MIN_MS || ms >= TIMESTAMPTZ_END_MS) {
    throw new ShardidError('22008', 'timestamp out of range',
      `${ms} ms after the Unix epoch is beyond the range of timestamp with time zone.`);
  }
  return ms;
}

/**
 * ISO 8601 in UTC ending in Z for a Unix time in milliseconds (BigInt):
 * with milliseconds, or whole seconds when `precision` is 's'. Years
 * outside 0000-9999 are written with a sign and six digits, as
 * Date.prototype.toISOString writes them.
 */
export function isoString(unixMs, precision = 'ms') {
  const ms = BigInt(unixMs);
  const days = Number(floorDiv(ms, MS_PER_DAY));
  const inDay = Number(floorMod(ms, MS_PER_DAY));
  // Days to a civil date (H. Hinnant's algorithm, proleptic Gregorian).
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (m <= 2 ? 1 : 0);
  const year = y >= 0 && y <= 9999 ? String(y).padStart(4, '0')
    : (y < 0 ? '-' : '+') + String(Math.abs(y)).padStart(6, '0');
  const two = (n) => String(n).padStart(2, '0');
  const hh = Math.floor(inDay / 3600000);
  const mi = Math.floor(inDay / 60000) % 60;
  const ss = Math.floor(inDay / 1000) % 60;
  const frac = precision === 's' ? '' : `.${String(inDay % 1000).padStart(3, '0')}`;
  return `${year}-${two(m)}-${two(d)}T${two(hh)}:${two(mi)}:${two(ss)}${frac}Z`;
}

// A Date for a Unix time in ms (a Number or a BigInt), where JavaScript's
// Date reaches (year 275760).
function dateOf(unixMs) {
  if (typeof unixMs === 'number') return new Date(unixMs);  // within 2^53: always in range
  if (unixMs > 8640000000000000n || unixMs < -8640000000000000n) {
    throw new ShardidError('22008', 'timestamp out of range for a JavaScript Date',
      `${unixMs} ms after the Unix epoch is beyond Date's range; decodeToJson() and the command line give it as text.`);
  }
  return new Date(Number(unixMs));
}

/**
 * A time as Unix milliseconds (BigInt): a Date, a BigInt or safe Number of
 * milliseconds, or ISO 8601 text with a time zone ("Z" or an offset).
 */
export function toUnixMs(value, what = 'time') {
  if (value instanceof Date) {
    const t = value.getTime();
    if (Number.isNaN(t)) throw new ShardidError('22007', `${what} is an invalid Date`);
    return BigInt(t);
  }
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number') return toBigInt(value, what);
  if (typeof value === 'string') return parseTimestamp(value, what);
  throw new ShardidError('22023', `${what} must be a Date, ISO 8601 text or milliseconds, not ${typeof value}`);
}

// ISO 8601 / PostgreSQL JSON timestamps: 2020-01-01T00:00:00+00:00,
// 2010-11-04 01:42:54.657Z, with a zone always; to the millisecond
// (finer digits must be zero).
const TIMESTAMP_RE = /^([+-]?\d{4,6})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)$/;

function parseTimestamp(text, what) {
  const m = TIMESTAMP_RE.exec(text.trim());
  if (!m) {
    throw new ShardidError('22007', `invalid input syntax for ${what}: "${clip(text)}"`,
      'Give ISO 8601 with a time zone, such as 2026-12-01T12:00:00Z or 2026-12-01T12:00:00+01:00.');
  }
  const [, ys, mos, ds, hs, mis, ss = '0', fs = '', zone] = m;
  const y = Number(ys), mo = Number(mos), d = Number(ds), h = Number(hs), mi = Number(mis), s = Number(ss);
  const dim = [31, (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  if (mo < 1 || mo > 12 || d < 1 || d > dim[mo - 1] || h > 23 || mi > 59 || s > 59) {
    throw new ShardidError('22008', `date/time field value out of range: "${clip(text)}"`);
  }
  if (fs.length > 3 && /[^0]/.test(fs.slice(3))) {
    throw new ShardidError('22023', `${what} "${clip(text)}" is finer than a millisecond`);
  }
  let offsetS = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const digits = zone.slice(1).replace(/:/g, '');
    offsetS = (Number(digits.slice(0, 2)) * 3600 + Number(digits.slice(2, 4) || 0) * 60 + Number(digits.slice(4, 6) || 0)) *
      (zone[0] === '-' ? -1 : 1);
  }
  // Days from the civil date (the inverse of isoString's).
  const yy = mo <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (mo > 2 ? mo - 3 : mo + 9) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  const days = era * 146097 + doe - 719468;
  const ms = BigInt(days) * MS_PER_DAY + BigInt(((h * 60 + mi) * 60 + s - offsetS) * 1000) +
    BigInt(Number((fs + '000').slice(0, 3)));
  return ms;
}

// --- layouts ------------------------------------------------------------

/**
 * A layout: "time | shard | sequence" in time_bits, shard_bits and
 * sequence_bits, the time counted in units of unitMs since epochMs.
 */
function checkedLayout(name, epochMs, unitMs, timeBits, shardBits, sequenceBits) {
  for (const [k, b] of [['time_bits', timeBits], ['shard_bits', shardBits], ['sequence_bits', sequenceBits]]) {
    if (!Number.isInteger(b) || b < 0 || b > 63) {
      throw new ShardidError('22023', `bit widths must be between 0 and 63, not ${b} (${k})`);
    }
  }
  if (unitMs < 1n) throw new ShardidError('22023', `time unit of layout "${name}" must be at least 1 ms`);
  if (timeBits < 1 || sequenceBits < 1) {
    throw new ShardidError('22023', `layout "${name}" needs at least 1 time bit and 1 sequence bit`);
  }
  const total = timeBits + shardBits + sequenceBits;
  if (total > 63) {
    throw new ShardidError('22023', `layout "${name}" has ${total} bits, more than the 63 of a positive bigint`);
  }
  if (epochMs < 0n) throw new ShardidError('22023', `epoch of layout "${name}" is before 1970`);
  const lastTick = (1n << BigInt(timeBits)) - 1n;
  if (lastTick > (INT64_MAX - epochMs) / unitMs) {
    throw new ShardidError('22023', `layout "${name}" spans more time than a bigint of milliseconds`);
  }
  return Object.freeze({ name, epochMs, unitMs, timeBits, shardBits, sequenceBits });
}

export function layout({ name = 'layout', epochMs, unitMs = 1n, timeBits, shardBits, sequenceBits }) {
  return checkedLayout(name, toBigInt(epochMs, 'epoch'), toBigInt(unitMs, 'time unit'), timeBits, shardBits, sequenceBits);
}

// The built-in layouts (shardid_layouts' rows with builtin = true).
export const PRESETS = Object.freeze({
  snowflake: checkedLayout('snowflake', 1577836800000n, 1n, 41, 10, 12),
  twitter: checkedLayout('twitter', 1288834974657n, 1n, 41, 10, 12),
  icicle: checkedLayout('icicle', 1455788600316n, 1n, 41, 10, 12),
  discord: checkedLayout('discord', 1420070400000n, 1n, 41, 10, 12),
  instagram: checkedLayout('instagram', 1314220021721n, 1n, 40, 13, 10),
});

// An interval as PostgreSQL prints it, in milliseconds (BigInt), for a
// layout's time_unit: IntervalStyle postgres (the default: "00:00:00.001",
// "1 day 02:00:00"), sql_standard ("1 2:00:00") or iso_8601 ("PT0.001S").
export function parseInterval(text) {
  const t = String(text).trim();
  const bad = (why) => new ShardidError('22023', `time_unit "${clip(t)}" ${why}`,
    'Give the interval as PostgreSQL prints it with IntervalStyle postgres (the default), sql_standard or iso_8601.');
  const usOf = (sign, h, mi, s, frac) => {
    const f = (frac || '').padEnd(6, '0');
    if (f.length > 6) throw bad('is finer than a microsecond');
    return sign * ((BigInt(h) * 3600n + BigInt(mi) * 60n + BigInt(s)) * 1000000n + BigInt(f));
  };
  let us = null;
  let m;
  if ((m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d+))?S)?)?$/.exec(t)) && t !== 'P' && !t.endsWith('T')) {
    us = BigInt(m[1] || 0) * 86400000000n + usOf(1n, m[2] || 0, m[3] || 0, m[4] || 0, m[5]);
  } else if (/\b(years?|mons?|months?)\b/.test(t) || /^P.*[YW]/.test(t) || /^P(?:\d+Y)?\d+M/.test(t)) {
    throw bad('must not contain months or years');
  } else if ((m = /^(?:(-?\d+) days?)?\s*(?:(-)?(\d+):(\d{2}):(\d{2})(?:\.(\d+))?)?$/.exec(t)) && t !== '') {
    us = BigInt(m[1] || 0) * 86400000000n + usOf(m[2] ? -1n : 1n, m[3] || 0, m[4] || 0, m[5] || 0, m[6]);
  } else if ((m = /^(?:(\d+) )?(\d+):(\d{2}):(\d{2})(?:\.(\d+))?$/.exec(t))) {
    us = BigInt(m[1] || 0) * 86400000000n + usOf(1n, m[2], m[3], m[4], m[5]);
  }
  if (us === null) throw bad('is not an interval shardid can read');
  if (us < 1000n || us % 1000n !== 0n) throw bad('must be a whole number of milliseconds, at least 1 ms');
  return us / 1000n;
}

/**
 * A layout from a row of shardid_layouts as JSON (SELECT row_to_json(l)
 * FROM shardid_layouts l WHERE name = ...), as text or parsed; or the name
 * of a built-in layout. Every field present is checked against the others.
 */
export function layoutFromJson(json) {
  if (typeof json === 'string' && Object.prototype.hasOwnProperty.call(PRESETS, json)) return PRESETS[json];
  let row = json;
  if (typeof json === 'string') {
    try {
      row = JSON.parse(json);
    } catch (e) {
      throw new ShardidError('22P02', `invalid layout JSON: ${e.message}`,
        'Give a row of shardid_layouts as SELECT row_to_json(l) FROM shardid_layouts l WHERE name = ... prints it.');
    }
  }
  if (row === null || typeof row !== 'object' || Array.isArray(row)) {
    throw new ShardidError('22023', 'a layout must be a JSON object: a row of shardid_layouts');
  }
  for (const k of ['epoch', 'time_unit', 'time_bits', 'shard_bits', 'sequence_bits']) {
    if (!(k in row)) throw new ShardidError('22023', `the layout JSON has no "${k}"`);
  }
  const name = row.name === undefined ? 'layout' : row.name;
  if (typeof name !== 'string') throw new ShardidError('22023', 'the layout\'s "name" must be text');
  if (typeof row.epoch !== 'string') throw new ShardidError('22023', 'the layout\'s "epoch" must be a timestamp as text');
  const epochMs = parseTimestamp(row.epoch, 'epoch');  // refuses digits finer than a millisecond
  const l = checkedLayout(name, epochMs, parseInterval(row.time_unit), row.time_bits, row.shard_bits, row.sequence_bits);
  const derived = {
    total_bits: l.timeBits + l.shardBits + l.sequenceBits,
    javascript_safe: l.timeBits + l.shardBits + l.sequenceBits <= 53,
    shards: 1n << BigInt(l.shardBits),
    ids_per_tick: 1n << BigInt(l.sequenceBits),
  };
  for (const [k, want] of Object.entries(derived)) {
    if (row[k] === undefined || row[k] === null) continue;
    const got = typeof want === 'bigint' && (typeof row[k] === 'number' || typeof row[k] === 'string') ? BigInt(row[k]) : row[k];
    if (got !== want) {
      throw new ShardidError('22023', `the layout JSON's "${k}" is ${row[k]}, but its widths give ${want}`,
        'The row was changed after PostgreSQL printed it: give it as printed.');
    }
  }
  return l;
}

// What decoding a layout's IDs needs, worked out once per layout: shifts
// and masks, and whether every field and time fits a Number exactly (then
// the arithmetic after the first split is on Numbers: ten times faster).
const compiled = new WeakMap();
function compile(l) {
  let c = compiled.get(l);
  if (c === undefined) {
    const low = l.shardBits + l.sequenceBits;
    const lastMs = l.epochMs + ((1n << BigInt(l.timeBits)) - 1n) * l.unitMs;
    c = {
      total: BigInt(l.timeBits + low),
      low: BigInt(low),
      lowMask: (1n << BigInt(low)) - 1n,
      seqBits: BigInt(l.sequenceBits),
      seqMask: (1n << BigInt(l.sequenceBits)) - 1n,
      shardMask: (1n << BigInt(l.shardBits)) - 1n,
      // Numbers: the low fields within 2^53 and each within integer (the
      // SQL columns' type), times within 2^53 ms (and so within
      // timestamptz's and Date's ranges).
      fast: low <= 53 && l.shardBits <= 31 && l.sequenceBits <= 31 && lastMs < 1n << 53n && lastMs <= 8640000000000000n,
      seqDiv: 2 ** l.sequenceBits,
      epoch: Number(l.epochMs),
      unit: Number(l.unitMs),
    };
    compiled.set(l, c);
  }
  return c;
}

// [Unix ms (a Number when the layout is fast, else a BigInt), shard, sequence].
function layoutFields(l, id) {
  if (id <= 0n || id > INT64_MAX) positive(id, l.name);
  const c = compile(l);
  if (c.total < 63n && (id >> c.total) !== 0n) {
    throw new ShardidError('22023', `${id} is not a ${l.name} id`, `It has bits set above the layout's ${c.total} bits.`);
  }
  if (c.fast) {
    const low = Number(id & c.lowMask);
    const sequence = low % c.seqDiv;
    return [c.epoch + Number(id >> c.low) * c.unit, (low - sequence) / c.seqDiv, sequence];
  }
  const shard = (id >> c.seqBits) & c.shardMask;
  const sequence = id & c.seqMask;
  const unixMs = checkTimestamptz(l.epochMs + (id >> c.low) * l.unitMs);
  if (shard > INT32_MAX || sequence > INT32_MAX) {
    const [what, v] = shard > INT32_MAX ? ['shard', shard] : ['sequence', sequence];
    throw new ShardidError('22003', `${what} ${v} of ${l.name} id ${id} is out of range for type integer`);
  }
  return [unixMs, Number(shard), Number(sequence)];
}

// --- the schemes: raw fields (created_at as Unix ms, a BigInt) ----------

const TRACE_PERIOD_S = 1n << 25n;
const NEAR_LIMIT_S = 1n << 50n;

// The reference second of a TraceId's `near` (a Number: within +-2^50 s).
function nearSecond(near) {
  if (near instanceof Date) {
    const t = near.getTime();
    if (Number.isNaN(t)) throw new ShardidError('22007', 'near is an invalid Date');
    return Math.floor(t / 1000);
  }
  const s = floorDiv(near === undefined ? BigInt(Date.now()) : toUnixMs(near, 'near'), 1000n);
  if (s > NEAR_LIMIT_S || s < -NEAR_LIMIT_S) {
    throw new ShardidError('22008', 'reference time is out of range for decoding a trace id');
  }
  return Number(s);
}

// [Unix ms (a Number), node_no, counter].
function traceRaw(idIn, near) {
  const id = toBigInt(idIn);
  if (id <= 0n) throw new ShardidError('22003', `trace id ${id} is out of range: trace ids are positive`);
  if (id > INT64_MAX) positive(id, 'trace');
  const counter = Number(id & 0x3FFFFFn);
  if (counter === 0) {
    throw new ShardidError('22023', `${id} is not a trace id`, 'Its counter field is 0; trace id counters start at 1.');
  }
  const hi = Number(id >> 22n);  // 41 bits: time | node_no
  const nodeNo = hi % 65536;
  const tick = (hi - nodeNo) / 65536;
  const limit = nearSecond(near) + 86400;
  const unixS = limit - (((limit - tick) % 33554432) + 33554432) % 33554432;
  // Near is within 2^50 s: the product is exact where timestamptz reaches.
  if (unixS * 1000 < Number(TIMESTAMPTZ_MIN_MS) || unixS * 1000 >= Number(TIMESTAMPTZ_END_MS)) checkTimestamptz(BigInt(unixS) * 1000n);
  return [unixS * 1000, nodeNo, counter];
}

const DECIMAL_FIELD = 100000n;
const DECIMAL_COUNTER_MAX = 922337202n;

function decimalRaw(idIn) {
  const id = toBigInt(idIn);
  positive(id, 'decimal');
  const counter = id / (DECIMAL_FIELD * DECIMAL_FIELD);
  if (counter === 0n || counter > DECIMAL_COUNTER_MAX) {
    throw new ShardidError('22023', `${id} is not a decimal id`,
      `Its counter (the digits above the last ten) is ${counter}; decimal id counters run from 1 to ${DECIMAL_COUNTER_MAX}.`);
  }
  return { counter: Number(counter), generator_id: Number((id / DECIMAL_FIELD) % DECIMAL_FIELD), launch_id: Number(id % DECIMAL_FIELD) };
}

// Java's Long.reverse, on two 32-bit halves (Numbers: a loop of BigInt
// shifts is ten times slower).
function reverse32(x) {
  x = ((x >>> 1) & 0x55555555) | ((x & 0x55555555) << 1);
  x = ((x >>> 2) & 0x33333333) | ((x & 0x33333333) << 2);
  x = ((x >>> 4) & 0x0F0F0F0F) | ((x & 0x0F0F0F0F) << 4);
  x = ((x >>> 8) & 0x00FF00FF) | ((x & 0x00FF00FF) << 8);
  return ((x >>> 16) | (x << 16)) >>> 0;
}
/** The 8 bytes of an eight-byte ID: a Uint8Array/Buffer of 8, or 16 hex digits (with or without \x). */
export function eightbyteWord(id) {
  if (id instanceof Uint8Array) {
    if (id.length !== 8) throw new ShardidError('22023', `an eight-byte id must be exactly 8 bytes, not ${id.length}`);
    let w = 0n;
    for (const b of id) w = (w << 8n) | BigInt(b);
    return w;
  }
  if (typeof id !== 'string') throw new ShardidError('22023', 'an eight-byte id must be bytes or 16 hex digits');
  const hex = id.startsWith('\\x') ? id.slice(2) : id;
  if (!/^[0-9a-fA-F]*$/.test(hex)) {
    throw new ShardidError('22023', `invalid hexadecimal eight-byte id: "${clip(id)}"`, 'Give its 8 bytes as 16 hex digits.');
  }
  if (hex.length !== 16) {
    throw new ShardidError('22023', `an eight-byte id must be exactly 8 bytes, not ${hex.length / 2}`);
  }
  return BigInt(`0x${hex}`);
}

// [Unix ms, sequence, generator_id, cluster_id, mode].
function eightRaw(id) {
  const w = eightbyteWord(id);
  const hi = Number(w >> 32n);
  const lo = Number(w & 0xFFFFFFFFn);
  const spread = (lo & 0x1000) === 0;
  // T: the top 42 bits (hi, and lo's top 10 bits).
  const unixMs = spread
    ? reverse32(lo & 0xFFC00000) * 4294967296 + reverse32(hi)  // Long.reverse of T, bits below 22 zero
    : hi * 1024 + (lo >>> 22);
  return [unixMs, (lo >>> 16) & 63, (((lo >>> 13) & 7) << 8) | ((lo >>> 4) & 0xFF), lo & 15, spread ? 'spread' : 'time_sequential'];
}

// UUID text as PostgreSQL's uuid input reads it: 32 hex digits, a hyphen
// allowed after any group of four but the last, the whole optionally in
// braces.
function uuidHex(text) {
  let i = 0;
  const braces = text[0] === '{';
  if (braces) i++;
  let hex = '';
  for (let n = 0; n < 16; n++) {
    const pair = text.slice(i, i + 2);
    if (!/^[0-9a-fA-F]{2}$/.test(pair)) return null;
    hex += pair;
    i += 2;
    if (text[i] === '-' && n % 2 === 1 && n < 15) i++;
  }
  if (braces) {
    if (text[i] !== '}') return null;
    i++;
  }
  return i === text.length ? hex : null;
}

// The value of each hex digit's character code, -1 for any other.
const HEX_VALUE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  HEX_VALUE['0123456789abcdef'.charCodeAt(i)] = i;
  HEX_VALUE['0123456789ABCDEF'.charCodeAt(i)] = i;
}
// The canonical form (8-4-4-4-12), read in place: its 32 hex digits as
// four 32-bit words (u[0] the first eight digits), true when it is one.
function uuidCanonical(text, u) {
  if (text.length !== 36 || text.charCodeAt(8) !== 45 || text.charCodeAt(13) !== 45 ||
      text.charCodeAt(18) !== 45 || text.charCodeAt(23) !== 45) return false;
  let word = 0;
  let digits = 0;
  for (let i = 0; i < 36; i++) {
    if (i === 8 || i === 13 || i === 18 || i === 23) continue;
    const c = text.charCodeAt(i);
    const d = c < 128 ? HEX_VALUE[c] : -1;
    if (d < 0) return false;
    word = word * 16 + d;
    if (++digits % 8 === 0) {
      u[(digits >> 3) - 1] = word;
      word = 0;
    }
  }
  return true;
}
const uuidWords = [0, 0, 0, 0];

// [Unix ms, counter, shard].
function uuidRaw(id, shardBits = 0) {
  if (!Number.isInteger(shardBits) || shardBits < 0 || shardBits > 32) {
    throw new ShardidError('22023', `shard width ${shardBits} is out of range`, 'A UUIDv7 shard field is 0 to 32 bits wide.');
  }
  // The canonical form read in place, any other through uuidHex.
  const u = uuidWords;
  if (typeof id !== 'string' || !uuidCanonical(id, u)) {
    const hex = typeof id === 'string' ? uuidHex(id) : null;
    if (hex === null) {
      throw new ShardidError('22P02', `invalid input syntax for type uuid: "${clip(String(id))}"`);
    }
    for (let w = 0; w < 4; w++) u[w] = parseInt(hex.slice(8 * w, 8 * w + 8), 16);
  }
  const version = (u[1] >>> 12) & 15;
  const variant = u[2] >>> 30;
  if (version !== 7) {
    throw new ShardidError('22023', 'uuid is not a UUIDv7', `Its version is ${version}; a UUIDv7 has version 7.`);
  }
  if (variant !== 2) {
    throw new ShardidError('22023', 'uuid is not a UUIDv7',
      `Its variant bits are ${variant >> 1}${variant & 1}; a UUIDv7 has the RFC 9562 variant, binary 10.`);
  }
  // unix_ts_ms: the first 48 bits; rand_a: the 12 after the version;
  // rand_b's top 32 bits: the third word less the variant's 2 bits, and
  // the fourth word's top 2 bits.
  const counter = u[1] & 0xFFF;
  const unixMs = u[0] * 65536 + (u[1] >>> 16);
  if (shardBits === 0) return [unixMs, counter, 0];
  const top = (u[2] & 0x3FFFFFFF) * 4 + (u[3] >>> 30);
  return [unixMs, counter, Math.floor(top / 2 ** (32 - shardBits))];
}

// --- the public decoders ------------------------------------------------

/** trace_id_decode(id, near): created_at, node_no, counter. */
export function traceIdDecode(id, near = new Date()) {
  const f = traceRaw(id, near);
  return { created_at: dateOf(f[0]), node_no: f[1], counter: f[2] };
}
/** decimal_id_decode(id): counter, generator_id, launch_id. */
export function decimalIdDecode(id) {
  return decimalRaw(id);
}
/** id_decode(layout, id): created_at, shard, sequence. */
export function idDecode(l, id) {
  const f = layoutFields(typeof l === 'string' || !('epochMs' in l) ? layoutFromJson(l) : l, toBigInt(id));
  return { created_at: dateOf(f[0]), shard: f[1], sequence: f[2] };
}
/** snowflake_decode(id). */
export function snowflakeDecode(id) {
  return idDecode(PRESETS.snowflake, id);
}
/** instagram_decode(id). */
export function instagramDecode(id) {
  return idDecode(PRESETS.instagram, id);
}
/** eightbyte_id_decode(id): created_at, sequence, generator_id, cluster_id, mode. */
export function eightbyteIdDecode(id) {
  const f = eightRaw(id);
  return { created_at: dateOf(f[0]), sequence: f[1], generator_id: f[2], cluster_id: f[3], mode: f[4] };
}
/** uuidv7_decode(id, shard_bits): created_at, counter, shard. */
export function uuidv7Decode(id, shardBits = 0) {
  const f = uuidRaw(id, shardBits);
  return { created_at: dateOf(f[0]), counter: f[1], shard: f[2] };
}

// --- base62 and Crockford base32 ----------------------------------------

function alphabet(name, digits, aliases) {
  const valueOf = new Map();
  [...digits].forEach((c, i) => valueOf.set(c, i));
  for (let i = 0; i + 1 < aliases.length; i += 2) valueOf.set(aliases[i], valueOf.get(aliases[i + 1]));
  return { name, digits, base: BigInt(digits.length), valueOf };
}
const BASE62 = alphabet('base62', '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz', '');
const BASE32 = alphabet('base32', '0123456789ABCDEFGHJKMNPQRSTVWXYZ',
  'aAbBcCdDeEfFgGhHjJkKmMnNpPqQrRsStTvVwWxXyYzZI1i1L1l1O0o0');

function encode(a, valueIn, width) {
  const value = toBigInt(valueIn, 'value');
  if (value < 0n) throw new ShardidError('22003', `${a.name} cannot encode negative value ${value}`);
  if (!Number.isInteger(width) || width < 0 || width > 64) {
    throw new ShardidError('22023', `width must be between 0 and 64, not ${width}`);
  }
  let v = value;
  let out = '';
  do {
    out = a.digits[Number(v % a.base)] + out;
    v /= a.base;
  } while (v !== 0n);
  return out.padStart(width, a.digits[0]);
}

function decode(a, text) {
  if (typeof text !== 'string') throw new ShardidError('22023', `${a.name} text must be a string`);
  if (text.length === 0) throw new ShardidError('22P02', `invalid ${a.name} input: empty string`);
  let value = 0n;
  let pos = 0;
  for (const c of text) {
    pos++;
    const d = a.valueOf.get(c);
    if (d === undefined) {
      const code = c.codePointAt(0);
      const shown = code >= 0x20 && code < 0x7f ? `"${c}"` : `(U+${code.toString(16).toUpperCase().padStart(4, '0')})`;
      throw new ShardidError('22P02', `invalid ${a.name} character ${shown} at position ${pos}`,
        `The ${a.name} digits are ${a.digits}.`);
    }
    value = value * a.base + BigInt(d);
    if (value > INT64_MAX) throw new ShardidError('22003', `${a.name} value is out of range: above ${INT64_MAX}`);
  }
  return value;
}

/** base62_encode(value, width): 0-9A-Za-z, left-padded with 0. */
export const base62Encode = (value, width = 0) => encode(BASE62, value, width);
/** base62_decode(text): a BigInt. */
export const base62Decode = (text) => decode(BASE62, text);
/** base32_encode(value, width): Crockford's alphabet, left-padded with 0. */
export const base32Encode = (value, width = 0) => encode(BASE32, value, width);
/** base32_decode(text): a BigInt; case-insensitive, I and L read as 1, O as 0. */
export const base32Decode = (text) => decode(BASE32, text);

// --- one line of the command line ---------------------------------------

export const SCHEMES = Object.freeze(['trace', 'decimal', 'snowflake', 'instagram', 'eightbyte', 'uuidv7', 'layout']);

/**
 * The SQL function's OUT columns for one ID given as text, in their order,
 * created_at as ISO 8601 text in UTC (whole seconds for TraceIds,
 * milliseconds otherwise): what the command line prints. `options`: near
 * (trace), shardBits (uuidv7), layout (layout: a shardid_layouts row).
 */
export function decodeText(scheme, text, options = {}) {
  switch (scheme) {
    case 'trace': {
      const f = traceRaw(text, options.near);
      return { created_at: isoString(f[0], 's'), node_no: f[1], counter: f[2] };
    }
    case 'decimal': return decimalRaw(text);
    case 'snowflake':
    case 'instagram':
    case 'layout': {
      let l = PRESETS[scheme];
      if (scheme === 'layout') {
        if (options.layout === undefined) throw new ShardidError('22023', 'the layout scheme needs a layout (--layout)');
        l = typeof options.layout === 'object' && 'epochMs' in options.layout ? options.layout : layoutFromJson(options.layout);
      }
      const f = layoutFields(l, toBigInt(text));
      return { created_at: isoString(f[0]), shard: f[1], sequence: f[2] };
    }
    case 'eightbyte': {
      const f = eightRaw(text);
      return { created_at: isoString(f[0]), sequence: f[1], generator_id: f[2], cluster_id: f[3], mode: f[4] };
    }
    case 'uuidv7': {
      const f = uuidRaw(text, options.shardBits ?? 0);
      return { created_at: isoString(f[0]), counter: f[1], shard: f[2] };
    }
    default:
      throw new ShardidError('22023', `unknown scheme "${scheme}"`, `The schemes are ${SCHEMES.join(', ')}.`);
  }
}
