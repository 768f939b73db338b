/**
 * Page tokens (the access log's and the cases' `next_token`) without a server: a token opens only for the
 * walk it was made for, and anything altered, forged or of the wrong shape opens to nothing (the API's 400).
 * Tokens of the wrong shape are sealed here with the master key, as only a holder of that key could.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PositionCodec } from '../../src/modules/audit/cursor.ts';
import { CursorCodec } from '../../src/modules/cases/cursor.ts';
import { SealedTokens } from '../../src/security/sealed-tokens.ts';

const master = Buffer.alloc(32, 3);
const otherMaster = Buffer.alloc(32, 4);

/** Every way of spoiling a good token: each must open to null. */
function spoiled(token: string): Array<[string, string]> {
  const raw = Buffer.from(token, 'base64url');
  const flip = (index: number) => {
    const copy = Buffer.from(raw);
    copy[index] = copy[index]! ^ 1;
    return copy.toString('base64url');
  };
  return [
    ['empty', ''],
    ['not base64url', `${token}!`],
    ['not base64url before a good token', `!${token}`],
    ['padded base64', `${token}=`],
    ['version byte changed', flip(0)],
    ['nonce changed', flip(1)],
    ['ciphertext changed', flip(14)],
    ['tag changed', flip(raw.length - 1)],
    ['truncated by a byte', raw.subarray(0, -1).toString('base64url')],
    ['tag only', raw.subarray(raw.length - 16).toString('base64url')],
    ['version, nonce and tag without ciphertext', Buffer.concat([raw.subarray(0, 13), raw.subarray(raw.length - 16)]).toString('base64url')],
  ];
}

describe('sealed tokens', () => {
  it('open to the values sealed, for the same purpose and associated data only', () => {
    const tokens = new SealedTokens(master, 'purpose-a');
    const token = tokens.seal(['b_1', 42, null], 'walk-1');
    assert.deepEqual(tokens.open(token, 'walk-1'), ['b_1', 42, null]);
    assert.equal(tokens.open(token, 'walk-2'), null, 'other associated data');
    assert.equal(new SealedTokens(master, 'purpose-b').open(token, 'walk-1'), null, 'other purpose');
    assert.equal(new SealedTokens(otherMaster, 'purpose-a').open(token, 'walk-1'), null, 'other master key');
  });

  it('are base64url, and two seals of the same values differ (a fresh nonce each)', () => {
    const tokens = new SealedTokens(master, 'purpose-a');
    const a = tokens.seal([1], 'w');
    assert.match(a, /^[A-Za-z0-9_-]+$/);
    assert.notEqual(tokens.seal([1], 'w'), a);
    // version 1, 12-byte nonce, the JSON "[1]", 16-byte tag.
    assert.equal(Buffer.from(a, 'base64url').length, 1 + 12 + 3 + 16);
    assert.equal(Buffer.from(a, 'base64url')[0], 1);
  });

  it('open to null when altered, truncated or malformed', () => {
    const tokens = new SealedTokens(master, 'purpose-a');
    const token = tokens.seal(['b_1', 42], 'walk-1');
    for (const [what, bad] of spoiled(token)) assert.equal(tokens.open(bad, 'walk-1'), null, what);
  });

  it('open to null when what was sealed is not a list', () => {
    const tokens = new SealedTokens(master, 'purpose-a');
    assert.equal(tokens.open(tokens.seal({ a: 1 } as unknown as unknown[], 'w'), 'w'), null);
    assert.deepEqual(tokens.open(tokens.seal([], 'w'), 'w'), []);
  });
});

describe('access log page tokens', () => {
  const codec = new PositionCodec(master);
  const forge = (values: unknown[], walk: string) => new SealedTokens(master, 'audit-cursor').seal(values, walk);

  it('open to the position for the walk they were made for, and to nothing for another walk or master key', () => {
    const token = codec.seal({ businessId: 'b_1', seq: 17 }, 'walk-1');
    assert.deepEqual(codec.open(token, 'walk-1'), { businessId: 'b_1', seq: 17 });
    assert.equal(codec.open(token, 'walk-2'), null);
    assert.equal(new PositionCodec(otherMaster).open(token, 'walk-1'), null);
    for (const [what, bad] of spoiled(token)) assert.equal(codec.open(bad, 'walk-1'), null, what);
  });

  it('open to nothing when the sealed position is not a business and a whole chain position', () => {
    const cases: Array<[unknown[], boolean]> = [
      [['b_1', 0], true],
      [['b_1', 2 ** 53 - 1], true],
      [['b_1', 1.5], false],
      [['b_1', '17'], false],
      [['b_1', 2 ** 53], false],
      [[1, 17], false],
      [['b_1'], false],
    ];
    for (const [values, opens] of cases) assert.equal(codec.open(forge(values, 'w'), 'w') !== null, opens, JSON.stringify(values));
  });
});

describe('cases page tokens', () => {
  const codec = new CursorCodec(master);
  const walk = (businessId: string, patientRef: string) => JSON.stringify(['cases-cursor', 1, businessId, patientRef]);
  const forge = (values: unknown[]) => new SealedTokens(master, 'cases-cursor').seal(values, walk('b_1', 'p_1'));

  it('open to the cursor for the business and patient they were made for only', () => {
    const cursor = { updatedAt: 1_767_225_600_000, id: 'case_1', updatedAfter: 1_767_000_000 };
    const token = codec.seal(cursor, 'b_1', 'p_1');
    assert.deepEqual(codec.open(token, 'b_1', 'p_1'), cursor);
    assert.equal(codec.open(token, 'b_2', 'p_1'), null, 'another business');
    assert.equal(codec.open(token, 'b_1', 'p_2'), null, 'another patient');
    assert.equal(new CursorCodec(otherMaster).open(token, 'b_1', 'p_1'), null, 'another master key');
    for (const [what, bad] of spoiled(token)) assert.equal(codec.open(bad, 'b_1', 'p_1'), null, what);
    const unfiltered = { ...cursor, updatedAfter: null };
    assert.deepEqual(codec.open(codec.seal(unfiltered, 'b_1', 'p_1'), 'b_1', 'p_1'), unfiltered);
  });

  it('are sealed for the business and patient as a pair (no shifting of text between the two)', () => {
    const token = codec.seal({ updatedAt: 1, id: 'c', updatedAfter: null }, 'b_1', 'p_1');
    assert.equal(codec.open(token, 'b_', '1p_1'), null);
    assert.equal(codec.open(forge([1, 'c', null]), 'b_1', 'p_1') !== null, true, 'the walk is the business and patient named');
  });

  it('open to nothing when the sealed cursor is not a whole time, an id and a whole time or null', () => {
    const cases: Array<[unknown[], boolean]> = [
      [[0, 'c', null], true],
      [[1, 'c', 5], true],
      [[1.5, 'c', null], false],
      [['1', 'c', null], false],
      [[1, 2, null], false],
      [[1, 'c', 1.5], false],
      [[1, 'c', '5'], false],
      [[1, 'c'], false],
    ];
    for (const [values, opens] of cases) assert.equal(codec.open(forge(values), 'b_1', 'p_1') !== null, opens, JSON.stringify(values));
  });
});
