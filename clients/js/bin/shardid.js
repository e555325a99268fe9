#!/usr/bin/env node
// shardid's command line for JavaScript (docs/clients.md):
//
//   shardid decode SCHEME [--near ISO-8601] [--shard-bits N] [--layout JSON]
//   shardid encode base62|base32 [--width N]
//   shardid decode base62|base32
//
// Reads one value a line on standard input and writes one line for each:
// for a SCHEME, a JSON object whose keys are the SQL function's OUT columns.
// A line that is not a valid value gets an error on stderr naming its
// number and text; the exit status is then 1 (2 for a wrong command).
import { createInterface } from 'node:readline';
import {
  SCHEMES, ShardidError, VERSION, base32Decode, base32Encode, base62Decode, base62Encode, decodeText, layoutFromJson, toUnixMs,
} from '../src/index.js';

const USAGE = `usage: shardid decode SCHEME [--near ISO-8601] [--shard-bits N] [--layout JSON]
       shardid encode base62|base32 [--width N]
       shardid decode base62|base32
SCHEME: ${SCHEMES.join(', ')}. One value a line on standard input, one line out for each.`;

function usage(why) {
  process.stderr.write(`shardid: ${why}\n${USAGE}\n`);
  process.exit(2);
}

function jsonLine(fields) {
  const parts = [];
  for (const [k, v] of Object.entries(fields)) {
    parts.push(`${JSON.stringify(k)}:${typeof v === 'string' ? JSON.stringify(v) : String(v)}`);
  }
  return `{${parts.join(',')}}`;
}

function parseArgs(argv) {
  const [command, scheme, ...rest] = argv;
  if (command === '--version') {
    process.stdout.write(`${VERSION}\n`);
    process.exit(0);
  }
  if (command === '--help' || command === '-h') {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  if (command !== 'decode' && command !== 'encode') usage(command === undefined ? 'no command' : `unknown command "${command}"`);
  if (scheme === undefined) usage(`${command} needs a scheme`);
  const options = {};
  const allowed = command === 'encode' ? { base62: ['--width'], base32: ['--width'] }
    : { trace: ['--near'], uuidv7: ['--shard-bits'], layout: ['--layout'], base62: [], base32: [] };
  if (command === 'encode' && !(scheme in allowed)) usage(`encode takes base62 or base32, not "${scheme}"`);
  if (command === 'decode' && !SCHEMES.includes(scheme) && !(scheme in allowed)) usage(`unknown scheme "${scheme}"`);
  for (let i = 0; i < rest.length; i++) {
    let [name, value] = rest[i].split(/=(.*)/s, 2);
    if (value === undefined) value = rest[++i];
    if (!(allowed[scheme] || []).includes(name)) usage(`${command} ${scheme} takes no option ${name}`);
    if (value === undefined) usage(`${name} needs a value`);
    try {
      if (name === '--near') options.near = toUnixMs(value, 'near');
      if (name === '--layout') options.layout = layoutFromJson(value);
    } catch (e) {
      if (e instanceof ShardidError) usage(`${name}: ${e.message}`);
      throw e;
    }
    if (name === '--shard-bits' || name === '--width') {
      if (!/^[0-9]{1,3}$/.test(value)) usage(`${name} takes a whole number, not "${value}"`);
      options[name === '--width' ? 'width' : 'shardBits'] = Number(value);
    }
  }
  if (scheme === 'layout' && options.layout === undefined) usage('decode layout needs --layout (a row of shardid_layouts as JSON, or a built-in layout\'s name)');
  if (command === 'decode' && scheme === 'trace' && options.near === undefined) options.near = BigInt(Date.now());
  return { command, scheme, options };
}

const { command, scheme, options } = parseArgs(process.argv.slice(2));
const convert = command === 'encode'
  ? (t) => (scheme === 'base62' ? base62Encode : base32Encode)(t, options.width ?? 0)
  : scheme === 'base62' ? (t) => String(base62Decode(t))
    : scheme === 'base32' ? (t) => String(base32Decode(t))
      : (t) => jsonLine(decodeText(scheme, t, options));

let lineNo = 0;
let failed = 0;
let out = [];
const flush = () => {
  if (out.length) process.stdout.write(`${out.join('\n')}\n`);
  out = [];
};
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (raw) => {
  lineNo++;
  const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
  try {
    out.push(convert(text));
  } catch (e) {
    if (!(e instanceof ShardidError)) throw e;
    failed++;
    flush();
    process.stderr.write(`shardid: line ${lineNo}: ${JSON.stringify(text.length > 100 ? `${text.slice(0, 100)}...` : text)}: ${e.message} (SQLSTATE ${e.code})${e.detail ? `\n  ${e.detail}` : ''}\n`);
  }
  if (out.length >= 4096) flush();
});
lines.on('close', () => {
  flush();
  process.exitCode = failed ? 1 : 0;
});
