/**
 * The delivery body (src/modules/webhooks/body.ts): what Python's json.dumps(json.loads(body),
 * separators=(',', ':')) gives back byte for byte, checked against a re-implementation of Python's
 * rules and against python3 itself.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { describe, it } from 'node:test';
import { deliveryBody } from '../../../src/modules/webhooks/body.ts';
import { HAS_PYTHON, PYTHON, pythonDumps } from './eka-verifier.ts';

/** Values where JavaScript and Python write JSON differently, and some where they agree. */
const TRICKY: unknown[] = [
  { name: 'Zoë', city: 'पुणे', marathi: 'मराठी', emoji: '😀 ok', cjk: '中文' },
  { quote: 'say "hi"', slash: 'a/b\\c', lines: 'one\ntwo\r\tthree\b\f', nul: '\u0000\u001f', del: '\u007f', nbsp: '\u00a0' },
  { lone: '\ud800 and \udfff', pair: '\ud83d\ude00' },
  { small: [0.00001, 0.000012, 0.000001, 1e-7, 1.5e-7, 1e-10, 2.5e-300, 5e-324, -0.00001, -1e-7] },
  { boundary: [0.0001, 0.00012, 0.001, 0.1, 0.5, 1.5, 123.456, -2.75, 1e15 + 0.5, 4503599627370495.5] },
  { ints: [0, -0, 1, -1, 42, 2 ** 53, -(2 ** 53), 1e15, 1e16, 1e17, 1e20, 1e21, 1.5e300, Number.MAX_VALUE, -1e22] },
  { nested: { é: [true, false, null, [], {}, [[{ ü: 'ß' }]]] }, '10': 'integer-like key', b: 1, a: 2 },
  { text: 'v 0.00001, 1e-7 and "1e-7" \\" 2e-8 \\', n: 1e-7, 'key 0.00001': [0.00001, '0.00001'] },
  'just a string with é',
  [1, 'two', 3.5e-6],
  '',
];

function randomString(): string {
  const pools = [
    () => String.fromCharCode(randomInt(0x20, 0x7f)),
    () => String.fromCharCode(randomInt(0, 0x20)),
    () => String.fromCharCode(randomInt(0x80, 0x800)),
    () => String.fromCharCode(randomInt(0x900, 0x980)),
    () => String.fromCodePoint(randomInt(0x1f300, 0x1f700)),
    () => String.fromCharCode(randomInt(0xd800, 0xe000)),
    () => '"\\/',
  ];
  let text = '';
  for (let i = randomInt(0, 12); i > 0; i--) text += pools[randomInt(pools.length)]!();
  return text;
}

function randomNumber(): number {
  switch (randomInt(4)) {
    case 0:
      return randomInt(-1_000_000, 1_000_000);
    case 1:
      return (Math.random() - 0.5) * 10 ** randomInt(-12, 24);
    case 2:
      return Number((Math.random() * 10 ** randomInt(-8, 3)).toPrecision(randomInt(1, 17)));
    default:
      return Number.parseFloat(`${randomInt(1, 10)}e${randomInt(-320, 308)}`);
  }
}

function randomValue(depth = 0): unknown {
  const kind = randomInt(depth > 2 ? 4 : 6);
  if (kind === 0) return randomString();
  if (kind === 1) return randomNumber();
  if (kind === 2) return [true, false, null][randomInt(3)];
  if (kind === 3) return randomString();
  if (kind === 4) return Array.from({ length: randomInt(0, 4) }, () => randomValue(depth + 1));
  return Object.fromEntries(Array.from({ length: randomInt(0, 5) }, () => [randomString(), randomValue(depth + 1)]));
}

const SAMPLES = [...TRICKY, ...Array.from({ length: 400 }, () => ({ event: 'x', data: randomValue() }))];

describe('webhook delivery body', () => {
  const delivered = (value: unknown) => deliveryBody(JSON.stringify(value));

  it('writes the stored text as Python would: escapes, numbers, key order', () => {
    assert.equal(
      delivered(TRICKY[0]),
      '{"name":"Zo\\u00eb","city":"\\u092a\\u0941\\u0923\\u0947","marathi":"\\u092e\\u0930\\u093e\\u0920\\u0940","emoji":"\\ud83d\\ude00 ok","cjk":"\\u4e2d\\u6587"}',
    );
    assert.equal(delivered({ s: '"\\\n\r\t\b\f\u0000\u001f\u007f/' }), '{"s":"\\"\\\\\\n\\r\\t\\b\\f\\u0000\\u001f\\u007f/"}');
    assert.equal(
      delivered([0.00001, 0.000012, 1e-7, 1.5e-7, 1e-10, 0.0001, 0.1, 1e16, 1e21, 1.5e300, -0, 7]),
      '[1e-05,1.2e-05,1e-07,1.5e-07,1e-10,0.0001,0.1,10000000000000000,1e+21,1.5e+300,0,7]',
    );
    assert.equal(deliveryBody('{"b":1,"a":"plain"}'), '{"b":1,"a":"plain"}');
  });

  it('sends an ASCII body with no small numbers as stored, and any other as a re-implementation of json.dumps writes it', () => {
    for (const value of SAMPLES) {
      const stored = JSON.stringify(value);
      const sent = deliveryBody(stored);
      if (/^[\x20-\x7e]*$/.test(stored) && !/0\.0000|e-\d(?!\d)/.test(stored)) assert.equal(sent, stored);
      assert.equal(sent, pythonDumps(value), stored);
      assert.match(sent, /^[\x20-\x7e]*$/);
      assert.deepEqual(JSON.parse(sent), JSON.parse(stored));
    }
  });

  it("is what Python's json.dumps(json.loads(body), separators=(',', ':')) gives back", { skip: !HAS_PYTHON && 'python3 is not installed' }, () => {
    const bodies = SAMPLES.map((value) => deliveryBody(JSON.stringify(value)));
    const script = [
      'import json, sys',
      'for line in sys.stdin:',
      '    body = line.rstrip("\\n")',
      '    print(json.dumps(json.dumps(json.loads(body), separators=(",", ":")) == body))',
    ].join('\n');
    const run = spawnSync(PYTHON, ['-c', script], { input: `${bodies.join('\n')}\n`, encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    const answers = run.stdout.trim().split('\n');
    assert.equal(answers.length, bodies.length);
    for (const [i, answer] of answers.entries()) assert.equal(answer, 'true', bodies[i]);
  });
});
