/**
 * Hostile input: values and request changes an attacker or a broken client sends. Large values are
 * markers (Big, Deep, ...) expanded only when the request is written, so fast-check's counterexample
 * report stays readable and shrinking works on their sizes.
 */
import fc from 'fast-check';

/** `unit` repeated `count` times. */
export class Big {
  readonly unit: string;
  readonly count: number;
  constructor(unit: string, count: number) {
    this.unit = unit;
    this.count = count;
  }
  text(): string {
    return this.unit.repeat(this.count);
  }
  [fc.toStringMethod](): string {
    return `Big(${JSON.stringify(this.unit)} x ${this.count})`;
  }
}

/** Objects or arrays nested `depth` deep. */
export class Deep {
  readonly depth: number;
  readonly container: 'object' | 'array';
  constructor(depth: number, container: 'object' | 'array') {
    this.depth = depth;
    this.container = container;
  }
  json(): string {
    return this.container === 'object'
      ? `${'{"a":'.repeat(this.depth)}1${'}'.repeat(this.depth)}`
      : `${'['.repeat(this.depth)}${']'.repeat(this.depth)}`;
  }
  [fc.toStringMethod](): string {
    return `Deep(${this.depth}, ${this.container})`;
  }
}

/** An object with `count` keys, or an array of `count` items. */
export class Wide {
  readonly count: number;
  readonly container: 'object' | 'array';
  constructor(count: number, container: 'object' | 'array') {
    this.count = count;
    this.container = container;
  }
  json(): string {
    const items = Array.from({ length: this.count }, (_, i) => (this.container === 'object' ? `"k${i}":${i}` : `"v${i}"`));
    return this.container === 'object' ? `{${items.join(',')}}` : `[${items.join(',')}]`;
  }
  [fc.toStringMethod](): string {
    return `Wide(${this.count}, ${this.container})`;
  }
}

/** JSON text written as is: numbers JSON.stringify cannot produce (1e400, -0, 1.0). */
export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  [fc.toStringMethod](): string {
    return `RawJson(${this.text})`;
  }
}

/** An object written with its entries in order, duplicate and prototype keys included. */
export class Entries {
  readonly entries: Array<[string, unknown]>;
  constructor(entries: Array<[string, unknown]>) {
    this.entries = entries;
  }
  [fc.toStringMethod](): string {
    return `Entries(${fc.stringify(this.entries)})`;
  }
}

/** JSON text of a value that may hold the markers above. */
export function toJsonText(value: unknown): string {
  if (value instanceof Big) return JSON.stringify(value.text());
  if (value instanceof Deep || value instanceof Wide) return value.json();
  if (value instanceof RawJson) return value.text;
  if (value instanceof Entries) return `{${value.entries.map(([key, item]) => `${JSON.stringify(key)}:${toJsonText(item)}`).join(',')}}`;
  if (Array.isArray(value)) return `[${value.map((item) => toJsonText(item)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .map((key) => `${JSON.stringify(key)}:${toJsonText((value as Record<string, unknown>)[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Text of a marker or a plain string, for paths, queries and headers. */
export function toText(value: unknown): string {
  if (value instanceof Big) return value.text();
  return String(value);
}

/** Percent-encodes any string, lone surrogates included (as their 3-byte WTF-8 form). */
export function encodeAny(value: string): string {
  let out = '';
  for (const char of value) {
    const code = char.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff) {
      out += [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    } else {
      out += encodeURIComponent(char);
    }
  }
  return out;
}

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

export const nastyString: fc.Arbitrary<unknown> = fc.oneof(
  fc.string().map((s) => `${s}\u0000${s}`),
  fc.constantFrom(
    '\u0000',
    '\ud800',
    '\udfff',
    'a\ud83d',
    '\udc00b',
    '\ufffe',
    '\uffff',
    '\u202e',
    '',
    ' ',
    '\t\n',
    '\u0000\u0000',
    'null',
    'true',
    '1e400',
    '__proto__',
  ),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.string({ unit: fc.constantFrom('\ud800', '\udc00', '\u0000', 'a', '\u00e9', '\u0085', '\u2028'), maxLength: 30 }),
  // Long strings: past every maxLength, some past the 1 MiB body limit.
  fc
    .tuple(
      fc.constantFrom('x', '\u00e9', '\u{1F600}', '\u0000', '\ud800'),
      fc.oneof(fc.integer({ min: 101, max: 5000 }), fc.integer({ min: 5000, max: 1_200_000 })),
    )
    .map(([unit, count]) => new Big(unit, count)),
);

/** Strings the storage layers treat differently: NUL (PostgreSQL text refuses it) and lone surrogates. */
export const controlString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', 'x\udfff', '\udc00\ud800'),
  fc
    .tuple(fc.string({ maxLength: 20 }), fc.constantFrom('\u0000', '\ud800', '\udfff'), fc.string({ maxLength: 20 }))
    .map(([a, c, b]) => `${a}${c}${b}`),
);

/** The same in a URL: percent-encoded NUL and lone surrogates. */
export const controlUrlText: fc.Arbitrary<string> = fc.constantFrom('%00', 'a%00b', '%00%00', '%ED%A0%80', 'x%ED%BF%BF');

export const nastyNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    1e308,
    -1e308,
    2 ** 53,
    2 ** 53 + 2,
    2 ** 63,
    2 ** 64,
    -(2 ** 63),
    2 ** 31,
    2 ** 31 - 1,
    -(2 ** 31) - 1,
    253402300800,
    9999999999,
    10000000000,
    -1,
    0.5,
    -0.5,
    1e-7,
    5e-324,
  ),
  fc.double(),
  fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }),
  fc
    .constantFrom(
      '1e400',
      '-1e400',
      '1E2',
      '1.0',
      '1e-400',
      '-0',
      '100000000000000000000000000000',
      '123456789012345678901234567890.5',
      '0.0000001',
      '1.5e10',
      '9007199254740993',
    )
    .map((text) => new RawJson(text)),
);

export const prototypeObject: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(...PROTOTYPE_KEYS).chain((key) => fc.jsonValue({ maxDepth: 1 }).map((inner) => new Entries([[key, inner]]))),
  fc.constant(new Entries([['__proto__', { status: 'NS', admin: true, polluted: 'yes' }]])),
  fc.constant(new Entries([['constructor', { prototype: { polluted: 'yes' } }]])),
  fc.constant({ toString: 'x', valueOf: 1, hasOwnProperty: 'x', toJSON: 'x' }),
);

export const nesting: fc.Arbitrary<unknown> = fc.oneof(
  // Moderate depths (what a store may accept) and extreme ones (past JSON parsers' and serialisers' stacks).
  fc
    .tuple(fc.oneof(fc.integer({ min: 5, max: 1500 }), fc.integer({ min: 1500, max: 20_000 })), fc.constantFrom('object' as const, 'array' as const))
    .map(([depth, container]) => new Deep(depth, container)),
  fc
    .tuple(fc.integer({ min: 100, max: 50_000 }), fc.constantFrom('object' as const, 'array' as const))
    .map(([count, container]) => new Wide(count, container)),
);

/** Any hostile JSON value: wrong types, nasty strings and numbers, nesting, prototype keys. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(fc.jsonValue({ maxDepth: 2 }), nastyString, nastyNumber, nesting, prototypeObject);

/** Path segments and query values, written raw into the URL (already percent-encoded or malformed on purpose). */
export const hostileUrlText: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: 101, max: 3000 }).map((count) => new Big('a', count)),
  fc.constantFrom(
    '%00',
    'a%00b',
    '%ED%A0%80',
    '%ED%B0%80x',
    '%F0%9F%98',
    '%',
    '%zz',
    '%E0%A4%A',
    '%C0%AF',
    '..',
    '%2e%2e',
    '%2F',
    '%2Fetc%2Fpasswd',
    'a%20b',
    '%25',
    '%u0041',
    'null',
    'undefined',
    '__proto__',
    'constructor',
    'prototype',
    '0',
    '-1',
    '1e400',
    '-0',
    '1.5',
    '0x10',
    'NaN',
    'Infinity',
    '',
    '%20',
    '+',
    '999999999999999999999999999999',
    '9007199254740993',
    '%EF%BB%BF1',
  ),
  fc.string({ unit: 'binary', maxLength: 300 }).map(encodeAny),
  fc.string({ unit: 'grapheme', minLength: 90, maxLength: 260 }).map(encodeAny),
);

/** Header values as HTTP can carry them (latin-1, no CR/LF/NUL), long ones included. */
export const hostileHeaderText: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: 100, max: 20_000 }).map((count) => new Big('a', count)),
  fc.string({
    unit: fc
      .integer({ min: 0x20, max: 0xff })
      .filter((c) => c !== 0x7f)
      .map((c) => String.fromCharCode(c)),
    maxLength: 300,
  }),
  fc.constantFrom(
    '',
    ' ',
    'Bearer',
    'Bearer ',
    'Bearer a.b.c',
    'Basic dXNlcjpwYXNz',
    'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4IiwiYl9pZCI6IngifQ.',
    'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4IiwiYl9pZCI6IngifQ.',
    '__proto__',
    '1e400',
    '-1',
    'a, b',
    '\u00ff\u00fe',
  ),
);

/** Bodies that are not JSON, or not what the content type says. */
export const malformedBody: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  fc.constantFrom(
    '',
    '{',
    '[',
    '}',
    'null',
    'nul',
    '{"a":1',
    '{"a":1}}',
    "{'a':1}",
    '{"a":NaN}',
    '{"a":Infinity}',
    '{"a":undefined}',
    '{a:1}',
    '{"a":1,}',
    '[1,2,]',
    '{"a":1}/*c*/',
    '\uFEFF{}',
    '{"a":"\\u00"}',
    '{"a":"\\ud800"}',
    '"\\u0000"',
    '0',
    '-',
    '1e400',
    'true false',
    '\u0000',
  ),
  fc.string({ maxLength: 100 }),
  fc.uint8Array({ minLength: 1, maxLength: 64 }),
  fc.constant(Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0x80, 0x22, 0x7d])), // {"a":"<invalid UTF-8>"}
);

export const otherContentType: fc.Arbitrary<string | null> = fc.oneof(
  fc.constantFrom(
    null,
    'text/plain',
    'application/xml',
    'text/html',
    'multipart/form-data; boundary=x',
    'application/x-www-form-urlencoded',
    'application/octet-stream',
    'application/json-patch+json',
    'application/vnd.api+json',
    'application/json; charset=latin1',
    'application/json; charset=utf-16',
    'application/jsonx',
    'APPLICATION/JSON',
    'application/json;;',
    '*/*',
    'json',
    '',
    ';',
    'application/json, text/plain',
  ),
  fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 }),
);

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'] as const;

export { PROTOTYPE_KEYS };
