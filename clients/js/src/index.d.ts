// Types of shardid's JavaScript decoders (src/index.js).

export declare const VERSION: string;

/** Raised for input the SQL function would refuse; `code` is its SQLSTATE. */
export declare class ShardidError extends Error {
  code: string;
  detail?: string;
}

/** An ID: a BigInt, decimal digits as a string, or a Number up to 2^53 - 1. */
export type IdInput = bigint | string | number;
/** A time: a Date, ISO 8601 text with a zone, or Unix milliseconds. */
export type TimeInput = Date | string | bigint | number;

export interface Layout {
  readonly name: string;
  readonly epochMs: bigint;
  readonly unitMs: bigint;
  readonly timeBits: number;
  readonly shardBits: number;
  readonly sequenceBits: number;
}

export declare const PRESETS: Readonly<{
  snowflake: Layout;
  twitter: Layout;
  icicle: Layout;
  discord: Layout;
  instagram: Layout;
}>;

export declare const SCHEMES: readonly ['trace', 'decimal', 'snowflake', 'instagram', 'eightbyte', 'uuidv7', 'layout'];
export type Scheme = (typeof SCHEMES)[number];

export interface TraceIdFields { created_at: Date; node_no: number; counter: number }
export interface DecimalIdFields { counter: number; generator_id: number; launch_id: number }
export interface LayoutIdFields { created_at: Date; shard: number; sequence: number }
export interface EightbyteIdFields {
  created_at: Date;
  sequence: number;
  generator_id: number;
  cluster_id: number;
  mode: 'spread' | 'time_sequential';
}
export interface Uuidv7Fields { created_at: Date; counter: number; shard: number }

export declare function toBigInt(value: IdInput, what?: string): bigint;
export declare function toUnixMs(value: TimeInput, what?: string): bigint;
export declare function isoString(unixMs: bigint | number, precision?: 'ms' | 's'): string;
export declare function parseInterval(text: string): bigint;

export declare function layout(spec: {
  name?: string;
  epochMs: bigint | string | number;
  unitMs?: bigint | string | number;
  timeBits: number;
  shardBits: number;
  sequenceBits: number;
}): Layout;
/** A row of shardid_layouts as row_to_json prints it (text or parsed), or a preset's name. */
export declare function layoutFromJson(json: string | Record<string, unknown>): Layout;

export declare function traceIdDecode(id: IdInput, near?: TimeInput): TraceIdFields;
export declare function decimalIdDecode(id: IdInput): DecimalIdFields;
export declare function idDecode(layout: Layout | string | Record<string, unknown>, id: IdInput): LayoutIdFields;
export declare function snowflakeDecode(id: IdInput): LayoutIdFields;
export declare function instagramDecode(id: IdInput): LayoutIdFields;
/** 8 bytes, or 16 hex digits (with or without PostgreSQL's \x). */
export declare function eightbyteWord(id: Uint8Array | string): bigint;
export declare function eightbyteIdDecode(id: Uint8Array | string): EightbyteIdFields;
export declare function uuidv7Decode(id: string, shardBits?: number): Uuidv7Fields;

export declare function base62Encode(value: IdInput, width?: number): string;
export declare function base62Decode(text: string): bigint;
export declare function base32Encode(value: IdInput, width?: number): string;
export declare function base32Decode(text: string): bigint;

/** One ID as text to the SQL function's OUT columns, created_at as ISO 8601 text. */
export declare function decodeText(
  scheme: Scheme,
  text: string,
  options?: { near?: TimeInput; shardBits?: number; layout?: Layout | string | Record<string, unknown> },
): Record<string, string | number>;
