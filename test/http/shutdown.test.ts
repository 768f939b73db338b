/** A response to a request in flight when shutdown begins closes its connection. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTestApp, DIALECT } from '../support.ts';

describe(`shutdown (${DIALECT})`, () => {
  it('answers requests in flight with connection: close once closing', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let arrived!: () => void;
    const inFlight = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const t = await createTestApp({
      setup: (app) => {
        app.get('/probe/slow', { config: { auth: 'public' } }, async () => {
          arrived();
          await released;
          return { ok: true };
        });
      },
    });
    try {
      const before = await t.app.inject({ url: '/health' });
      assert.notEqual(before.headers.connection, 'close');
      const pending = t.app.inject({ url: '/probe/slow' });
      await inFlight;
      const closing = t.app.close();
      await new Promise((resolve) => setImmediate(resolve)); // preClose has run
      release();
      const response = await pending;
      assert.equal(response.statusCode, 200);
      assert.equal(response.headers.connection, 'close');
      assert.match(String(response.headers['x-request-id']), /^req_/);
      assert.equal(response.headers['cache-control'], 'no-store');
      await closing;
    } finally {
      release();
      await t.close();
    }
  });
});
