// Unit tests of the JavaScript decoders (node --test). The comparison with
// the extension itself, ID by ID, is test/clients/compare.sh.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  PRESETS, ShardidError, base32Decode, base32Encode, base62Decode, base62Encode, decimalIdDecode, decodeText,
  eightbyteIdDecode, idDecode, instagramDecode, isoString, layoutFromJson, parseInterval, snowflakeDecode, toBigInt,
  traceIdDecode, uuidv7Decode,
} from '../src/index.js';

const refused = (fn, code) => assert.throws(fn, (e) => e instanceof ShardidError && e.code === code);

// Every preset's row as PostgreSQL 15 prints it (SELECT row_to_json(l) FROM
// shardid_layouts l, TimeZone UTC).
const PRESET_ROWS = [
  '{"name":"snowflake","builtin":true,"epoch":"2020-01-01T00:00:00+00:00","time_unit":"00:00:00.001","time_bits":41,"shard_bits":10,"sequence_bits":12,"total_bits":63,"javascript_safe":false,"shards":1024,"ids_per_tick":4096,"ends_at":"2089-09-06T15:47:35.552+00:00"}',
  '{"name":"twitter","builtin":true,"epoch":"2010-11-04T01:42:54.657+00:00","time_unit":"00:00:00.001","time_bits":41,"shard_bits":10,"sequence_bits":12,"total_bits":63,"javascript_safe":false,"shards":1024,"ids_per_tick":4096,"ends_at":"2080-07-10T17:30:30.209+00:00"}',
  '{"name":"icicle","builtin":true,"epoch":"2016-02-18T09:43:20.316+00:00","time_unit":"00:00:00.001","time_bits":41,"shard_bits":10,"sequence_bits":12,"total_bits":63,"javascript_safe":false,"shards":1024,"ids_per_tick":4096,"ends_at":"2085-10-25T01:30:55.868+00:00"}',
  '{"name":"discord","builtin":true,"epoch":"2015-01-01T00:00:00+00:00","time_unit":"00:00:00.001","time_bits":41,"shard_bits":10,"sequence_bits":12,"total_bits":63,"javascript_safe":false,"shards":1024,"ids_per_tick":4096,"ends_at":"2084-09-06T15:47:35.552+00:00"}',
  '{"name":"instagram","builtin":true,"epoch":"2011-08-24T21:07:01.721+00:00","time_unit":"00:00:00.001","time_bits":40,"shard_bits":13,"sequence_bits":10,"total_bits":63,"javascript_safe":false,"shards":8192,"ids_per_tick":1024,"ends_at":"2046-06-27T17:00:49.497+00:00"}',
];

test('the layout JSON of every preset gives the preset', () => {
  for (const row of PRESET_ROWS) {
    const name = JSON.parse(row).name;
    assert.deepEqual(layoutFromJson(row), PRESETS[name]);
    assert.deepEqual(layoutFromJson(JSON.parse(row)), PRESETS[name]);
    assert.deepEqual(layoutFromJson(name), PRESETS[name]);
  }
});

test('layout JSON in other time zones and interval styles', () => {
  const base = JSON.parse(PRESET_ROWS[1]);
  // TimeZone 'Asia/Kolkata', and IntervalStyle iso_8601 / sql_standard.
  const kolkata = { ...base, epoch: '2010-11-04T07:12:54.657+05:30' };
  assert.deepEqual(layoutFromJson(kolkata), PRESETS.twitter);
  assert.deepEqual(layoutFromJson({ ...base, epoch: '2010-11-03T18:42:54.657-07:00' }), PRESETS.twitter);
  assert.deepEqual(layoutFromJson({ ...base, time_unit: 'PT0.001S' }), PRESETS.twitter);
  assert.deepEqual(layoutFromJson({ ...base, time_unit: '0:00:00.001' }), PRESETS.twitter);
  assert.equal(parseInterval('1 day'), 86400000n);
  assert.equal(parseInterval('1 day 02:00:00'), 93600000n);
  assert.equal(parseInterval('P1DT2H'), 93600000n);
  assert.equal(parseInterval('1 2:00:00'), 93600000n);
  assert.equal(parseInterval('00:00:01'), 1000n);
});

test('malformed or inconsistent layout JSON is refused', () => {
  const base = JSON.parse(PRESET_ROWS[0]);
  refused(() => layoutFromJson('{"name":'), '22P02');
  refused(() => layoutFromJson('[1]'), '22023');
  refused(() => layoutFromJson({ ...base, shards: 2048 }), '22023');
  refused(() => layoutFromJson({ ...base, total_bits: 62 }), '22023');
  refused(() => layoutFromJson({ ...base, javascript_safe: true }), '22023');
  refused(() => layoutFromJson({ ...base, time_bits: 42 }), '22023');  // 64 bits
  refused(() => layoutFromJson({ ...base, time_bits: 41.5 }), '22023');
  refused(() => layoutFromJson({ ...base, sequence_bits: 0, total_bits: undefined, ids_per_tick: undefined }), '22023');
  refused(() => layoutFromJson({ ...base, time_unit: '1 mon' }), '22023');
  refused(() => layoutFromJson({ ...base, time_unit: '00:00:00.0005' }), '22023');
  refused(() => layoutFromJson({ ...base, time_unit: '@ 1 sec' }), '22023');
  refused(() => layoutFromJson({ ...base, epoch: '1969-12-31T23:59:59+00:00' }), '22023');
  refused(() => layoutFromJson({ ...base, epoch: '2020-01-01T00:00:00.0001+00:00' }), '22023');
  refused(() => layoutFromJson({ ...base, epoch: '2020-01-01 00:00:00' }), '22007');  // no zone
  const { epoch, ...noEpoch } = base;
  refused(() => layoutFromJson(noEpoch), '22023');
});

test('JavaScript numbers above 2^53 are refused; BigInt and strings are not', () => {
  const id = 1234567890123456789n;
  refused(() => snowflakeDecode(1234567890123456789), '22023');
  refused(() => snowflakeDecode(2 ** 53), '22023');
  refused(() => snowflakeDecode(1.5), '22023');
  refused(() => base62Encode(2 ** 60), '22023');
  assert.deepEqual(snowflakeDecode(id), snowflakeDecode(String(id)));
  assert.equal(snowflakeDecode(2 ** 53 - 1).sequence, 4095);
  assert.equal(toBigInt(Number.MAX_SAFE_INTEGER), 9007199254740991n);
  // The bug they avoid: the Number is another ID.
  assert.notEqual(BigInt(Number(id)), id);
});

test('wrong input gets the SQLSTATE SQL gives', () => {
  refused(() => snowflakeDecode('12a'), '22P02');
  refused(() => snowflakeDecode(''), '22P02');
  refused(() => snowflakeDecode(' 1 x'), '22P02');
  assert.deepEqual(snowflakeDecode(' +1 '), snowflakeDecode(1n));
  refused(() => snowflakeDecode('9223372036854775808'), '22003');
  refused(() => snowflakeDecode(0n), '22003');
  refused(() => snowflakeDecode(-1n), '22003');
  refused(() => traceIdDecode(1n << 22n), '22023');  // counter 0
  refused(() => decimalIdDecode(9999999999n), '22023');  // counter 0
  refused(() => decimalIdDecode(9223372036854775807n), '22023');  // counter 922337203
  refused(() => idDecode(layoutFromJson({ ...JSON.parse(PRESET_ROWS[0]), time_bits: 30, total_bits: 52, javascript_safe: true }), 1n << 60n), '22023');
  refused(() => eightbyteIdDecode('0123'), '22023');
  refused(() => eightbyteIdDecode('0123456789abcdeg'), '22023');
  refused(() => eightbyteIdDecode(new Uint8Array(7)), '22023');
  refused(() => uuidv7Decode('not a uuid'), '22P02');
  // The canonical shape with one digit that is not hex, first and last.
  refused(() => uuidv7Decode('g1890a5d-ac96-774b-bcce-b302099a8057'), '22P02');
  refused(() => uuidv7Decode('01890a5d-ac96-774b-bcce-b302099a805\u0660'), '22P02');
  refused(() => uuidv7Decode('b3e1c4c8-0f7e-4c39-9d65-3c8e2f2a8d11'), '22023');  // version 4
  refused(() => uuidv7Decode('01890a5d-ac96-774b-ccce-b302099a8057'), '22023');  // variant 11
  refused(() => uuidv7Decode('01890a5d-ac96-774b-bcce-b302099a8057', 33), '22023');
  refused(() => base62Decode('abc!'), '22P02');
  refused(() => base62Decode(''), '22P02');
  refused(() => base62Decode('AzL8n0Y58m8'), '22003');  // 2^63
  refused(() => base32Encode(-1n), '22003');
  refused(() => base32Encode(1n, 65), '22023');
  refused(() => decodeText('nope', '1'), '22023');
  refused(() => decodeText('layout', '1'), '22023');
});

test('known values, as SQL decodes them', () => {
  assert.deepEqual(snowflakeDecode(1234567890123456789n),
    { created_at: new Date('2029-04-29T18:12:02.167Z'), shard: 664, sequence: 277 });
  assert.deepEqual(instagramDecode('1'), { created_at: new Date('2011-08-24T21:07:01.721Z'), shard: 0, sequence: 1 });
  assert.deepEqual(traceIdDecode(7000000000000000001n, '2026-02-01T00:00:00Z'),
    { created_at: new Date('2025-01-13T04:18:03Z'), node_no: 42574, counter: 3932161 });
  assert.deepEqual(decimalIdDecode(14150009200065n), { counter: 1415, generator_id: 92, launch_id: 65 });
  assert.deepEqual(eightbyteIdDecode('\\x0123456789abcdef'),
    { created_at: new Date('2024-09-12T14:28:32.512Z'), sequence: 43, generator_id: 1758, cluster_id: 15, mode: 'spread' });
  assert.deepEqual(uuidv7Decode('01890A5D-AC96-774B-BCCE-B302099A8057', 8),
    { created_at: new Date('2023-06-30T03:34:18.518Z'), counter: 1867, shard: 243 });
  assert.equal(uuidv7Decode('01890a5d-ac96-774b-bcce-b302099a8057', 32).shard, 4080716808);
  assert.equal(uuidv7Decode('{01890A5DAC96774BBCCEB302099A8057}', 32).shard, 4080716808);
  assert.equal(base62Encode(123456789n, 11), '0000008M0kX');
  assert.equal(base62Decode('AzL8n0Y58m7'), 9223372036854775807n);
  assert.equal(base32Decode('ilo'), 1056n);
  assert.equal(base32Encode(9223372036854775807n), '7ZZZZZZZZZZZZ');
});

test('ISO 8601 text: precision and years beyond 9999', () => {
  assert.equal(isoString(0n, 's'), '1970-01-01T00:00:00Z');
  assert.equal(isoString(-1n), '1969-12-31T23:59:59.999Z');
  assert.equal(isoString(253402300800000n), '+010000-01-01T00:00:00.000Z');
  assert.equal(isoString(1709164800000n), '2024-02-29T00:00:00.000Z');
  for (const ms of [0n, 951782400000n, 4102444800123n, 8640000000000000n, -62198755200000n]) {
    assert.equal(isoString(ms), new Date(Number(ms)).toISOString());
  }
  // A tick past Date's range (year 275760) but within timestamptz's: text,
  // never a wrong Date; past timestamptz's (294276): refused as SQL does.
  const far = layoutFromJson({ name: 'far', epoch: '2020-01-01T00:00:00+00:00', time_unit: '1 day', time_bits: 27, shard_bits: 0, sequence_bits: 1 });
  const id = 100500000n << 1n;
  assert.match(decodeText('layout', String(id), { layout: far }).created_at, /^\+277[0-9]{3}-/);
  refused(() => idDecode(far, id), '22008');
  refused(() => decodeText('layout', String(((1n << 27n) - 1n) << 1n), { layout: far }), '22008');
});

test('a field wider than 31 bits above 2^31 - 1 is refused, as id_decode() refuses it', () => {
  const wide = layoutFromJson({ name: 'wide_shard', epoch: '2024-01-01T00:00:00+00:00', time_unit: '00:00:01', time_bits: 30, shard_bits: 32, sequence_bits: 1 });
  assert.equal(idDecode(wide, (5n << 33n) | (2147483647n << 1n) | 1n).shard, 2147483647);
  refused(() => idDecode(wide, (5n << 33n) | (2147483648n << 1n) | 1n), '22003');
  refused(() => decodeText('layout', String((5n << 33n) | (2147483648n << 1n)), { layout: wide }), '22003');
});
