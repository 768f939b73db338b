/**
 * Webhook delivery across real `cps serve` processes: nothing is lost when a process is killed
 * mid-delivery, and two processes on one PostgreSQL database share the work without sending any
 * attempt twice at once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { inTransaction, openStorage, type Storage } from '../../../src/db/index.ts';
import { recordEvent } from '../../../src/jobs/outbox.ts';
import { ADMIN_TOKEN, createTestDatabase, DIALECT, PG_URL, type TestDatabase } from '../../support.ts';
import { sharedKeys, startServerProcess, type ServerProcess } from '../../process.ts';
import { reviewEvent, startReceiver, until, type Answer } from './support.ts';

const BASE = '/notification/v1/connect/webhook/subscriptions';

async function json(response: Response): Promise<any> {
  const text = await response.text();
  if (!response.ok) throw new Error(`${response.status}: ${text}`);
  return JSON.parse(text);
}

/** A business, its token and a subscription to `endpoint`, through the server's own API. */
async function subscribe(url: string, endpoint: string): Promise<{ businessId: string; token: string; subscriptionId: string }> {
  const business = await json(
    await fetch(`${url}/admin/v1/businesses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Webhook Clinic' }),
    }),
  );
  const login = await json(
    await fetch(`${url}/connect-auth/v1/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: business.client_id, client_secret: business.client_secret }),
    }),
  );
  const token = login.access_token as string;
  const subscription = await json(
    await fetch(`${url}${BASE}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ endpoint }),
    }),
  );
  return { businessId: business.business_id, token, subscriptionId: subscription.id };
}

/** Records `count` events in transactions of ten, as changes elsewhere would. */
async function recordEvents(storage: Storage, businessId: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 10) {
    ids.push(
      ...(await inTransaction(storage.db, async (trx) => {
        const batch: string[] = [];
        for (let j = i; j < Math.min(count, i + 10); j++) {
          batch.push(await recordEvent(trx, { businessId, type: 'external_review.request', payload: reviewEvent(businessId, j) }));
        }
        return batch;
      })),
    );
  }
  return ids;
}

function killHard(server: ServerProcess): Promise<number | null> {
  server.child.kill('SIGKILL');
  return server.exited;
}

describe(`webhook delivery across processes (${DIALECT})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  before(async () => {
    database = await createTestDatabase();
    env = {
      CPS_DATA_DIR: database.dataDir,
      ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
      CPS_WORKERS: '1',
      CPS_ADMIN_TOKEN: ADMIN_TOKEN,
      CPS_WEBHOOK_RETRY_SCHEDULE: '1,1,1',
      ...sharedKeys(),
      LOG_LEVEL: 'warn',
    };
  });
  after(() => database.drop());

  it('delivers every event after the server is killed with SIGKILL mid-delivery', async () => {
    // Slow failures first, so that at the kill some attempts are in flight and the rest wait to retry.
    let phase: 'failing' | 'ok' = 'failing';
    const receiver = await startReceiver((): Answer => (phase === 'failing' ? { status: 503, delayMs: 1500 } : { status: 200 }));
    const storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2 });
    let server = await startServerProcess(env);
    try {
      const { businessId, token, subscriptionId } = await subscribe(server.url, receiver.url);
      const ids = await recordEvents(storage, businessId, 20);
      // Killed once every event has its deliveries (the event dispatch's own crash recovery is the
      // jobs' business) and some attempts are under way.
      await until(
        async () =>
          receiver.received.length >= 5 &&
          Number(
            (
              await storage.db
                .selectFrom('webhook_deliveries')
                .select((eb) => eb.fn.countAll().as('n'))
                .executeTakeFirstOrThrow()
            ).n,
          ) === 20,
      );
      await killHard(server);
      phase = 'ok';
      // Anything received from now on was sent by the restarted process.
      const restartedAt = Date.now();
      server = await startServerProcess(env);
      const delivered = () => new Set(receiver.received.filter((d) => d.at >= restartedAt).map((d) => String(d.headers['webhook-id'])));
      await until(() => ids.every((id) => delivered().has(id)), 100);
      // Every delivery reads as succeeded once its attempt is recorded.
      await until(async () => {
        const list = await json(await fetch(`${server.url}${BASE}/${subscriptionId}/deliveries`, { headers: { authorization: `Bearer ${token}` } }));
        return list.data.length === 20 && list.data.every((d: { status: string }) => d.status === 'succeeded');
      }, 100);
    } finally {
      await killHard(server);
      await storage.destroy();
      await receiver.close();
    }
  });

  it('shares 200 events between two processes on PostgreSQL, each attempt sent once at a time', {
    skip: !PG_URL && 'needs PostgreSQL (npm run test:pg)',
  }, async () => {
    // Every seventh event fails its first attempt, so retries too are claimed across processes.
    const receiver = await startReceiver((delivery, nth) => {
      const n = Number(JSON.parse(delivery.body).data.appointment_id.slice(4));
      return { status: n % 7 === 0 && nth === 1 ? 500 : 200, delayMs: 5 };
    });
    const storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2 });
    const servers = [await startServerProcess(env), await startServerProcess(env)];
    try {
      const { businessId } = await subscribe(servers[0]!.url, `${receiver.url}/two`);
      const ids = await recordEvents(storage, businessId, 200);
      const ok = () => new Set(receiver.received.map((d) => String(d.headers['webhook-id'])));
      await until(() => ids.every((id) => ok().has(id)) && receiver.received.length >= 200 + Math.ceil(200 / 7), 100);
      assert.equal(receiver.maxConcurrentPerId(), 1, 'no webhook-id was in flight twice at once');
      const perId = new Map<string, number>();
      for (const d of receiver.received) perId.set(String(d.headers['webhook-id']), (perId.get(String(d.headers['webhook-id'])) ?? 0) + 1);
      assert.equal(perId.size, 200);
      const workers = await storage.db.selectFrom('jobs').select('locked_by').distinct().where('kind', '=', 'webhook.delivery').execute();
      assert.ok(workers.length >= 1);
    } finally {
      await Promise.all(servers.map(killHard));
      await storage.destroy();
      await receiver.close();
    }
  });
});
