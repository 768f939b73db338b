import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { inTransaction } from '../../src/db/index.ts';
import { recordEvent } from '../../src/jobs/outbox.ts';
import {
  PermanentError,
  RetryableError,
  claimJobs,
  enqueue,
  enqueueMany,
  getJob,
  listJobs,
  releaseExpired,
  renewLease,
  retryJob,
  settleJob,
  settleSucceeded,
  takeFollowing,
} from '../../src/jobs/queue-repo.ts';
import { randomBytes } from 'node:crypto';
import { ChainSeal } from '../../src/access-log/seal.ts';
import { BusinessService } from '../../src/modules/businesses/index.ts';
import { createTestApp, DIALECT } from '../support.ts';
import { Registry } from 'prom-client';
import { JobQueue } from '../../src/jobs/queue.ts';
import { createLogger } from '../../src/logger.ts';
import { createJobsFixture, gate, until, type JobsFixture } from './support.ts';
import { reviewEvent } from '../modules/webhooks/support.ts';

describe(`jobs (${DIALECT})`, () => {
  let f: JobsFixture;
  before(async () => {
    f = await createJobsFixture();
  });
  beforeEach(async () => f.reset());
  after(async () => f.close());

  /** Makes a job due now, standing in for the wait of its retry delay. */
  const makeDue = (id: string) => f.storage.db.updateTable('jobs').set({ due_at: Date.now() }).where('id', '=', id).execute();

  describe("enqueue in the caller's transaction", () => {
    it('an enqueue rolled back with its transaction leaves nothing', async () => {
      await assert.rejects(
        inTransaction(f.storage.db, async (trx) => {
          await enqueue(trx, { kind: 'test.noop', businessId: f.businessId, payload: { n: 1 } });
          await recordEvent(trx, { businessId: f.businessId, type: 'external_review.request', payload: reviewEvent(f.businessId) });
          throw new Error('the change fails');
        }),
        /the change fails/,
      );
      assert.equal((await f.storage.db.selectFrom('jobs').selectAll().execute()).length, 0);
      assert.equal((await f.storage.db.selectFrom('events').selectAll().execute()).length, 0);
    });

    it('a committed enqueue is stored pending, due now, and a dedupe key adds it once', async () => {
      const [first, second] = await inTransaction(f.storage.db, async (trx) => [
        await enqueue(trx, { kind: 'test.noop', businessId: f.businessId, payload: { n: 1 }, dedupeKey: 'k1' }),
        await enqueue(trx, { kind: 'test.noop', businessId: f.businessId, payload: { n: 2 }, dedupeKey: 'k1' }),
      ]);
      assert.equal(first, second);
      const job = await getJob(f.storage.db, first!);
      assert.equal(job?.status, 'pending');
      assert.deepEqual(job?.payload, { n: 1 });
      assert.equal(job?.attempts, 0);
      assert.ok(Math.abs(job!.dueAt - Date.now()) < 60_000);
    });
  });

  describe('workers', () => {
    it('run a job promptly after its enqueue commits, once', async () => {
      const ran: string[] = [];
      f.queue.register('test.noop', async ({ job }) => {
        ran.push(job.id);
      });
      await f.queue.start();
      assert.equal(f.queue.working, true);
      const id = await enqueue(f.storage.db, { kind: 'test.noop', payload: {} });
      await until(async () => (await getJob(f.storage.db, id))?.status === 'succeeded');
      assert.deepEqual(ran, [id]);
      const job = await getJob(f.storage.db, id);
      assert.equal(job?.attempts, 1);
      assert.ok(job?.finishedAt);
    });

    it('run at most `concurrency` jobs of a kind at once', async () => {
      let running = 0;
      let peak = 0;
      f.queue.register(
        'test.slow',
        async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setTimeout(resolve, 5));
          running--;
        },
        { concurrency: 3 },
      );
      await inTransaction(f.storage.db, async (trx) => {
        for (let i = 0; i < 20; i++) await enqueue(trx, { kind: 'test.slow', payload: { i } });
      });
      await f.queue.start();
      await until(async () => (await listJobs(f.storage.db, { status: 'succeeded', limit: 100 })).length === 20);
      assert.equal(peak, 3);
    });

    it('do not run a job before it is due', async () => {
      f.queue.register('test.noop', async () => {});
      const id = await enqueue(f.storage.db, { kind: 'test.noop', payload: {}, dueAt: Date.now() + 3_600_000 });
      assert.equal(await f.queue.runDue(), 0);
      assert.equal((await getJob(f.storage.db, id))?.status, 'pending');
    });
  });

  describe('retries', () => {
    it("follow the kind's schedule, then end failed and stay queryable; a manual retry queues again", async () => {
      let fail = true;
      f.queue.register(
        'test.flaky',
        async () => {
          if (fail) throw new Error('remote said 500');
        },
        { retrySchedule: [5, 300] },
      );
      const id = await enqueue(f.storage.db, { kind: 'test.flaky', businessId: f.businessId, payload: {} });

      for (const [attempt, delay] of [
        [1, 5],
        [2, 300],
      ] as const) {
        const before = Date.now();
        await f.queue.runDue();
        const job = (await getJob(f.storage.db, id))!;
        assert.equal(job.status, 'pending');
        assert.equal(job.attempts, attempt);
        assert.equal(job.lastError, 'remote said 500');
        assert.ok(job.dueAt >= before + delay * 1000 && job.dueAt <= Date.now() + delay * 1000, `attempt ${attempt} waits ${delay} s`);
        await makeDue(id);
      }
      await f.queue.runDue();
      let job = (await getJob(f.storage.db, id))!;
      assert.equal(job.status, 'failed', 'one attempt plus one per delay');
      assert.equal(job.attempts, 3);
      assert.deepEqual(
        (await listJobs(f.storage.db, { status: 'failed', businessId: f.businessId })).map((j) => j.id),
        [id],
      );

      fail = false;
      job = (await retryJob(f.storage.db, id, { businessId: f.businessId }))!;
      assert.equal(job.status, 'pending');
      assert.equal(job.attempts, 0);
      await f.queue.runDue();
      job = (await getJob(f.storage.db, id))!;
      assert.equal(job.status, 'succeeded');
      assert.equal(job.attempts, 1);
    });

    it('wait the longer of the scheduled delay and the Retry-After the handler reports', async () => {
      let retryAfter = 0;
      f.queue.register(
        'test.busy',
        async () => {
          throw new RetryableError('429', { retryAfterSeconds: retryAfter });
        },
        { retrySchedule: [5, 5, 5] },
      );
      const id = await enqueue(f.storage.db, { kind: 'test.busy', payload: {} });
      for (const [reported, expected] of [
        [120, 120],
        [2, 5],
      ] as const) {
        retryAfter = reported;
        const before = Date.now();
        await f.queue.runDue();
        const job = (await getJob(f.storage.db, id))!;
        assert.ok(job.dueAt >= before + expected * 1000 && job.dueAt <= Date.now() + expected * 1000, `Retry-After ${reported} waits ${expected} s`);
        await makeDue(id);
      }
    });

    it('stop at a PermanentError', async () => {
      f.queue.register('test.gone', async () => {
        throw new PermanentError('410 gone');
      });
      const id = await enqueue(f.storage.db, { kind: 'test.gone', payload: {} });
      await f.queue.runDue();
      const job = (await getJob(f.storage.db, id))!;
      assert.equal(job.status, 'failed');
      assert.equal(job.attempts, 1);
      assert.equal(job.lastError, '410 gone');
    });

    it('a retry asked while an attempt runs takes effect as it ends: after a failure, due now with attempts afresh', async () => {
      const id = await enqueue(f.storage.db, { kind: 'test.manual', payload: {} });
      const [failing] = await claimJobs(f.storage.db, 'test.manual', 1, 60_000, 'worker-a');
      assert.equal((await retryJob(f.storage.db, id))?.status, 'running', 'the attempt goes on');
      const before = Date.now();
      const recorded = await settleJob(f.storage.db, failing!, { status: 'failed', error: 'HTTP 503' });
      assert.equal(recorded?.status, 'pending');
      assert.ok(recorded?.status === 'pending' && recorded.dueAt <= Date.now(), 'what was recorded: due now');
      let job = (await getJob(f.storage.db, id))!;
      assert.equal(job.status, 'pending');
      assert.equal(job.attempts, 0);
      assert.ok(job.dueAt >= before && job.dueAt <= Date.now());
      assert.equal(job.lastError, 'HTTP 503');
      // A failure the schedule would retry later is retried now too.
      const [retrying] = await claimJobs(f.storage.db, 'test.manual', 1, 60_000, 'worker-a');
      await retryJob(f.storage.db, id);
      const later = await settleJob(f.storage.db, retrying!, { status: 'pending', error: 'HTTP 503', dueAt: Date.now() + 3_600_000 });
      assert.ok(later?.status === 'pending' && later.dueAt <= Date.now(), 'answered due now, not in an hour');
      assert.ok((await getJob(f.storage.db, id))!.dueAt <= Date.now());
      // A success stands: the delivery asked for happened.
      const [succeeding] = await claimJobs(f.storage.db, 'test.manual', 1, 60_000, 'worker-a');
      await retryJob(f.storage.db, id);
      assert.deepEqual([...(await settleSucceeded(f.storage.db, [succeeding!]))], [id]);
      job = (await getJob(f.storage.db, id))!;
      assert.equal(job.status, 'succeeded');
      const stored = await f.storage.db.selectFrom('jobs').select('retry_requested_at').where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(stored.retry_requested_at, null);
    });

    it("end failed on their last attempt even when the kind's record of the failure always fails", async () => {
      let recorded = 0;
      f.queue.register(
        'test.poisoned',
        async () => {
          throw new Error('cannot read the payload');
        },
        {
          retrySchedule: [0],
          onFailedAttempt: async () => {
            recorded++;
            throw new Error('cannot record it either');
          },
        },
      );
      const id = await enqueue(f.storage.db, { kind: 'test.poisoned', payload: null });
      await f.queue.runDue();
      assert.equal((await getJob(f.storage.db, id))!.status, 'running', 'an earlier attempt is left to its lease');
      await f.storage.db
        .updateTable('jobs')
        .set({ lease_until: Date.now() - 1 })
        .where('id', '=', id)
        .execute();
      await releaseExpired(f.storage.db);
      await makeDue(id);
      await f.queue.runDue();
      const job = (await getJob(f.storage.db, id))!;
      assert.equal(job.status, 'failed', 'the last attempt ends it, without the record');
      assert.equal(job.attempts, 2);
      assert.equal(job.lastError, 'cannot read the payload');
      assert.equal(recorded, 2);
    });

    it('a job whose lease ran out runs again, and the late attempt cannot overwrite it', async () => {
      const ran: number[] = [];
      f.queue.register('test.noop', async ({ job }) => {
        ran.push(job.attempts);
      });
      const id = await enqueue(f.storage.db, { kind: 'test.noop', payload: {} });
      // A worker that claimed the job and died: its lease runs out.
      const [dead] = await claimJobs(f.storage.db, 'test.noop', 1, 1, 'dead-worker');
      await until(() => Date.now() > dead!.startedAt! + 1);
      assert.deepEqual(
        (await releaseExpired(f.storage.db)).map((j) => j.id),
        [id],
      );
      await f.queue.runDue();
      const job = (await getJob(f.storage.db, id))!;
      assert.equal(job.status, 'succeeded');
      assert.deepEqual(ran, [2], 'the dead attempt counts');
    });

    it("a job whose last attempt's lease ran out ends failed", async () => {
      f.queue.register('test.noop', async () => {}, { retrySchedule: [] });
      const id = await enqueue(f.storage.db, { kind: 'test.noop', payload: {} });
      await claimJobs(f.storage.db, 'test.noop', 1, 1, 'dead-worker');
      await until(async () => (await releaseExpired(f.storage.db)).length === 1);
      await f.queue.runDue();
      const job = (await getJob(f.storage.db, id))!;
      assert.equal(job.status, 'failed');
      assert.match(job.lastError!, /lease expired/);
    });
  });

  describe('shutdown', () => {
    it('waits for running jobs to finish', async () => {
      const release = gate();
      const started = gate();
      f.queue.register('test.wait', async () => {
        started.open();
        await release.promise;
      });
      await f.queue.start();
      const id = await enqueue(f.storage.db, { kind: 'test.wait', payload: {} });
      await started.promise;
      let stopped = false;
      const stopping = f.queue.stop(60_000).then(() => {
        stopped = true;
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(stopped, false, 'stop waits for the running job');
      release.open();
      await stopping;
      assert.equal((await getJob(f.storage.db, id))?.status, 'succeeded');
    });

    it("gives up after the grace period, aborts the handler's signal and leaves the job to its lease", async () => {
      const started = gate();
      let aborted = false;
      f.queue.register('test.stuck', async ({ signal }) => {
        started.open();
        signal.addEventListener('abort', () => {
          aborted = true;
        });
        await new Promise(() => {}); // ignores the signal: never settles
      });
      await f.queue.start();
      const id = await enqueue(f.storage.db, { kind: 'test.stuck', payload: {} });
      await started.promise;
      await f.queue.stop(10);
      assert.equal(aborted, true);
      assert.equal((await getJob(f.storage.db, id))?.status, 'running', 'claimed again elsewhere once its lease runs out');
    });
  });

  describe('leases across hosts', () => {
    it('a process whose clock runs ahead does not take a live lease for expired, nor one behind a dead one for live', {
      skip: DIALECT !== 'postgres' && 'several hosts share only a PostgreSQL database',
    }, async () => {
      f.queue.register('test.noop', async () => {});
      const id = await enqueue(f.storage.db, { kind: 'test.noop', payload: {} });
      const realNow = Date.now;
      const skewed = async <T>(ms: number, work: () => Promise<T>): Promise<T> => {
        Date.now = () => realNow() + ms;
        try {
          return await work();
        } finally {
          Date.now = realNow;
        }
      };
      // Host A claims with a 60 s lease and renews it; host B's clock is 2 minutes ahead.
      const [claimed] = await claimJobs(f.storage.db, 'test.noop', 1, 60_000, 'host-a');
      assert.equal(await renewLease(f.storage.db, claimed!, 60_000), true);
      assert.deepEqual(await skewed(120_000, () => releaseExpired(f.storage.db)), [], 'a live lease was taken for expired');
      assert.equal((await getJob(f.storage.db, id))?.status, 'running');
      // Host C's clock is 2 minutes behind: it claims with a 1 s lease and dies; host A sweeps 2 s later.
      await settleJob(f.storage.db, claimed!, { status: 'pending', error: 'again', dueAt: 0 });
      await skewed(-120_000, () => claimJobs(f.storage.db, 'test.noop', 1, 1_000, 'host-c'));
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      assert.deepEqual(
        (await releaseExpired(f.storage.db)).map((job) => job.id),
        [id],
        'a dead lease was kept for two minutes more',
      );
    });
  });

  describe('interrupted attempts', () => {
    it('an attempt that shutdown interrupts spends no attempt: a job on its last one runs again, not ends failed', async () => {
      const started = gate();
      const ran: number[] = [];
      const handler = async ({ job, signal }: { job: { attempts: number }; signal: AbortSignal }) => {
        ran.push(job.attempts);
        if (ran.length > 1) return;
        started.open();
        // Honours the signal, as the webhook and push senders do.
        await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error)));
      };
      f.queue.register('test.interrupted', handler, { retrySchedule: [] });
      await f.queue.start();
      const id = await enqueue(f.storage.db, { kind: 'test.interrupted', payload: {} });
      await started.promise;
      await f.queue.stop(10);
      // Before, the attempt stayed counted: once its lease ran out, the next claim found the job out
      // of attempts and failed it unsent ("lease expired").
      const given = (await getJob(f.storage.db, id))!;
      assert.equal(given.status, 'pending', 'queued again at once, not left to its lease');
      assert.equal(given.attempts, 0);
      // The next process.
      const next = new JobQueue(f.storage, createLogger('silent'), new Registry());
      next.register('test.interrupted', handler, { retrySchedule: [] });
      await next.runDue();
      const job = (await getJob(f.storage.db, id))!;
      assert.equal(job.status, 'succeeded', `the job was never tried again: ${job.lastError}`);
      assert.deepEqual(ran, [1, 1]);
    });
  });

  describe('events', () => {
    it('fan out into one job per recipient, once even when dispatched twice', async () => {
      const delivered: string[] = [];
      f.queue.register('test.delivery', async ({ job }) => {
        delivered.push((job.payload as { to: string }).to);
      });
      f.queue.onEvent('external_review.request', async (trx, events) => {
        for (const event of events) {
          for (const to of ['sub_a', 'sub_b']) {
            await enqueue(trx, {
              kind: 'test.delivery',
              businessId: event.businessId,
              payload: { to, eventId: event.id },
              dedupeKey: `${event.id}:${to}`,
            });
          }
        }
      });
      const eventId = await inTransaction(f.storage.db, (trx) =>
        recordEvent(trx, { businessId: f.businessId, type: 'external_review.request', payload: reviewEvent(f.businessId) }),
      );
      await f.queue.runDue();
      assert.deepEqual(delivered.sort(), ['sub_a', 'sub_b']);

      const [dispatch] = await listJobs(f.storage.db, { kind: 'event.dispatch' });
      assert.equal(dispatch?.dedupeKey, eventId);
      await retryJob(f.storage.db, dispatch!.id);
      await f.queue.runDue();
      assert.equal(delivered.length, 2);
      assert.equal((await listJobs(f.storage.db, { kind: 'test.delivery' })).length, 2);
    });
  });

  describe('event dispatch in batches', () => {
    it('runs the dispatches claimed together in one call of the hook; one failing event holds back no other', async () => {
      const calls: string[][] = [];
      const delivered: string[] = [];
      f.queue.register('test.delivery', async ({ job }) => {
        delivered.push((job.payload as { eventId: string }).eventId);
      });
      const ids = await inTransaction(f.storage.db, async (trx) => {
        const recorded: string[] = [];
        for (let i = 0; i < 5; i++)
          recorded.push(await recordEvent(trx, { businessId: f.businessId, type: 'external_review.request', payload: reviewEvent(f.businessId, i) }));
        return recorded;
      });
      const poison = ids[2]!;
      f.queue.onEvent('external_review.request', async (trx, events) => {
        calls.push(events.map((event) => event.id).sort());
        for (const event of events) {
          if (event.id === poison) throw new Error('this event cannot be dispatched');
          await enqueue(trx, { kind: 'test.delivery', businessId: event.businessId, payload: { eventId: event.id }, dedupeKey: event.id });
        }
      });
      await f.queue.runDue();
      // All five in one call first; that transaction failed, so each was tried alone.
      assert.deepEqual(calls[0], [...ids].sort());
      assert.equal(calls.length, 6);
      assert.deepEqual(delivered.sort(), ids.filter((id) => id !== poison).sort());
      const dispatches = await listJobs(f.storage.db, { kind: 'event.dispatch' });
      const failed = dispatches.filter((job) => job.status !== 'succeeded');
      assert.deepEqual(
        failed.map((job) => (job.payload as { eventId: string }).eventId),
        [poison],
      );
      assert.equal(failed[0]!.status, 'pending');
      assert.match(failed[0]!.lastError ?? '', /cannot be dispatched/);
    });
  });

  describe('event dispatch settlement', () => {
    it('records nothing of a dispatch attempt over a newer attempt of its job, and keeps the work it committed', async () => {
      await inTransaction(f.storage.db, (trx) =>
        recordEvent(trx, { businessId: f.businessId, type: 'external_review.request', payload: reviewEvent(f.businessId) }),
      );
      f.queue.register('test.delivery', async () => {});
      f.queue.onEvent('external_review.request', async (trx) => {
        await enqueue(trx, { kind: 'test.delivery', payload: {} });
        // The attempt's lease ran out and the job was claimed again meanwhile.
        await trx.updateTable('jobs').set({ attempts: 2 }).where('kind', '=', 'event.dispatch').execute();
      });
      await f.queue.runDue();
      // The work committed; the late attempt recorded nothing over the newer one, still running.
      assert.equal((await listJobs(f.storage.db, { kind: 'test.delivery' }))[0]?.status, 'succeeded');
      const [dispatch] = await listJobs(f.storage.db, { kind: 'event.dispatch' });
      assert.deepEqual([dispatch?.status, dispatch?.attempts], ['running', 2]);
      assert.equal(await f.queue.runDue(), 0);
    });

    it('settles a dispatch that succeeds, and leaves one that fails to its retry', async () => {
      const ids = await inTransaction(f.storage.db, async (trx) => [
        await recordEvent(trx, { businessId: f.businessId, type: 'external_review.request', payload: reviewEvent(f.businessId, 1) }),
        await recordEvent(trx, { businessId: f.businessId, type: 'external_review.request', payload: reviewEvent(f.businessId, 2) }),
      ]);
      f.queue.onEvent('external_review.request', async (_trx, events) => {
        if (events.some((event) => event.id === ids[1])) throw new Error('cannot be dispatched');
      });
      await f.queue.runDue();
      const dispatches = await listJobs(f.storage.db, { kind: 'event.dispatch' });
      const statusOf = (eventId: string) => dispatches.find((job) => (job.payload as { eventId: string }).eventId === eventId);
      assert.deepEqual([statusOf(ids[0]!)?.status, statusOf(ids[0]!)?.attempts], ['succeeded', 1]);
      assert.deepEqual([statusOf(ids[1]!)?.status, statusOf(ids[1]!)?.attempts], ['pending', 1]);
    });
  });

  describe('event dispatch of a key', () => {
    it("gives each hook a key's events in their sequence, whatever their types, when a dispatch takes the later ones along", async () => {
      const key = 'appointment:apt_layers';
      const types = ['external_review.request', 'google_review.request', 'external_review.request', 'google_review.request'] as const;
      await inTransaction(f.storage.db, async (trx) => {
        for (const [i, type] of types.entries()) {
          const payload = { ...reviewEvent(f.businessId, i), google_review_link: 'https://cps.test/reviews/google' };
          await recordEvent(trx, { businessId: f.businessId, type, orderingKey: key, payload });
        }
      });
      const seen: number[] = [];
      for (const type of new Set(types)) {
        f.queue.onEvent(type, async (_trx, events) => {
          for (const event of events) seen.push(event.sequence!);
        });
      }
      await f.queue.runDue();
      assert.deepEqual(seen, [1, 2, 3, 4]);
      const dispatches = await listJobs(f.storage.db, { kind: 'event.dispatch' });
      assert.deepEqual(
        dispatches.map((job) => job.status),
        ['succeeded', 'succeeded', 'succeeded', 'succeeded'],
      );
    });
  });

  describe('ordered jobs', () => {
    it("are claimed one at a time per key, and a run of a key's later jobs is taken along up to its first gap, whatever else is pending", async () => {
      const ordered = (key: string, seq: number, dueAt?: number) => ({ kind: 'test.ordered', payload: { key, seq }, ordering: { key, seq }, dueAt });
      const noop = Array.from({ length: 300 }, (_, n) => ({ kind: 'test.noop', payload: { n } }));
      // Seq 5 of key a falls due in an hour: a gap in its run.
      await inTransaction(f.storage.db, async (trx) => {
        await enqueueMany(trx, noop);
        await enqueueMany(trx, [
          ...[1, 2, 3, 4, 6].map((seq) => ordered('a', seq)),
          ordered('a', 5, Date.now() + 3_600_000),
          ...[1, 2].map((seq) => ordered('b', seq)),
          ordered('c', 1),
        ]);
      });
      const seqs = (jobs: { payload: unknown }[]) =>
        jobs
          .map((job) => job.payload as { key: string; seq: number })
          .map((p) => `${p.key}${p.seq}`)
          .sort();
      const claimed = await claimJobs(f.storage.db, 'test.ordered', 10, 60_000, 'worker');
      assert.deepEqual(seqs(claimed), ['a1', 'b1', 'c1']);
      // Whether later jobs of its key wait for it.
      assert.deepEqual(claimed.map((job) => [(job.payload as { key: string }).key, job.holdsBack]).sort(), [
        ['a', true],
        ['b', true],
        ['c', false],
      ]);
      const taken = await inTransaction(f.storage.db, (trx) => takeFollowing(trx, 'test.ordered', 'a', 1, 200, 'worker'));
      assert.deepEqual(seqs(taken), ['a2', 'a3', 'a4']);
      assert.deepEqual(
        taken.map((job) => [job.status, job.attempts]),
        [
          ['succeeded', 1],
          ['succeeded', 1],
          ['succeeded', 1],
        ],
      );
      // a1, b1 and c1 still run: nothing else of their keys is claimable, nor taken along past the gap.
      assert.deepEqual(await claimJobs(f.storage.db, 'test.ordered', 10, 60_000, 'worker'), []);
      assert.deepEqual(await inTransaction(f.storage.db, (trx) => takeFollowing(trx, 'test.ordered', 'a', 4, 200, 'worker')), []);
      const pending = await f.storage.db.selectFrom('jobs').select(['kind', 'ordering_seq']).where('status', '=', 'pending').execute();
      assert.equal(pending.filter((job) => job.kind === 'test.noop').length, 300);
      assert.deepEqual(
        pending
          .filter((job) => job.kind === 'test.ordered')
          .map((job) => Number(job.ordering_seq))
          .sort(),
        [2, 5, 6],
      );
    });
  });

  describe('queries', () => {
    it("read another business's job exactly like an unknown one", async () => {
      const other = (await new BusinessService({ db: f.storage.db, chainSeal: new ChainSeal(randomBytes(32)) }).createBusiness('Other')).business_id;
      const id = await enqueue(f.storage.db, { kind: 'test.noop', businessId: other, payload: {} });
      assert.equal(await getJob(f.storage.db, id, { businessId: f.businessId }), null);
      assert.equal(await getJob(f.storage.db, 'job_unknown', { businessId: f.businessId }), null);
      assert.equal(await retryJob(f.storage.db, id, { businessId: f.businessId }), null);
      assert.deepEqual(await listJobs(f.storage.db, { businessId: f.businessId }), []);
      assert.equal((await getJob(f.storage.db, id, { businessId: other }))?.id, id);
    });
  });
});

describe(`jobs in the app (${DIALECT})`, () => {
  it('exposes queue depth, outcomes and start delay at /metrics', async () => {
    const t = await createTestApp();
    try {
      t.ctx.jobs.register('test.noop', async () => {});
      await enqueue(t.ctx.storage.db, { kind: 'test.noop', payload: {} });
      await enqueue(t.ctx.storage.db, { kind: 'test.later', payload: {}, dueAt: Date.now() + 60_000 });
      await t.ctx.jobs.runDue();
      const text = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      assert.match(text, /cps_jobs_queue_depth\{kind="test.later",status="pending"\} 1/);
      assert.match(text, /cps_jobs_outcomes_total\{kind="test.noop",outcome="succeeded"\} 1/);
      assert.match(text, /cps_job_start_delay_seconds_count\{kind="test.noop"\} 1/);
    } finally {
      await t.close();
    }
  });
});
