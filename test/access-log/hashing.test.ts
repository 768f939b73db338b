/**
 * The access log chain's hashing and seals, without a database: an entry's hash covers every stored field
 * and its place in the chain, and a seal covers every field of a head or anchor under the master key only.
 * Expected hashes are computed here from the documented layout (SHA-256 of the JSON array of version 1 and
 * the fields in order), so a change of layout, which would break every stored chain, fails.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac, hkdfSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { entryHash, GENESIS, OPERATOR_CHAIN, storable, type AuditEntry } from '../../src/access-log/entry.ts';
import { ChainSeal } from '../../src/access-log/seal.ts';

const ENTRY: AuditEntry = {
  id: 'log_1',
  business_id: 'b_1',
  at: 1_767_225_600_000,
  client_id: 'cl_1',
  operation: 'GET /patients/{id}',
  action: 'read',
  resource_type: 'patient',
  resource_id: 'p_1',
  patient_ref: 'p_1',
  status: 200,
  request_id: 'req-1',
  source_address: '127.0.0.1',
  filter: null,
  result_count: null,
  with_change: 0,
};
const PREV = 'a'.repeat(64);

describe('audit entry hash', () => {
  it('is the SHA-256 (hex) of the JSON array [1, business, seq, prev_hash, then every other field in stored order]', () => {
    const layout = [
      1,
      'b_1',
      7,
      PREV,
      'log_1',
      1_767_225_600_000,
      'cl_1',
      'GET /patients/{id}',
      'read',
      'patient',
      'p_1',
      'p_1',
      200,
      'req-1',
      '127.0.0.1',
      null,
      null,
      0,
    ];
    assert.equal(entryHash(ENTRY, 7, PREV), createHash('sha256').update(JSON.stringify(layout)).digest('hex'));
  });

  it('changes when any one stored field, the position or the previous hash changes', () => {
    const changed: Array<[string, AuditEntry, number, string]> = [
      ['seq', ENTRY, 8, PREV],
      ['prev_hash', ENTRY, 7, 'b'.repeat(64)],
    ];
    const other: Record<string, unknown> = {
      id: 'log_2',
      business_id: 'b_2',
      at: 1_767_225_600_001,
      client_id: null,
      operation: 'GET /patients',
      action: 'list',
      resource_type: 'appointment',
      resource_id: null,
      patient_ref: 'p_2',
      status: 404,
      request_id: 'req-2',
      source_address: '::1',
      filter: '{"q":"x"}',
      result_count: 3,
      with_change: 1,
    };
    for (const [field, value] of Object.entries(other)) changed.push([field, { ...ENTRY, [field]: value } as AuditEntry, 7, PREV]);
    const original = entryHash(ENTRY, 7, PREV);
    for (const [field, entry, seq, prev] of changed) assert.notEqual(entryHash(entry, seq, prev), original, field);
  });
});

describe('stored chain values', () => {
  it('starts every chain after 64 zeros and keeps the operator’s cross-business accesses under the business "*"', () => {
    assert.equal(GENESIS, '0000000000000000000000000000000000000000000000000000000000000000');
    assert.equal(OPERATOR_CHAIN, '*');
  });
});

describe('storable entries', () => {
  it('writes a lone surrogate and NUL as U+FFFD and leaves every other value as it is', () => {
    const cases: Array<[string, string]> = [
      ['plain', 'plain'],
      ['a\ud800b', 'a\uFFFDb'],
      ['a\u0000b\u0000', 'a\uFFFDb\uFFFD'],
      ['😀 whole pair', '😀 whole pair'],
    ];
    for (const [input, stored] of cases) {
      const result = storable({ ...ENTRY, operation: input, status: 200, filter: null });
      assert.deepEqual(result, { ...ENTRY, operation: stored, status: 200, filter: null }, JSON.stringify(input));
    }
  });

  it('leaves the record it was given unchanged', () => {
    const record = { ...ENTRY, request_id: 'x\u0000' };
    storable(record);
    assert.equal(record.request_id, 'x\u0000');
  });
});

describe('chain seals', () => {
  const master = Buffer.alloc(32, 9);
  const key = Buffer.from(hkdfSync('sha256', master, Buffer.alloc(0), 'audit-chain-seal', 32));
  const mac = (fields: unknown[]) => createHmac('sha256', key).update(JSON.stringify(fields)).digest('base64url');
  const head = { business_id: 'b_1', seq: 12, hash: 'c'.repeat(64) };
  const anchor = { ...head, through_at: 1_767_225_600_000 };

  it('seals a head as HMAC-SHA256 (base64url) of ["head", business, seq, hash] under the key derived from the master key', () => {
    assert.equal(new ChainSeal(master).head(head), mac(['head', 'b_1', 12, 'c'.repeat(64)]));
  });

  it('seals an anchor as the same over ["anchor", business, seq, hash, through_at]', () => {
    assert.equal(new ChainSeal(master).anchor(anchor), mac(['anchor', 'b_1', 12, 'c'.repeat(64), 1_767_225_600_000]));
  });

  it('reads a seq or through_at the database hands back as text as the number it is', () => {
    const seal = new ChainSeal(master);
    assert.equal(seal.head({ ...head, seq: '12' as unknown as number }), seal.head(head));
    assert.equal(seal.anchor({ ...anchor, through_at: '1767225600000' as unknown as number }), seal.anchor(anchor));
  });

  it('differs under another master key', () => {
    assert.notEqual(new ChainSeal(Buffer.alloc(32, 8)).head(head), new ChainSeal(master).head(head));
  });

  it('matches only the same seal', () => {
    const seal = new ChainSeal(master).head(head);
    const cases: Array<[string | null, boolean]> = [
      [seal, true],
      [null, false],
      ['', false],
      [seal.slice(0, -1), false],
      [`${seal}A`, false],
      [`${seal.slice(0, -1)}${seal.endsWith('A') ? 'B' : 'A'}`, false],
    ];
    for (const [candidate, matches] of cases) assert.equal(ChainSeal.matches(candidate, seal), matches, String(candidate));
  });
});
