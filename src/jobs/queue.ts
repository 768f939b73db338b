/**
 * Durable background jobs: webhook deliveries, push notifications and the event dispatch that fans events out.
 *
 * - A job is a row in `jobs`, added by `enqueue(trx, ...)` in the transaction of the change that
 *   causes it, so it exists exactly when that change does.
 * - Delivery is AT LEAST ONCE: a worker can die after a handler's side effect and before the job is
 *   marked done, and the job then runs again. Handlers must be idempotent (webhooks send the same
 *   `webhook-id` on every attempt; fan-outs enqueue with a `dedupeKey`).
 * - Claiming: every server process runs workers. On PostgreSQL the claim locks rows with
 *   `FOR UPDATE SKIP LOCKED`, so processes share the work and no attempt runs twice at once. On
 *   SQLite only the process holding the `job_locks` lease runs workers; another process on the same
 *   file logs that it does not, and takes over when that lease runs out.
 * - A claim carries a lease, renewed while the handler runs. When a process dies its leases run out
 *   and the sweep returns those jobs to `pending`; the dead attempt still counts.
 * - Outcomes: the handler resolves (succeeded), throws `PermanentError` (failed), or throws anything
 *   else (retried after the kind's schedule: delay n is the wait after attempt n, and a
 *   `RetryableError`'s `retryAfterSeconds` lengthens it). A job out of attempts ends `failed` and
 *   stays queryable; `retryJob` queues it again.
 * - Waking: PostgreSQL NOTIFY (a trigger on `jobs`, sent at commit) and, on SQLite, an in-process
 *   signal from `enqueue`; a poll every `pollMs` catches jobs that fall due later, notifications
 *   missed while reconnecting, and jobs added by other processes on SQLite. Idle cost: one small
 *   query per poll (which kinds have due jobs), plus a sweep of expired leases every fifth poll.
 * - Events (outbox.ts): `recordEvent` stores the event and, in the same transaction, an
 *   `event.dispatch` job. That job runs every `onEvent` hook for the event's type in one transaction;
 *   hooks enqueue one job per recipient (the webhooks module: one delivery per matching
 *   subscription) with a dedupeKey such as `${event.id}:${subscriptionId}`, so a repeated dispatch
 *   adds nothing.
 * - Ordering: a job may name an ordering key and number (NewJob.ordering); the claim skips it while
 *   an earlier job of its kind and key is pending or running, and says of each job it takes whether
 *   later ones of its key wait for it (ClaimedJob.holdsBack); a settled ordered job that held some
 *   back, or during whose attempt the kind was woken, lets the refill look again. Events of one
 *   appointment use it for their dispatch and their deliveries. A dispatch's first attempt takes
 *   along the dispatches queued behind it on its key (dispatchEvents).
 */
import { AsyncResource } from 'node:async_hooks';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import pg from 'pg';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { inTransaction, type Db, type Storage } from '../db/index.ts';
import { errorLogFields, logLevelFor } from '../db/unavailable.ts';
import { sql, type Transaction } from 'kysely';
import type { Database } from '../db/schema.ts';
import { loadEvents, EVENT_DISPATCH, type StoredEvent } from './outbox.ts';
import {
  PermanentError,
  RetryableError,
  claimJobs,
  type ClaimedJob,
  dueKinds,
  giveBackAttempt,
  localWake,
  queueDepth,
  releaseExpired,
  renewLease,
  settleJob,
  settleSucceeded,
  takeFollowing,
  type Job,
  type Settlement,
} from './queue-repo.ts';

export interface HandlerContext<P> {
  job: Job<P>;
  /** Aborted when the lease is lost or shutdown's grace period ends: stop and throw. */
  signal: AbortSignal;
}

export type JobHandler<P = any> = (context: HandlerContext<P>) => Promise<void>;

export interface KindOptions<P = any> {
  /** Attempts of this kind running at once in this process. */
  concurrency?: number;
  /** Seconds to wait after attempt 1, 2, ... before the next; attempts = length + 1 unless maxAttempts. */
  retrySchedule?: number[];
  maxAttempts?: number;
  /** How long a claim lasts without renewal; renewed every third of it while the handler runs. */
  leaseMs?: number;
  /**
   * Records an attempt that did not succeed where the kind keeps its own state (a webhook delivery
   * row), in the transaction that settles the job: the queue decides whether it is retried and when
   * (`dueAt`), and the hook writes that decision. `cause` is what the handler threw (null when the
   * job ran out of attempts without its handler: its last lease ran out).
   */
  onFailedAttempt?: (db: Db, job: Job<P>, outcome: FailedAttempt, cause: unknown) => Promise<void>;
}

/** How an attempt that did not succeed is settled: retried at `dueAt`, or failed for good. */
export type FailedAttempt = Exclude<Settlement, { status: 'succeeded' }>;

/** Gets events of one type (several when dispatches are batched), in the dispatch's transaction. */
export type EventHook = (trx: Transaction<Database>, events: StoredEvent[]) => Promise<void>;

export interface JobQueueOptions {
  /** Fallback poll interval. */
  pollMs?: number;
  /** SQLite: how long the worker lock lasts without renewal. */
  lockTtlMs?: number;
  workerId?: string;
}

interface Kind {
  name: string;
  handler: JobHandler;
  concurrency: number;
  retrySchedule: number[];
  maxAttempts: number;
  leaseMs: number;
  onFailedAttempt: KindOptions['onFailedAttempt'];
  running: number;
  claiming: boolean;
  /** Set when woken during a claim: claim again once it returns. */
  again: boolean;
  /** The last claim found fewer jobs than it asked for: wait for a wake-up rather than claim again. */
  drained: boolean;
  /** Counts wake-ups: a claim that began before the latest one cannot prove the kind drained. */
  wakes: number;
  /** A refill after completions is scheduled for the next turn of the event loop. */
  refilling: boolean;
}

const DEFAULT_SCHEDULE = [5, 30, 120, 600, 1800];
/** At most this many of a key's later dispatches go with one (dispatchEvents). */
const DISPATCH_FOLLOWING = 200;
const LOCK_NAME = 'workers';
/** While the database fails, polls back off (doubling from pollMs) up to this interval. */
const MAX_POLL_BACKOFF_MS = 5000;
/** PostgreSQL: a lost LISTEN connection is reopened this long after it failed. */
const LISTEN_RETRY_MS = 1000;
/**
 * SQLite: how often the workers look for commits of other processes (`PRAGMA data_version`, read from
 * shared memory), so jobs another process enqueued (a second server, the cps command) need not wait
 * for the poll. Nothing signals across processes on SQLite otherwise.
 */
const SQLITE_CHANGE_CHECK_MS = 50;
/** After the grace period, how long attempts aborted by shutdown are given to give themselves back. */
const INTERRUPTED_SETTLE_MS = 500;

export class JobQueue {
  readonly workerId: string;
  private readonly storage: Storage;
  private readonly logger: Logger;
  private readonly pollMs: number;
  private readonly lockTtlMs: number;
  private readonly kinds = new Map<string, Kind>();
  private readonly hooks = new Map<string, EventHook[]>();
  private readonly inFlight = new Map<string, { promise: Promise<void>; abort: AbortController }>();
  private readonly claims = new Set<Promise<void>>();
  private readonly metrics: {
    outcomes: Counter<'kind' | 'outcome'>;
    startDelay: Histogram<'kind'>;
  };
  private state: 'idle' | 'waiting-for-lock' | 'running' | 'stopped' = 'idle';
  private pollTimer: NodeJS.Timeout | null = null;
  private polling = false;
  /** Asked to poll while a poll ran: the next one follows at once. */
  private pollAgain = false;
  /** Polls in a row that failed (the database is away): the interval backs off. */
  private pollFailures = 0;
  /** PostgreSQL: the LISTEN connection was lost and is not back yet. */
  private notificationsLost = false;
  /** PostgreSQL: LISTEN is in effect on a live connection. */
  private listening = false;
  private lockTimer: NodeJS.Timeout | null = null;
  /** SQLite: the timer that looks for other processes' commits, and the data version it saw last. */
  private changeTimer: NodeJS.Timeout | null = null;
  private dataVersion: number | null = null;
  private listener: pg.Client | null = null;
  private stopping: Promise<void> | null = null;
  private polls = 0;
  /**
   * Bound to the context the queue was built in: a wake-up emitted inside a request (an enqueue in its
   * transaction) must not carry that request's transaction observer into the claims and jobs it starts.
   */
  private readonly onLocalWake = AsyncResource.bind((kind: string) => this.wake(kind));
  /** Successes waiting to be recorded together (see recordSuccess). */
  private successes: Array<{ job: Job; done: (recorded: boolean) => void; fail: (error: unknown) => void }> = [];
  private flushing = false;
  /** Event dispatches waiting to be run together (see dispatchEvent). */
  private dispatches: Array<{ job: ClaimedJob<{ eventId: string }>; wakes: number; done: () => void; fail: (error: unknown) => void }> = [];
  private dispatching = false;

  constructor(storage: Storage, logger: Logger, registry: Registry, options: JobQueueOptions = {}) {
    this.storage = storage;
    this.logger = logger.child({ component: 'jobs' });
    this.pollMs = options.pollMs ?? 1000;
    this.lockTtlMs = options.lockTtlMs ?? 15_000;
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
    const db = storage.db;
    new Gauge({
      name: 'cps_jobs_queue_depth',
      help: 'Jobs by kind and status (pending, running, failed), read from the database at scrape',
      labelNames: ['kind', 'status'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        try {
          for (const row of await queueDepth(db)) this.set({ kind: row.kind, status: row.status }, row.count);
        } catch {
          // The database is unreachable or closed: /ready reports that; the gauge stays empty.
        }
      },
    });
    this.metrics = {
      outcomes: new Counter({
        name: 'cps_jobs_outcomes_total',
        help: 'Job attempts by kind and outcome (succeeded, retried, failed, expired)',
        labelNames: ['kind', 'outcome'] as const,
        registers: [registry],
      }),
      startDelay: new Histogram({
        name: 'cps_job_start_delay_seconds',
        help: 'Seconds from when a job fell due to when an attempt started',
        labelNames: ['kind'] as const,
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
        registers: [registry],
      }),
    };
    // Dispatches started together run in one transaction (see dispatchEvent), so the concurrency is the batch size.
    // The job a handler is given is the claim's (run).
    this.register(EVENT_DISPATCH, (context) => this.dispatchEvent(context.job as ClaimedJob<{ eventId: string }>), {
      concurrency: 256,
      retrySchedule: [1, 5, 30, 120, 600, 1800, 3600, 3600, 3600],
    });
  }

  /** Adds the handler for a kind; modules call this while the app is built, before start(). */
  register<P = any>(kind: string, handler: JobHandler<P>, options: KindOptions<P> = {}): void {
    if (this.kinds.has(kind)) throw new Error(`job kind "${kind}" is already registered`);
    const retrySchedule = options.retrySchedule ?? DEFAULT_SCHEDULE;
    this.kinds.set(kind, {
      name: kind,
      handler: handler as JobHandler,
      concurrency: options.concurrency ?? 5,
      retrySchedule,
      maxAttempts: options.maxAttempts ?? retrySchedule.length + 1,
      // Renewed every third of itself while the job runs, so a short lease only shortens crash recovery.
      leaseMs: options.leaseMs ?? 15_000,
      onFailedAttempt: options.onFailedAttempt as Kind['onFailedAttempt'],
      running: 0,
      claiming: false,
      again: false,
      drained: false,
      wakes: 0,
      refilling: false,
    });
  }

  /** Runs `hook` for every event of `type`, inside the dispatch job's transaction (see the module comment). */
  onEvent(type: string, hook: EventHook): void {
    this.hooks.set(type, [...(this.hooks.get(type) ?? []), hook]);
  }

  /** Starts the workers of this process (on SQLite, once it holds the worker lock). */
  async start(): Promise<void> {
    if (this.state !== 'idle') return;
    if (this.storage.dialect === 'sqlite') {
      this.state = 'waiting-for-lock';
      await this.holdLock(true);
      return;
    }
    await this.begin();
  }

  /** True while this process claims jobs. */
  get working(): boolean {
    return this.state === 'running';
  }

  /** PostgreSQL: true while notifications wake the workers (false while the LISTEN connection is down). */
  get notificationsConnected(): boolean {
    return this.listening;
  }

  /**
   * Stops claiming, waits up to `graceMs` for running attempts, then aborts their signals: an attempt
   * that stops at its signal is queued again at once, uncounted (giveBackAttempt); one still running
   * then is claimed again elsewhere when its lease runs out.
   */
  stop(graceMs = 25_000): Promise<void> {
    this.stopping ??= (async () => {
      this.state = 'stopped';
      if (this.pollTimer) clearTimeout(this.pollTimer);
      if (this.lockTimer) clearTimeout(this.lockTimer);
      this.stopWatchingOtherProcesses();
      localWake.off('job', this.onLocalWake);
      const listener = this.listener;
      this.listener = null;
      this.listening = false;
      await listener?.end().catch(() => {});
      // A claim under way when stop was called starts its jobs; wait for it so they are waited for too.
      await Promise.allSettled(this.claims);
      const pending = [...this.inFlight.values()];
      if (pending.length > 0) {
        let timer: NodeJS.Timeout | undefined;
        const graceOver = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), graceMs);
        });
        const outcome = await Promise.race([Promise.all(pending.map((p) => p.promise)), graceOver]);
        clearTimeout(timer);
        if (outcome === 'timeout') {
          this.logger.warn(
            { running: this.inFlight.size, grace_ms: graceMs },
            'jobs still running at the end of the grace period; leaving them to their leases',
          );
          const interrupted = [...this.inFlight.values()];
          for (const { abort } of interrupted) abort.abort(new Error('shutting down'));
          // Handlers that stop at the signal give their attempts back (run) before the database closes.
          let settled: NodeJS.Timeout | undefined;
          await Promise.race([
            Promise.allSettled(interrupted.map((p) => p.promise)),
            new Promise((resolve) => {
              settled = setTimeout(resolve, INTERRUPTED_SETTLE_MS);
            }),
          ]);
          clearTimeout(settled);
        }
      }
      // Also when not running: a lock claim in flight while stopping may have won.
      if (this.storage.dialect === 'sqlite') {
        // Lets another process take over at once instead of after the lock's TTL.
        await this.storage.db
          .deleteFrom('job_locks')
          .where('name', '=', LOCK_NAME)
          .where('owner', '=', this.workerId)
          .execute()
          .catch(() => {});
      }
    })();
    return this.stopping;
  }

  /**
   * Runs every due job of the registered kinds, and the jobs those enqueue, until none is due; for
   * tests and tools that do not start the workers.
   */
  async runDue(): Promise<number> {
    let total = 0;
    for (;;) {
      let ran = 0;
      for (const kind of this.kinds.values()) {
        const jobs = await claimJobs(this.storage.db, kind.name, kind.concurrency, kind.leaseMs, this.workerId);
        ran += jobs.length;
        await Promise.all(jobs.map((job) => this.run(kind, job, new AbortController())));
      }
      if (ran === 0) return total;
      total += ran;
    }
  }

  // ---- Claiming ------------------------------------------------------------------------------

  private async begin(): Promise<void> {
    this.state = 'running';
    this.logger.info({ worker_id: this.workerId, kinds: [...this.kinds.keys()], database: this.storage.dialect }, 'job workers started');
    if (this.storage.dialect === 'postgres') {
      await this.listen();
    } else {
      localWake.on('job', this.onLocalWake);
      this.watchOtherProcesses();
    }
    this.pollNow();
  }

  /** SQLite: polls at once when another process has committed since the last look. */
  private watchOtherProcesses(): void {
    if (this.changeTimer) return;
    this.dataVersion = null;
    this.changeTimer = setInterval(() => {
      if (this.state !== 'running') return;
      sql<{ data_version: number }>`pragma data_version`.execute(this.storage.db).then(
        ({ rows }) => {
          const version = rows[0]?.data_version ?? null;
          if (this.dataVersion !== null && version !== this.dataVersion) this.pollNow();
          this.dataVersion = version;
        },
        () => {
          // The database is away or closing: the poll reports outages.
        },
      );
    }, SQLITE_CHANGE_CHECK_MS);
    this.changeTimer.unref();
  }

  private stopWatchingOtherProcesses(): void {
    if (this.changeTimer) clearInterval(this.changeTimer);
    this.changeTimer = null;
  }

  private wake(kindName?: string): void {
    if (this.state !== 'running') return;
    const kinds = kindName === undefined ? [...this.kinds.values()] : [this.kinds.get(kindName)].filter((k) => k !== undefined);
    for (const kind of kinds) {
      kind.drained = false;
      kind.wakes++;
      // A dispatch under way takes its key's events queued meanwhile (dispatchEvents), and the refill
      // after it claims the rest: a claim per event committed meanwhile would mostly find them held back.
      if (kind.name === EVENT_DISPATCH && kind.running > 0) continue;
      void this.fill(kind);
    }
  }

  /**
   * Every poll asks which kinds have due jobs (one query) and claims for those; every fifth also
   * sweeps expired leases. Idle, that is about one small query a second.
   */
  private async poll(): Promise<void> {
    if (this.state !== 'running') return;
    this.pollTimer = null;
    this.polling = true;
    try {
      if (this.polls++ % 5 === 0) {
        for (const job of await releaseExpired(this.storage.db)) {
          this.metrics.outcomes.inc({ kind: job.kind, outcome: 'expired' });
          this.logger.warn({ job_id: job.id, kind: job.kind }, 'job lease expired; queued again');
        }
      }
      for (const kind of await dueKinds(this.storage.db)) this.wake(kind);
      if (this.pollFailures > 0) this.logger.info({ failed_polls: this.pollFailures }, 'polling for jobs works again');
      this.pollFailures = 0;
    } catch (error) {
      // Logged once per outage; the poll goes on, backing off, until the database answers.
      if (this.pollFailures++ === 0) this.logger.warn(errorLogFields(error), 'polling for jobs failed; retrying with backoff');
    } finally {
      this.polling = false;
    }
    if (this.state !== 'running') return;
    const delay = this.pollAgain ? 0 : Math.min(this.pollMs * 2 ** this.pollFailures, Math.max(this.pollMs, MAX_POLL_BACKOFF_MS));
    this.pollAgain = false;
    this.pollTimer = setTimeout(() => void this.poll(), delay);
  }

  /** Polls now, or right after the poll under way; one chain of polls runs at a time. */
  private pollNow(): void {
    if (this.state !== 'running') return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    if (this.pollTimer) clearTimeout(this.pollTimer);
    void this.poll();
  }

  /** Claims as many jobs of `kind` as it has free slots, and starts them. */
  private async fill(kind: Kind): Promise<void> {
    if (kind.claiming) {
      kind.again = true;
      return;
    }
    kind.claiming = true;
    try {
      do {
        kind.again = false;
        const free = kind.concurrency - kind.running;
        if (this.state !== 'running' || free <= 0 || kind.drained) break;
        const wakes = kind.wakes;
        const claim = claimJobs(this.storage.db, kind.name, free, kind.leaseMs, this.workerId).then((jobs) => {
          // A wake-up during the claim may stand for a job committed after the claim's snapshot.
          kind.drained = jobs.length < free && kind.wakes === wakes;
          for (const job of jobs) this.launch(kind, job);
        });
        this.claims.add(claim);
        await claim.finally(() => this.claims.delete(claim));
      } while (kind.again);
    } catch (error) {
      this.logLevel(error)({ ...errorLogFields(error), kind: kind.name }, 'claiming jobs failed; retrying at the next poll');
    } finally {
      kind.claiming = false;
    }
  }

  private launch(kind: Kind, job: ClaimedJob): void {
    const abort = new AbortController();
    const promise = this.run(kind, job, abort).finally(() => {
      this.inFlight.delete(job.id);
      this.refill(kind);
    });
    this.inFlight.set(job.id, { promise, abort });
  }

  /**
   * After completions, one claim per kind and turn of the event loop, and only once a quarter of
   * the slots are free (or all are): a backlog is claimed in batches rather than one statement and
   * commit per job. Wake-ups still claim at once.
   */
  private refill(kind: Kind): void {
    if (kind.refilling) return;
    kind.refilling = true;
    setImmediate(() => {
      kind.refilling = false;
      const free = kind.concurrency - kind.running;
      if (kind.running === 0 || free >= Math.max(1, Math.ceil(kind.concurrency / 4))) void this.fill(kind);
    });
  }

  // ---- Running one attempt -------------------------------------------------------------------

  private async run(kind: Kind, job: ClaimedJob, abort: AbortController): Promise<void> {
    kind.running++;
    const wakes = kind.wakes;
    const db = this.storage.db;
    const log = { job_id: job.id, kind: kind.name, attempt: job.attempts };
    try {
      this.metrics.startDelay.observe({ kind: kind.name }, Math.max(0, (job.startedAt ?? Date.now()) - job.dueAt) / 1000);
      const maxAttempts = job.maxAttempts ?? kind.maxAttempts;
      if (job.attempts > maxAttempts) {
        // Its last attempt's lease ran out (see releaseExpired), or its failure could not be recorded.
        await this.settleFailureOrEnd(kind, job, { status: 'failed', error: job.lastError ?? 'out of attempts' }, null);
        this.metrics.outcomes.inc({ kind: kind.name, outcome: 'failed' });
        return;
      }
      // A lease that could not be renewed for a whole lease period may already be claimed elsewhere:
      // the attempt is abandoned then, so two workers never run the job at once.
      let renewedAt = Date.now();
      const heartbeat = setInterval(
        () => {
          renewLease(db, job, kind.leaseMs).then(
            (ours) => {
              if (!ours) abort.abort(new Error('lease lost'));
              else renewedAt = Date.now();
            },
            (error: unknown) => {
              this.logger.warn({ ...log, err: error }, 'renewing a job lease failed');
              if (Date.now() - renewedAt >= kind.leaseMs) abort.abort(new Error('lease could not be renewed'));
            },
          );
        },
        Math.max(10, Math.floor(kind.leaseMs / 3)),
      );
      // After an abort the attempt is abandoned to its lease (shutdown) or already lost.
      abort.signal.addEventListener('abort', () => clearInterval(heartbeat));
      let settlement: Settlement | null;
      let cause: unknown = null;
      try {
        await kind.handler({ job, signal: abort.signal });
        settlement = { status: 'succeeded' };
      } catch (error) {
        cause = error;
        settlement = this.afterFailure(kind, job, maxAttempts, error);
      } finally {
        clearInterval(heartbeat);
      }
      if (abort.signal.aborted && settlement.status !== 'succeeded') {
        // Interrupted (shutdown grace over, or lease lost): not a real failure, so no attempt is spent
        // and no delay imposed. A shutdown gives the attempt back at once; a lost lease leaves the job
        // to its lease (the sweep counts that attempt, so a handler that keeps losing its lease ends).
        if (this.state === 'stopped' && (await giveBackAttempt(db, job))) {
          this.logger.warn(log, 'job attempt interrupted by the shutdown; queued again');
          return;
        }
        this.logger.warn(log, 'job attempt interrupted; left to its lease');
        return;
      }
      // What was recorded (a retry asked during a failed attempt makes the next one due now), or null.
      if (settlement.status !== 'succeeded') settlement = await this.settleFailureOrEnd(kind, job, settlement, cause);
      else if (!(await this.recordSuccess(job))) settlement = null;
      if (settlement === null) {
        this.logger.warn(log, 'job attempt finished after losing its lease; its outcome is not recorded');
        return;
      }
      // The next job of its key may be claimable now: the refill after this attempt looks for it. One
      // enqueued after the claim woke the kind, and that wake-up's claim found it held back.
      if (job.orderingKey !== null && settlement.status !== 'pending' && (job.holdsBack || kind.wakes !== wakes)) kind.drained = false;
      const outcome = settlement.status === 'pending' ? 'retried' : settlement.status;
      this.metrics.outcomes.inc({ kind: kind.name, outcome });
      if (settlement.status === 'pending') {
        this.logger.warn({ ...log, error: settlement.error, retry_at: new Date(settlement.dueAt).toISOString() }, 'job attempt failed; will retry');
        this.wakeAt(kind, settlement.dueAt);
      } else if (settlement.status === 'failed') {
        this.logger.error({ ...log, error: settlement.error }, 'job failed');
      }
    } catch (error) {
      // The database failed while settling: the lease runs out and the job runs again.
      this.logLevel(error)({ ...log, ...errorLogFields(error) }, 'recording a job outcome failed; the job runs again when its lease runs out');
    } finally {
      kind.running--;
    }
  }

  /**
   * settleFailure; when that fails on a job's last attempt (the kind's record of it fails every time,
   * a poisoned payload), the job is settled failed without the record rather than run again at every
   * lease's end. An earlier attempt whose record fails is left to its lease, as when the database fails.
   */
  private async settleFailureOrEnd(kind: Kind, job: Job, settlement: FailedAttempt, cause: unknown): Promise<FailedAttempt | null> {
    try {
      return await this.settleFailure(kind, job, settlement, cause);
    } catch (error) {
      if (settlement.status !== 'failed' || !kind.onFailedAttempt) throw error;
      this.logger.error(
        { job_id: job.id, kind: kind.name, attempt: job.attempts, ...errorLogFields(error) },
        'recording a failed job failed; the job is settled as failed without it',
      );
      return (await settleJob(this.storage.db, job, settlement)) as FailedAttempt | null;
    }
  }

  /** Settles the job and, in the same transaction, lets the kind record what was decided; answers it. */
  private async settleFailure(kind: Kind, job: Job, settlement: FailedAttempt, cause: unknown): Promise<FailedAttempt | null> {
    const record = kind.onFailedAttempt;
    if (!record) return (await settleJob(this.storage.db, job, settlement)) as FailedAttempt | null;
    return inTransaction(this.storage.db, async (trx) => {
      const settled = (await settleJob(trx, job, settlement)) as FailedAttempt | null;
      if (settled) await record(trx, job, settled, cause);
      return settled;
    });
  }

  private logLevel(error: unknown): Logger['warn'] {
    return logLevelFor(error) === 'warn' ? this.logger.warn.bind(this.logger) : this.logger.error.bind(this.logger);
  }

  private afterFailure(kind: Kind, job: Job, maxAttempts: number, error: unknown): Settlement {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof PermanentError || job.attempts >= maxAttempts) return { status: 'failed', error: message };
    const scheduled = kind.retrySchedule[Math.min(job.attempts - 1, kind.retrySchedule.length - 1)] ?? 0;
    const retryAfter = error instanceof RetryableError ? (error.retryAfterSeconds ?? 0) : 0;
    return { status: 'pending', error: message, dueAt: Date.now() + Math.max(scheduled, retryAfter) * 1000 };
  }

  /**
   * Successes that finish while one batch is being written go into the next: under load one
   * statement (and one commit) records many jobs; alone, a job is recorded at once.
   */
  private recordSuccess(job: Job): Promise<boolean> {
    return new Promise((done, fail) => {
      this.successes.push({ job, done, fail });
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => void this.flushSuccesses());
      }
    });
  }

  private async flushSuccesses(): Promise<void> {
    while (this.successes.length > 0) {
      const batch = this.successes.splice(0, 500);
      try {
        const recorded = await settleSucceeded(
          this.storage.db,
          batch.map((entry) => entry.job),
        );
        for (const entry of batch) entry.done(recorded.has(entry.job.id));
      } catch (error) {
        for (const entry of batch) entry.fail(error);
      }
    }
    this.flushing = false;
  }

  /** A retry due before the next poll is claimed on time. */
  private wakeAt(kind: Kind, dueAt: number): void {
    const delay = dueAt - Date.now();
    if (delay >= this.pollMs) return;
    setTimeout(
      () => {
        kind.drained = false;
        kind.wakes++;
        void this.fill(kind);
      },
      Math.max(0, delay),
    ).unref();
  }

  // ---- Events ----------------------------------------------------------------------------------

  /**
   * Dispatches started while a batch is being written go into the next, as successes do (see
   * recordSuccess): one claim's dispatch jobs load their events in one statement and run the hooks
   * in one transaction, so a hook inserts all their deliveries at once.
   */
  private dispatchEvent(job: ClaimedJob<{ eventId: string }>): Promise<void> {
    return new Promise((done, fail) => {
      this.dispatches.push({ job, wakes: this.kinds.get(EVENT_DISPATCH)!.wakes, done, fail });
      if (!this.dispatching) {
        this.dispatching = true;
        setImmediate(() => void this.flushDispatches());
      }
    });
  }

  private async flushDispatches(): Promise<void> {
    while (this.dispatches.length > 0) {
      const batch = this.dispatches.splice(0, 200);
      try {
        const jobs = batch.map((entry) => entry.job);
        // A retry takes no later events along: one that cannot be dispatched holds back only its own.
        const first = jobs.every((job) => job.attempts <= 1);
        // A key's later events are looked for where the claim saw some, or events were recorded since.
        const wakes = this.kinds.get(EVENT_DISPATCH)!.wakes;
        const woken = batch.some((entry) => entry.wakes !== wakes);
        await this.dispatchEvents(jobs, first ? jobs.filter((job) => woken || job.holdsBack) : []);
        for (const entry of batch) entry.done();
      } catch (error) {
        if (batch.length === 1) {
          batch[0]!.fail(error);
          continue;
        }
        // One at a time, so that an event that cannot be dispatched holds back no other.
        for (const entry of batch) await this.dispatchEvents([entry.job], []).then(entry.done, entry.fail);
      }
    }
    this.dispatching = false;
  }

  /** Runs the hooks for the events of `jobs`, with the later events of the keys of `leading`'s. */
  private async dispatchEvents(jobs: ClaimedJob<{ eventId: string }>[], leading: ClaimedJob<{ eventId: string }>[]): Promise<void> {
    // An event whose business was deleted since is gone: nothing to deliver.
    const events = await loadEvents(
      this.storage.db,
      jobs.map((job) => job.payload.eventId),
    );
    const lastOfKey = new Map<string, number>();
    const leadingEvents = new Set(leading.map((job) => job.payload.eventId));
    for (const event of events) {
      if (!leadingEvents.has(event.id) || event.orderingKey === null || event.sequence === null) continue;
      const key = `${event.businessId}|${event.orderingKey}`;
      lastOfKey.set(key, Math.max(event.sequence, lastOfKey.get(key) ?? 0));
    }
    if (lastOfKey.size === 0 && !events.some((event) => this.hooks.has(event.type))) return;
    let followed = 0;
    await inTransaction(this.storage.db, async (trx) => {
      // The dispatches queued behind this one's (their key's later events) go with it: one claim, one
      // transaction and one settlement for a run of a patient's events, rather than one each.
      const all = [...events];
      for (const [key, last] of lastOfKey) {
        const following = await takeFollowing(trx, EVENT_DISPATCH, key, last, DISPATCH_FOLLOWING, this.workerId);
        if (following.length === 0) continue;
        followed += following.length;
        all.push(
          ...(await loadEvents(
            trx,
            following.map((job) => (job.payload as { eventId: string }).eventId),
          )),
        );
      }
      for (const layer of layersOf(all)) {
        for (const [type, typed] of Map.groupBy(layer, (event) => event.type)) {
          for (const hook of this.hooks.get(type) ?? []) await hook(trx, typed);
        }
      }
    });
    if (followed > 0) this.metrics.outcomes.inc({ kind: EVENT_DISPATCH, outcome: 'succeeded' }, followed);
  }

  // ---- PostgreSQL: LISTEN ----------------------------------------------------------------------

  private async listen(): Promise<void> {
    const pool = this.storage.pgPool!;
    // A client of its own, outside the pool: LISTEN holds its connection for as long as it lives.
    const client = new pg.Client(pool.options);
    const retry = (error?: unknown) => {
      if (this.listener !== client) return;
      this.listener = null;
      this.listening = false;
      client.end().catch(() => {});
      if (this.state !== 'running') return;
      if (!this.notificationsLost) {
        this.notificationsLost = true;
        this.logger.warn(error ? errorLogFields(error) : {}, 'job notifications lost; polling until they reconnect');
      }
      setTimeout(() => {
        if (this.state === 'running') void this.listen();
      }, LISTEN_RETRY_MS).unref();
    };
    this.listener = client;
    client.on('notification', (message) => this.wake(message.payload));
    client.on('error', retry);
    client.on('end', () => retry());
    try {
      await client.connect();
      await client.query('LISTEN cps_jobs');
    } catch (error) {
      retry(error);
      return;
    }
    if (this.listener !== client) return;
    this.listening = true;
    if (!this.notificationsLost) return;
    // Notifications sent while the connection was down are gone: a poll finds their jobs now
    // rather than at the next (backed-off) poll.
    this.notificationsLost = false;
    this.logger.info('job notifications reconnected');
    this.pollNow();
  }

  // ---- SQLite: the worker lock -----------------------------------------------------------------

  /** Takes or renews the lock; starts the workers on taking it, pauses them on losing it. */
  private async holdLock(first: boolean): Promise<void> {
    if (this.state === 'stopped') return;
    let held = false;
    try {
      const now = Date.now();
      const row = await this.storage.db
        .insertInto('job_locks')
        .values({ name: LOCK_NAME, owner: this.workerId, expires_at: now + this.lockTtlMs })
        .onConflict((oc) =>
          oc
            .column('name')
            .doUpdateSet({ owner: this.workerId, expires_at: now + this.lockTtlMs })
            .where((eb) => eb.or([eb('job_locks.owner', '=', this.workerId), eb('job_locks.expires_at', '<', now)])),
        )
        .returning('owner')
        .executeTakeFirst();
      held = row !== undefined;
    } catch (error) {
      this.logLevel(error)(errorLogFields(error), 'taking the job worker lock failed');
    }
    if (held && this.state === 'waiting-for-lock') {
      if (!first) this.logger.info('took over the job workers for this SQLite database');
      await this.begin();
    } else if (!held && this.state === 'running') {
      this.logger.error('lost the job worker lock to another process; pausing the workers');
      this.state = 'waiting-for-lock';
      if (this.pollTimer) clearTimeout(this.pollTimer);
      this.pollTimer = null;
      this.stopWatchingOtherProcesses();
      localWake.off('job', this.onLocalWake);
    } else if (!held && first) {
      this.logger.warn(
        { database: this.storage.location },
        'another process runs the job workers for this SQLite database; this one does not (it takes over if that process stops)',
      );
    }
    if (this.stopping) return;
    const every = held ? Math.floor(this.lockTtlMs / 3) : this.lockTtlMs;
    this.lockTimer = setTimeout(() => void this.holdLock(false), every);
  }
}

/**
 * `events` in layers, each holding at most one event of a key, a key's events in their sequence, layer
 * after layer: a hook is given a layer's events of one type at once, so a key's events (taken along
 * by a dispatch, and not in their order) reach each hook in sequence, whatever their types.
 */
function layersOf(events: StoredEvent[]): StoredEvent[][] {
  const layers: StoredEvent[][] = [];
  const byKey = Map.groupBy(events, (event) => (event.orderingKey === null ? event.id : `${event.businessId}|${event.orderingKey}`));
  for (const keyed of byKey.values()) {
    keyed.sort((a, b) => (a.sequence ?? 0) - (b.sequence ?? 0));
    keyed.forEach((event, at) => {
      (layers[at] ??= []).push(event);
    });
  }
  return layers;
}
