import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../src/db/ids.ts';

describe('newId', () => {
  it('makes unique ids that sort in creation order, even within one millisecond', () => {
    const ids = Array.from({ length: 5000 }, () => newId('x'));
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual([...ids].sort(), ids);
    for (const id of ids) assert.match(id, /^x_[0-9a-hjkmnp-tv-z]{26}$/);
  });
});
