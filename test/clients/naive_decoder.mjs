// The negative control of test/clients/compare.sh: shardid's own command
// line with the bug the libraries exist to avoid, every ID read through a
// JavaScript Number first (JSON.parse, parseInt, Number(text) all do it).
// The comparison must find it wrong in every case.
import { createInterface } from 'node:readline';
import { base32Decode, base32Encode, base62Decode, base62Encode, decodeText, layoutFromJson } from '../../clients/js/src/index.js';

const [verb, scheme, ...rest] = process.argv.slice(2);
const opts = {};
for (let i = 0; i < rest.length; i += 2) opts[rest[i]] = rest[i + 1];
const viaNumber = (t) => (/^\s*[+-]?\d+\s*$/.test(t) ? Number(t).toLocaleString('fullwide', { useGrouping: false }) : t);
const options = { near: opts['--near'], shardBits: Number(opts['--shard-bits'] ?? 0), layout: opts['--layout'] && layoutFromJson(opts['--layout']) };
let n = 0;
let failed = false;
createInterface({ input: process.stdin, crlfDelay: Infinity }).on('line', (line) => {
  n++;
  try {
    const t = viaNumber(line);
    if (verb === 'encode') console.log((scheme === 'base62' ? base62Encode : base32Encode)(t, Number(opts['--width'] ?? 0)));
    else if (scheme === 'base62' || scheme === 'base32') console.log(String(Number((scheme === 'base62' ? base62Decode : base32Decode)(line))));
    else console.log(JSON.stringify(decodeText(scheme, t, options)));
  } catch (e) {
    failed = true;
    process.stderr.write(`shardid: line ${n}: ${JSON.stringify(line)}: ${e.message} (SQLSTATE ${e.code})\n`);
  }
}).on('close', () => { process.exitCode = failed ? 1 : 0; });
