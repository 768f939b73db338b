import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResponseCache, type CachedResponse } from '../../../src/modules/search/response-cache.ts';

const answer = (bytes: number): CachedResponse => ({ status: 200, body: Buffer.alloc(bytes) });

describe('search response cache', () => {
  it('answers a key for the version it was stored under, and drops everything on a new version', () => {
    const cache = new ResponseCache(1 << 20);
    const stored = answer(100);
    cache.set(1, 'drug 10 dolo', stored);
    assert.equal(cache.get(1, 'drug 10 dolo'), stored);
    assert.equal(cache.get(2, 'drug 10 dolo'), undefined, 'another version');
    cache.set(2, 'drug 10 pan', answer(100));
    assert.equal(cache.size, 1);
    assert.equal(cache.get(2, 'drug 10 dolo'), undefined);
  });

  it('keeps within its byte budget, sparing entries used since they were stored (clock)', () => {
    // Sixteen entries fit: each is 50 bytes of body plus two bytes a key character (6 characters).
    const cache = new ResponseCache(16 * 62);
    const keys = Array.from({ length: 16 }, (_, i) => `key-${String(i).padStart(2, '0')}`);
    for (const key of keys) cache.set(1, key, answer(50));
    assert.equal(cache.size, 16);
    assert.ok(cache.get(1, 'key-00'), 'the oldest is used');
    cache.set(1, 'key-16', answer(50));
    assert.equal(cache.size, 16);
    assert.ok(cache.get(1, 'key-00'), 'and so spared');
    assert.equal(cache.get(1, 'key-01'), undefined, 'the oldest unused went');
    assert.ok(cache.get(1, 'key-16'));
    // Every entry used now: one round clears their marks, then the oldest of them goes.
    for (const key of [...keys.slice(2), 'key-16']) assert.ok(cache.get(1, key));
    cache.set(1, 'key-17', answer(50));
    assert.equal(cache.size, 16);
  });

  it('replaces an entry stored again under its key, and does not keep an answer above a sixteenth of the budget', () => {
    const cache = new ResponseCache(16 * 1024);
    cache.set(1, 'k', answer(10));
    const newer = answer(20);
    cache.set(1, 'k', newer);
    assert.equal(cache.get(1, 'k'), newer);
    assert.equal(cache.size, 1);
    cache.set(1, 'big', answer(2000));
    assert.equal(cache.get(1, 'big'), undefined);
  });
});
