import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getHeapSpaceStatistics } from 'node:v8';
import { releaseStartupMemory } from '../src/garbage-collection.ts';

const youngGeneration = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!;

describe('the memory a start leaves behind', () => {
  it('is given back: the young generation shrinks to a fraction of what the start grew it to, and no global gc appears', () => {
    // What a start does to the young generation: many objects, a share of them surviving a while.
    let kept: object[] = [];
    for (let round = 0; round < 200; round++) {
      const batch = Array.from({ length: 20_000 }, (_, i) => ({ round, i, text: `entry ${i}` }));
      kept.push(...batch.slice(0, 2_000));
      if (kept.length > 100_000) kept = kept.slice(-50_000);
    }
    const grown = youngGeneration().physical_space_size;
    kept = [];
    releaseStartupMemory();
    const released = youngGeneration().physical_space_size;
    assert.ok(grown >= 8 * 2 ** 20, `the allocations grew the young generation to ${grown} bytes`);
    assert.ok(released <= grown / 4, `young generation ${grown} -> ${released} bytes`);
    assert.equal((globalThis as { gc?: unknown }).gc, undefined);
  });
});
