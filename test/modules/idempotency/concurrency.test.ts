/**
 * Idempotency-Key under concurrency: requests with one key at once, in one app and in two apps on one
 * database (as two server processes), run the work once; a retry that arrives while the first runs
 * waits for it, or gets 409 when the wait is over; a claim whose process stopped is taken over.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestApp, createTestClient, DIALECT, type TestApp, type TestClient } from '../../support.ts';
import { bookingBody, createPractice, START, type Practice } from '../appointments/support.ts';
import { keyed, newKey, Probe, secondApp, until, type Response } from './support.ts';

describe(`idempotency keys: concurrency (${DIALECT})`, () => {
  let t: TestApp;
  let two: Awaited<ReturnType<typeof secondApp>>;
  let p: Practice;
  const probe = new Probe();
  const probeTwo = new Probe();
  let slot = 0;
  const booking = () => {
    const start = START + 3600 * ++slot;
    return bookingBody(p, { appointment_details: { start_time: start, end_time: start + 900 } });
  };
  const appointments = async () =>
    (await t.ctx.storage.db.selectFrom('appointments').select('id').where('business_id', '=', p.client.businessId).execute()).length;

  /** One request ran (no replay header), the others replayed its answer. */
  function assertOneRan(responses: Response[], status: number): void {
    for (const response of responses) {
      assert.equal(response.statusCode, status, response.body);
      assert.equal(response.body, responses[0]!.body);
    }
    assert.equal(responses.filter((r) => r.headers['idempotent-replayed'] === undefined).length, 1);
  }

  before(async () => {
    t = await createTestApp({ setup: (app) => probe.install(app) });
    two = await secondApp(t, (app) => probeTwo.install(app));
    p = await createPractice(t);
  });
  after(async () => {
    await two.close();
    await t.close();
  });

  it('twelve bookings with one key at once: one appointment, every answer the same', async () => {
    for (let round = 0; round < 3; round++) {
      const before = await appointments();
      const key = newKey();
      const body = booking();
      const responses = await Promise.all(Array.from({ length: 12 }, () => keyed(t.app, p.client.token, 'POST', '/dr/v1/appointment', key, body)));
      assertOneRan(responses, 201);
      assert.equal(await appointments(), before + 1);
    }
  });

  it('bookings with one key at once through two apps on one database: one appointment', async () => {
    for (let round = 0; round < 3; round++) {
      const before = await appointments();
      const key = newKey();
      const body = booking();
      const responses = await Promise.all(
        Array.from({ length: 12 }, (_, i) => keyed(i % 2 === 0 ? t.app : two.app, p.client.token, 'POST', '/dr/v1/appointment', key, body)),
      );
      assertOneRan(responses, 201);
      assert.equal(await appointments(), before + 1);
    }
  });

  it('a retry that arrives while the first runs waits for it and gets its answer, also from another app', async () => {
    const key = newKey();
    probe.runs = probeTwo.runs = probe.started = 0;
    probe.close();
    const first = keyed(t.app, p.client.token, 'POST', Probe.URL, key, { n: 1 });
    await until(() => probe.started === 1);
    const sameApp = keyed(t.app, p.client.token, 'POST', Probe.URL, key, { n: 1 });
    const otherApp = keyed(two.app, p.client.token, 'POST', Probe.URL, key, { n: 1 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    probe.open();
    assertOneRan(await Promise.all([first, sameApp, otherApp]), 201);
    assert.deepEqual([probe.runs, probeTwo.runs], [1, 0]);
  });

  it('a claim whose process stopped answering is taken over once its lease is over', async () => {
    const key = newKey();
    probe.runs = probe.started = 0;
    probe.close();
    const first = keyed(t.app, p.client.token, 'POST', Probe.URL, key, { n: 2 });
    await until(() => probe.started === 1);
    // The first request's process is gone, as far as the database can tell: its lease ran out.
    await t.ctx.storage.db
      .updateTable('idempotency_keys')
      .set({ claimed_until: Date.now() - 1 })
      .where('idempotency_key', '=', key)
      .execute();
    const second = keyed(two.app, p.client.token, 'POST', Probe.URL, key, { n: 2 });
    await until(() => probeTwo.started === 1);
    probe.open();
    assert.deepEqual((await first).json(), { run: 1 });
    const taken = await second;
    assert.equal(taken.statusCode, 201);
    assert.equal(taken.headers['idempotent-replayed'], undefined);
    const replay = await keyed(t.app, p.client.token, 'POST', Probe.URL, key, { n: 2 });
    assert.equal(replay.body, taken.body, 'the response kept is the one of the request that held the key');
  });
});

describe(`idempotency keys: a wait that ends (${DIALECT})`, () => {
  let t: TestApp;
  let client: TestClient;
  const probe = new Probe();

  before(async () => {
    t = await createTestApp({ env: { CPS_IDEMPOTENCY_WAIT_MS: '50' }, setup: (app) => probe.install(app) });
    client = await createTestClient(t.ctx);
  });
  after(async () => t.close());

  it('a retry still waiting when the wait is over is 409 with Retry-After, in the family body; after the first ends it replays', async () => {
    const key = newKey();
    probe.close();
    const first = keyed(t.app, client.token, 'POST', Probe.URL, key, {});
    await until(() => probe.started === 1);
    const busy = await keyed(t.app, client.token, 'POST', Probe.URL, key, {});
    assert.equal(busy.statusCode, 409);
    assert.equal(busy.headers['retry-after'], '1');
    assert.deepEqual(busy.json(), {
      error: { code: 'IDEMPOTENCY_KEY_IN_USE', message: 'A request with this Idempotency-Key is still running; retry shortly.' },
    });
    probe.open();
    const done = await first;
    assert.equal(done.statusCode, 201);
    const replay = await keyed(t.app, client.token, 'POST', Probe.URL, key, {});
    assert.deepEqual([replay.body, replay.headers['idempotent-replayed']], [done.body, 'true']);
    assert.equal(probe.runs, 1);
  });
});
