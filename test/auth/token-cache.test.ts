/**
 * The verified-token cache's bound: memory stays bounded however many distinct tokens a process sees (10,000
 * entries, the oldest dropped first). Its own file because it verifies 10,001 tokens (a few seconds).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { AccessTokens } from '../../src/auth/tokens.ts';
import { signingKeyFromPem } from '../../src/security/keys.ts';

describe('verified tokens kept in memory', () => {
  it('keeps the 10,000 most recently verified and drops the oldest first', async () => {
    const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const tokens = new AccessTokens(await signingKeyFromPem(pem), 'https://cps.example.test', 900);
    const issued: string[] = [];
    for (let i = 0; i < 10_001; i++) issued.push(await tokens.issue(`cl_${i}`, 'b_1', []));
    for (const token of issued.slice(0, 10_000)) await tokens.verify(token);
    assert.equal(tokens.verifyCached(issued[0]!)?.clientId, 'cl_0', 'all 10,000 kept');
    await tokens.verify(issued[10_000]!);
    assert.equal(tokens.verifyCached(issued[0]!), undefined, 'the oldest dropped for the 10,001st');
    assert.equal(tokens.verifyCached(issued[1]!)?.clientId, 'cl_1');
    assert.equal(tokens.verifyCached(issued[10_000]!)?.clientId, 'cl_10000');
  });
});
