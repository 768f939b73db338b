/**
 * The job workers through a PostgreSQL outage (played by a TCP proxy between the queue and the
 * database): an attempt whose outcome could not be recorded runs again after its lease, and the
 * LISTEN connection comes back, so notifications wake the workers again. PostgreSQL only: SQLite
 * has neither connections to lose nor LISTEN.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, afterEach, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { openStorage, type Storage } from '../../src/db/index.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { enqueue, getJob } from '../../src/jobs/queue-repo.ts';
import { JobQueue, type JobQueueOptions } from '../../src/jobs/queue.ts';
import { createLogger } from '../../src/logger.ts';
import { createTestDatabase, PG_URL, type TestDatabase } from '../support.ts';
import { startTcpProxy, type TcpProxy } from '../db/proxy.ts';
import { waitFor } from '../db/support.ts';
import { gate } from './support.ts';

describe('jobs through a database outage (postgres)', { skip: !PG_URL && 'needs PostgreSQL (npm run test:pg)' }, () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  /** The queue's storage, through the proxy. */
  let proxied: Storage;
  /** The test's own, direct. */
  let direct: Storage;
  let queue: JobQueue | null = null;
  const lines: Array<Record<string, unknown>> = [];

  before(async () => {
    database = await createTestDatabase();
    const target = new URL(database.databaseUrl!);
    proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
    direct = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 2 });
    await migrateToLatest(direct.db);
    proxied = openStorage({ databaseUrl: proxy.urlFor(database.databaseUrl!), dataDir: database.dataDir, poolSize: 3 });
  });
  afterEach(async () => {
    await proxy.restore();
    await queue?.stop(0);
    queue = null;
  });
  after(async () => {
    await proxied.destroy();
    await direct.destroy();
    await proxy.close();
    await database.drop();
  });

  function newQueue(options: JobQueueOptions): JobQueue {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    queue = new JobQueue(proxied, createLogger('info', sink), new Registry(), options);
    return queue;
  }
  const logged = (message: string) => lines.some((line) => line.msg === message);

  it('runs again, after its lease, an attempt whose outcome the outage kept from being recorded', async () => {
    const q = newQueue({ pollMs: 100 });
    const attempts: number[] = [];
    const release = gate();
    q.register(
      'test.fault',
      async ({ job }) => {
        attempts.push(job.attempts);
        if (job.attempts === 1) await release.promise;
      },
      { leaseMs: 600 },
    );
    await q.start();
    const id = await enqueue(direct.db, { kind: 'test.fault', payload: {} });
    await waitFor(() => attempts.length === 1, 'the first attempt');

    await proxy.cut();
    release.open();
    // Either way the attempt is left to its lease.
    await waitFor(
      () =>
        logged('recording a job outcome failed; the job runs again when its lease runs out') || logged('job attempt interrupted; left to its lease'),
      'the attempt left to its lease',
    );
    assert.equal((await getJob(direct.db, id))?.status, 'running', 'still claimed, under its lease');
    await proxy.restore();

    await waitFor(async () => (await getJob(direct.db, id))?.status === 'succeeded', 'the job succeeded');
    assert.deepEqual(attempts, [1, 2]);
    assert.equal((await getJob(direct.db, id))?.attempts, 2);
    assert.ok(logged('polling for jobs works again'));
    assert.deepEqual(
      lines.filter((line) => (line.level as number) >= 50),
      [],
      'nothing logged at level error',
    );
  });

  it('reconnects LISTEN: a job enqueued after the outage is woken by its notification, long before the next poll', async () => {
    // No poll comes within this test once the queue has started: only a notification can start a job.
    const q = newQueue({ pollMs: 600_000 });
    const ran: string[] = [];
    q.register('test.wake', async ({ job }) => {
      ran.push(job.id);
    });
    await q.start();
    assert.equal(q.notificationsConnected, true);
    const first = await enqueue(direct.db, { kind: 'test.wake', payload: {} });
    await waitFor(() => ran.includes(first), 'the job before the outage');

    await proxy.cut();
    await waitFor(() => !q.notificationsConnected, 'LISTEN lost');
    // Committed while the connection is down: its notification is lost, the poll on reconnecting finds it.
    const missed = await enqueue(direct.db, { kind: 'test.wake', payload: {} });
    await proxy.restore();
    await waitFor(() => q.notificationsConnected && ran.includes(missed), 'LISTEN back, and the missed job run');

    const woken = await enqueue(direct.db, { kind: 'test.wake', payload: {} });
    await waitFor(() => ran.includes(woken), 'the job woken by its notification');
    assert.ok(logged('job notifications lost; polling until they reconnect'));
    assert.ok(logged('job notifications reconnected'));
  });
});
