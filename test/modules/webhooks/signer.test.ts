/**
 * Delivery signatures without a network: which signing keys are accepted, and what a receiver checking either
 * header computes. Each expectation is computed here the receiver's way (node:crypto, the standardwebhooks
 * library), never from the signer's own code.
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  ekaSignatureHeader,
  generateSigningKey,
  keyProblem,
  keyWarning,
  prepareKey,
  signatureHeader,
  standardKeyBytes,
} from '../../../src/modules/webhooks/signer.ts';

const whsec = (bytes: number) => `whsec_${Buffer.alloc(bytes, 7).toString('base64')}`;

describe('signing keys', () => {
  /** [key, accepted]: the signing_key field's rule. */
  const KEYS: Array<[string, boolean, string]> = [
    [whsec(24), true, 'whsec_ with 24 bytes'],
    [whsec(32), true, 'whsec_ with 32 bytes'],
    [whsec(64), true, 'whsec_ with 64 bytes'],
    [whsec(23), false, 'whsec_ with 23 bytes'],
    [whsec(65), false, 'whsec_ with 65 bytes'],
    ['whsec_', false, 'whsec_ alone'],
    [`whsec_${Buffer.alloc(32, 7).toString('base64').slice(0, -1)}`, false, 'whsec_ with base64 missing its padding'],
    [`whsec_${Buffer.alloc(33, 7).toString('base64')}==`, false, 'whsec_ with too much padding'],
    [`whsec_${'*'.repeat(44)}`, false, 'whsec_ with characters outside base64'],
    [`whsec_ ${Buffer.alloc(32, 7).toString('base64')}`, false, 'whsec_ followed by a space'],
    [`whsec_${Buffer.alloc(32, 7).toString('base64')}x`, false, 'whsec_ base64 followed by a stray character'],
    [`whsec_****${Buffer.alloc(32, 7).toString('base64')}`, false, 'whsec_ with characters outside base64 before the base64'],
    [`whsec_${Buffer.alloc(32, 7).toString('base64')}****`, false, 'whsec_ with characters outside base64 after the base64'],
    ['0f8fad5b-d9cb-469f-a165-70867728950e', true, 'a UUID'],
    ['a'.repeat(8), true, '8 characters'],
    ['a'.repeat(7), false, '7 characters'],
    ['a'.repeat(200), true, '200 characters'],
    ['a'.repeat(201), false, '201 characters'],
    ['é'.repeat(8), true, '8 characters of two UTF-8 bytes each'],
    ['😀'.repeat(7), false, '7 characters of two UTF-16 units each (14 units)'],
    ['😀'.repeat(8), true, '8 characters of two UTF-16 units each'],
    ['😀'.repeat(200), true, '200 characters of two UTF-16 units each'],
    ['abcdefgh ijklmnop', false, 'a space inside'],
    ['abcdefghijklmnop\t', false, 'a tab at the end'],
    ['abcdefgh\u0007ijklmnop', false, 'a control character'],
    ['abcdefghijklmnop\ud800', false, 'a lone surrogate'],
    ['', false, 'empty'],
  ];

  it('accepts whsec_ keys of 24 to 64 bytes and other texts of 8 to 200 characters without spaces or control characters', () => {
    for (const [key, accepted, what] of KEYS) {
      assert.equal(keyProblem(key) === null, accepted, `${what}: ${keyProblem(key)}`);
      assert.equal(standardKeyBytes(key) !== null, accepted, what);
      if (accepted) assert.doesNotThrow(() => prepareKey(key), what);
      else assert.throws(() => prepareKey(key), /invalid signing key/, what);
    }
  });

  it('says what a refused key must be, in words the signing_key field error shows', () => {
    assert.equal(keyProblem(whsec(8)), 'a key starting with "whsec_" must continue with the base64 of 24 to 64 random bytes');
    assert.equal(
      keyProblem('short'),
      'must be "whsec_" followed by the base64 of 24 to 64 random bytes, or a text of 8 to 200 characters without spaces (a UUID, a random string)',
    );
  });

  it('warns of a guessable text key (Eka’s example supersecretkey), never of a generated or random one', () => {
    const cases: Array<[string, boolean]> = [
      ['supersecretkey', true],
      ['passwordpassword', true],
      ['aaaaaaaa', true],
      ['0f8fad5b-d9cb-469f-a165-70867728950e', false],
      ['Xk3#pQ9!vL2@mZ7$', false],
      [whsec(32), false],
    ];
    for (const [key, warned] of cases) assert.equal(keyWarning(key) !== null, warned, key);
    assert.match(
      keyWarning('supersecretkey')!,
      /^signing_key is guessable \(about 10\^\d+ guesses\): anyone holding one signed delivery can find it offline/,
    );
    assert.match(keyWarning('supersecretkey')!, /change it to a UUID or 32 random bytes \(PATCH signing_key\) in the service and your receiver$/);
  });

  it('uses the decoded bytes of a whsec_ key and the UTF-8 bytes of any other key', () => {
    const bytes = randomBytes(40);
    assert.deepEqual(standardKeyBytes(`whsec_${bytes.toString('base64')}`), bytes);
    assert.deepEqual(standardKeyBytes('clé-de-signature-1234'), Buffer.from('clé-de-signature-1234', 'utf8'));
  });

  it('generates whsec_ keys of 32 random bytes, each different', () => {
    const a = generateSigningKey();
    const b = generateSigningKey();
    assert.match(a, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(a.slice(6), 'base64').length, 32);
    assert.notEqual(a, b);
  });
});

describe('webhook-signature (Standard Webhooks)', () => {
  const body = '{"type":"appointment.created","data":{"name":"Zoë"}}';
  const timestamp = 1_767_225_600;

  it('verifies with the standardwebhooks library, for whsec_ and text keys alike', () => {
    for (const key of [whsec(32), '0f8fad5b-d9cb-469f-a165-70867728950e']) {
      const header = signatureHeader([key], 'evt_1', timestamp, body);
      const secret = key.startsWith('whsec_') ? key : Buffer.from(key, 'utf8').toString('base64');
      const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': header };
      assert.equal(header, new Webhook(secret).sign('evt_1', new Date(timestamp * 1000), body));
      assert.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'evt_2' }));
    }
  });

  it('writes one v1 signature per key, space-separated, in the order of the keys; a prepared key signs as its text', () => {
    const keys = [whsec(32), whsec(24)];
    const expected = keys.map((key) => {
      const mac = createHmac('sha256', Buffer.from(key.slice(6), 'base64'))
        .update(`evt_9.${timestamp}.${body}`)
        .digest('base64');
      return `v1,${mac}`;
    });
    assert.equal(signatureHeader(keys, 'evt_9', timestamp, body), expected.join(' '));
    assert.equal(signatureHeader([prepareKey(keys[0]!), keys[1]!], 'evt_9', timestamp, body), expected.join(' '));
  });
});

describe('Eka-Webhook-Signature', () => {
  const body = '{"event":"appointment.created"}';
  const timestamp = 1_767_225_600;
  const ekaMac = (key: string) => createHmac('sha256', Buffer.from(key, 'utf8')).update(`${timestamp}.${body}`).digest('hex');

  it('is t=<timestamp> then a v1 per key, the current (first) key last, each keyed with the key text as given', () => {
    const current = whsec(32);
    const previous = 'partner-key-0123456789';
    assert.equal(ekaSignatureHeader([current, previous], timestamp, body), `t=${timestamp},v1=${ekaMac(previous)},v1=${ekaMac(current)}`);
    assert.equal(ekaSignatureHeader([prepareKey(current)], timestamp, body), `t=${timestamp},v1=${ekaMac(current)}`);
  });
});
