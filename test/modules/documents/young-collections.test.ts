import assert from 'node:assert/strict';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { youngCollected } from '../../../src/modules/documents/young-collections.ts';

describe('documents: young collections paced by upload bytes', () => {
  it('asks for a young collection after every 8 MB received, passes the pieces on unchanged, and defines no global gc', async () => {
    const minor: number[] = [];
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        if ((entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR)
          minor.push(entry.startTime);
      }
    });
    observer.observe({ entryTypes: ['gc'] });
    // One buffer again and again: the pieces themselves allocate nothing that would fill the young generation.
    const piece = Buffer.alloc(64 * 1024, 7);
    let seen = 0;
    try {
      for await (const out of youngCollected(
        (async function* () {
          for (let i = 0; i < 40 * 16; i++) yield piece;
        })(),
      )) {
        assert.equal(out, piece);
        seen += 1;
      }
      // Entries are delivered asynchronously.
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      observer.disconnect();
    }
    assert.equal(seen, 640);
    assert.ok(minor.length >= 4, `${minor.length} young collections for 40 MB`);
    assert.equal((globalThis as { gc?: unknown }).gc, undefined);
  });
});
