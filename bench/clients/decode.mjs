// Decodes per second of shardid's JavaScript library (bench/clients.sh):
// each scheme's decoder over N IDs given as text (as they arrive from JSON
// or a CSV), best of 3 runs, beside the usual hand-written decode through a
// Number (fast and wrong above 2^53: its figure is the peer, not a goal).
// Each line gives the rate in real time and per second of this process's
// CPU time (the figure a loaded machine changes least:
// test/clients/compare.sh checks it).
//   node bench/clients/decode.mjs [N]
import * as s from '../../clients/js/src/index.js';

const N = Number(process.argv[2] ?? 1000000);
const rnd = (bits) => BigInt(Math.floor(Math.random() * 2 ** Math.min(bits, 30))) << BigInt(Math.max(0, bits - 30));
const now = BigInt(Date.now());
const snowflakes = Array.from({ length: N }, () => String(((now - 1577836800000n - rnd(30)) << 22n) | rnd(22)));
const traces = Array.from({ length: N }, () => String(((now / 1000n & 0x1FFFFFFn) << 38n) | (rnd(16) << 22n) | (rnd(22) | 1n)));
const decimals = Array.from({ length: N }, () => String(1n + rnd(29)) + String(rnd(16) % 100000n).padStart(5, '0') + '00065');
const eights = Array.from({ length: N }, () => (rnd(63) | 1n).toString(16).padStart(16, '0'));
const uuids = Array.from({ length: N }, () => {
  const h = ((now << 16n) | 0x7000n | rnd(12)).toString(16).padStart(16, '0') + ((2n << 62n) | rnd(62)).toString(16).padStart(16, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
});
const layout = s.layoutFromJson('{"name":"js_orders","epoch":"2024-01-01T00:00:00+00:00","time_unit":"00:00:00.001","time_bits":41,"shard_bits":4,"sequence_bits":8}');
const safe = Array.from({ length: N }, () => String(((now - 1704067200000n) << 12n) | rnd(12)));

function rate(fn, inputs) {
  let best = Infinity;
  let cpu = Infinity;
  let sink = 0;
  for (let r = 0; r < 3; r++) {
    const t0 = process.hrtime.bigint();
    const c0 = process.cpuUsage();
    for (let i = 0; i < inputs.length; i++) sink += fn(inputs[i]).created_at ? 1 : 0;
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
    const c = process.cpuUsage(c0);
    cpu = Math.min(cpu, (c.user + c.system) / 1e6);
  }
  if (sink < 0) console.log(sink);
  return [inputs.length / best, inputs.length / Math.max(cpu, 1e-9)];
}
const near = new Date();
// The peer: what a page does without a library (wrong above 2^53).
const naive = (t) => {
  const n = Number(t);
  return { created_at: new Date(Math.floor(n / 4194304) + 1577836800000), shard: Math.floor(n / 4096) % 1024, sequence: n % 4096 };
};
const rows = [
  ['snowflake_decode', rate(s.snowflakeDecode, snowflakes)],
  ['trace_id_decode', rate((t) => s.traceIdDecode(t, near), traces)],
  ['decimal_id_decode', rate((t) => ({ created_at: 1, ...s.decimalIdDecode(t) }), decimals)],
  ['eightbyte_id_decode', rate(s.eightbyteIdDecode, eights)],
  ['uuidv7_decode', rate((t) => s.uuidv7Decode(t, 8), uuids)],
  ['id_decode (a 53-bit layout)', rate((t) => s.idDecode(layout, t), safe)],
];
const [peer, peerCpu] = rate(naive, snowflakes);
for (const [name, [r, c]] of rows) {
  console.log(`js ${name} ${Math.round(r)} per_s ${(r / peer).toFixed(2)} x_number_decode ${Math.round(c)} per_cpu_s`);
}
console.log(`js number_decode(peer) ${Math.round(peer)} per_s ${Math.round(peerCpu)} per_cpu_s`);
