import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely';
import { Registry } from 'prom-client';
import { createLogger } from '../../src/logger.ts';
import { inTransaction, observeTransactions, openStorage, type Db } from '../../src/db/index.ts';
import { enqueue, getJob, jobRow } from '../../src/jobs/queue-repo.ts';
import { recordEvent } from '../../src/jobs/outbox.ts';
import { reviewEvent } from '../modules/webhooks/support.ts';
import { JobQueue } from '../../src/jobs/queue.ts';
import { DIALECT } from '../support.ts';
import { createJobsFixture, gate, until, type JobsFixture } from './support.ts';

/** Holds the answer of the next job claim (the update of `jobs` with a `with` clause) until released. */
class ClaimGate implements KyselyPlugin {
  private armed = false;
  private readonly claims = new WeakSet<object>();
  readonly reached = gate();
  readonly release = gate();

  arm(): void {
    this.armed = true;
  }

  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    if (this.armed && args.node.kind === 'UpdateQueryNode' && args.node.with) {
      this.armed = false;
      this.claims.add(args.queryId);
    }
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.claims.has(args.queryId)) {
      this.reached.open();
      await this.release.promise;
    }
    return args.result;
  }
}

describe(`job wake-ups (${DIALECT})`, () => {
  let f: JobsFixture;
  before(async () => {
    f = await createJobsFixture();
  });
  beforeEach(async () => f.reset());
  after(async () => f.close());

  it('a job of a key enqueued while the one before it runs is claimed once that one settles, not at the next poll', { timeout: 20_000 }, async () => {
    // The poll (a minute) cannot stand in for the claim after the settlement within the test.
    const queue = new JobQueue(f.storage, createLogger('silent'), new Registry(), { pollMs: 60_000 });
    try {
      const first = gate();
      const ran: number[] = [];
      queue.register('test.ordered', async ({ job }) => {
        const { seq } = job.payload as { seq: number };
        ran.push(seq);
        if (seq === 1) await first.promise;
      });
      const seen: number[] = [];
      const event = (db: Db) =>
        recordEvent(db, {
          businessId: f.businessId,
          type: 'external_review.request',
          orderingKey: 'appointment:apt_k',
          payload: reviewEvent(f.businessId),
        });
      queue.onEvent('external_review.request', async (trx, events) => {
        for (const event of events) seen.push(event.sequence!);
        // The next event commits while this one is being dispatched (after its claim).
        if (seen.length === 1) await event(trx);
      });
      await queue.start();
      const ordered = (seq: number) => enqueue(f.storage.db, { kind: 'test.ordered', payload: { seq }, ordering: { key: 'k', seq } });
      await ordered(1);
      await inTransaction(f.storage.db, (trx) => event(trx));
      await until(() => ran.length === 1);
      // It wakes the workers, whose claim finds it held back by the one running.
      await ordered(2);
      first.open();
      await until(() => ran.length === 2 && seen.length === 2);
      assert.deepEqual(ran, [1, 2]);
      assert.deepEqual(seen, [1, 2]);
    } finally {
      await queue.stop(0);
    }
  });

  it('a wake-up during a claim that finds fewer jobs than it asked for leads to another claim', { timeout: 20_000 }, async () => {
    const claimGate = new ClaimGate();
    // The poll (a minute) cannot stand in for the lost wake-up within the test.
    const queue = new JobQueue({ ...f.storage, db: f.storage.db.withPlugin(claimGate) }, createLogger('silent'), new Registry(), { pollMs: 60_000 });
    try {
      const ran: string[] = [];
      queue.register(
        'test.noop',
        async ({ job }) => {
          ran.push(job.id);
        },
        { concurrency: 2 },
      );
      await queue.start();
      claimGate.arm();
      const first = await enqueue(f.storage.db, { kind: 'test.noop', payload: { n: 1 } });
      // The claim woken by the first job has read the table and not yet returned...
      await claimGate.reached.promise;
      // ...when a second job commits and wakes the workers (NOTIFY on PostgreSQL, the local signal on
      // SQLite; called here too so that the wake-up surely lands inside the claim).
      const second = await enqueue(f.storage.db, { kind: 'test.noop', payload: { n: 2 } });
      (queue as unknown as { wake(kind: string): void }).wake('test.noop');
      if (DIALECT === 'postgres') await new Promise((resolve) => setTimeout(resolve, 200));
      claimGate.release.open();
      // The claim found one job of the two it asked for; the wake-up must not be taken for "drained".
      const deadline = Date.now() + 5_000;
      await until(async () => (await getJob(f.storage.db, second))?.status === 'succeeded' || Date.now() > deadline);
      assert.equal((await getJob(f.storage.db, first))?.status, 'succeeded');
      assert.equal((await getJob(f.storage.db, second))?.status, 'succeeded', 'the second job waited for the poll');
      assert.deepEqual(ran.sort(), [first, second].sort());
    } finally {
      await queue.stop(0);
    }
  });
});

describe(`jobs another process enqueues (${DIALECT})`, () => {
  let f: JobsFixture;
  before(async () => {
    f = await createJobsFixture();
  });
  after(() => f.close());

  it('are claimed without waiting for the poll (PostgreSQL: NOTIFY; SQLite: the data version other connections change)', async () => {
    const ran: string[] = [];
    const queue = new JobQueue(f.storage, createLogger('silent'), new Registry(), { pollMs: 60_000 });
    queue.register('test.elsewhere', async ({ job }) => {
      ran.push(job.id);
    });
    await queue.start();
    // A connection of its own, written to directly: no in-process signal reaches the queue.
    const other = openStorage({ databaseUrl: f.database.databaseUrl, dataDir: f.database.dataDir, poolSize: 1 });
    try {
      await until(() => queue.working);
      // The start polls once; the job comes after that poll has looked.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const row = jobRow({ kind: 'test.elsewhere', businessId: f.businessId, payload: {} });
      await other.db.insertInto('jobs').values(row).execute();
      const deadline = Date.now() + 5000;
      while (!ran.includes(row.id) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      assert.ok(ran.includes(row.id), 'claimed within 5 s (the poll is a minute)');
    } finally {
      await queue.stop(0);
      await other.destroy();
    }
  });
});

describe(`jobs woken from inside a request (${DIALECT})`, () => {
  let f: JobsFixture;
  before(async () => {
    f = await createJobsFixture();
  });
  after(() => f.close());

  it("run without the request's transaction observer (its audit entry never lands in a job's transaction)", async () => {
    const queue = new JobQueue(f.storage, createLogger('silent'), new Registry(), { pollMs: 60_000 });
    let observed = 0;
    const observer = {
      begun: async () => {
        observed++;
      },
      committed: () => {},
    };
    let ran = false;
    queue.register('test.observed', async () => {
      await inTransaction(f.storage.db, async (trx) => trx.selectFrom('jobs').select('id').limit(1).execute());
      ran = true;
    });
    await queue.start();
    try {
      await until(() => queue.working);
      // As a request does: its change enqueues the job in the change's transaction, under its observer.
      await observeTransactions(observer, () => inTransaction(f.storage.db, (trx) => enqueue(trx, { kind: 'test.observed', payload: {} })));
      assert.equal(observed, 1, "the request's own transaction is observed");
      const deadline = Date.now() + 5000;
      await until(() => ran || Date.now() > deadline);
      assert.ok(ran, 'the job ran within 5 s');
      assert.equal(observed, 1, "neither the claim nor the job's transaction consulted the request's observer");
    } finally {
      await queue.stop(0);
    }
  });
});
