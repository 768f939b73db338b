/** Where a request's token comes from: the Authorization bearer token, else the raw `auth` header. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FastifyRequest } from 'fastify';
import { tokenFrom } from '../../src/http/auth.ts';

const request = (headers: Record<string, string>) => ({ headers }) as unknown as FastifyRequest;

describe('tokenFrom', () => {
  it('takes what /^Bearer\\s+(\\S+)\\s*$/i captures from Authorization', () => {
    const jwt = `eyJhbGciOiJFZERTQSJ9.${'eyJzdWIiOiJjbGlfMSJ9'.repeat(15)}.${'s1gnature-_'.repeat(8)}`;
    const values = [
      `Bearer ${jwt}`,
      `bearer ${jwt}`,
      `BEARER   ${jwt}  `,
      `Bearer\t${jwt}\t`,
      `Bearer ${jwt}\u00a0`,
      'Bearer abc def',
      'Bearer a\u2003b',
      'Bearer ',
      'Bearer',
      'Bearer  \t ',
      'Bearerabc',
      'Basic abc',
      ' Bearer abc',
      '',
      'Bearer a\nb',
    ];
    for (const value of values) {
      assert.equal(tokenFrom(request({ authorization: value })), /^Bearer\s+(\S+)\s*$/i.exec(value)?.[1] ?? null, JSON.stringify(value));
    }
  });

  it('falls back to the auth header, raw or with a Bearer prefix', () => {
    assert.equal(tokenFrom(request({ authorization: 'Bearer a b', auth: 'tok' })), 'tok');
    assert.equal(tokenFrom(request({ auth: ' Bearer  tok ' })), 'tok');
    assert.equal(tokenFrom(request({ auth: '  ' })), null);
    assert.equal(tokenFrom(request({})), null);
  });
});
