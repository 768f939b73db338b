/**
 * The jobs table: enqueue in the caller's transaction, read, retry by hand, and the worker's claim,
 * finish and sweep statements (the worker itself is in queue.ts). Times are epoch milliseconds
 * from this process's clock, except leases on PostgreSQL, which are the database's (leaseEnd).
 */
import { EventEmitter } from 'node:events';
import { sql, type ExpressionBuilder, type Insertable, type Selectable } from 'kysely';
import { writeWithNext, type Db } from '../db/index.ts';
import { newId } from '../db/ids.ts';
import { isPostgres } from '../db/dialect.ts';
import type { Database, JobStatus, JobsTable } from '../db/schema.ts';

export type { JobStatus };

export interface Job<P = unknown> {
  id: string;
  kind: string;
  businessId: string | null;
  payload: P;
  status: JobStatus;
  dueAt: number;
  attempts: number;
  /** null: the kind's default. */
  maxAttempts: number | null;
  lastError: string | null;
  dedupeKey: string | null;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** See NewJob.ordering. */
  orderingKey: string | null;
}

export interface NewJob {
  kind: string;
  businessId?: string | null;
  payload: unknown;
  /** Epoch ms; now when absent. */
  dueAt?: number;
  /** Overrides the kind's default (its retry schedule's length + 1). */
  maxAttempts?: number;
  /** A second enqueue with the same kind and key adds nothing and returns the first job's id. */
  dedupeKey?: string;
  /**
   * Jobs of one kind and `key` run in `seq` order: a job is claimed only once every job of its kind
   * and key with a lower `seq` has succeeded or failed (a retry waiting for its time holds the later
   * ones back). Jobs of different keys, and jobs without one, run in parallel.
   */
  ordering?: { key: string; seq: number };
}

/** Thrown by a handler: try again per the schedule, but not before `retryAfterSeconds`. */
export class RetryableError extends Error {
  readonly retryAfterSeconds: number | null;
  constructor(message: string, options: { retryAfterSeconds?: number | null; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'RetryableError';
    this.retryAfterSeconds = options.retryAfterSeconds ?? null;
  }
}

/** Thrown by a handler: retrying cannot help; the job ends `failed` now. */
export class PermanentError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'PermanentError';
  }
}

/**
 * In-process wake-up for SQLite, where no NOTIFY exists. The signal may arrive before the enqueueing
 * transaction commits; that is harmless because the one SQLite connection runs the claim after it.
 */
export const localWake = new EventEmitter<{ job: [kind: string] }>();
localWake.setMaxListeners(0);

export function toJob<P = unknown>(row: Selectable<JobsTable>): Job<P> {
  return {
    id: row.id,
    kind: row.kind,
    businessId: row.business_id,
    payload: JSON.parse(row.payload) as P,
    status: row.status,
    dueAt: row.due_at,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    lastError: row.last_error,
    dedupeKey: row.dedupe_key,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    orderingKey: row.ordering_key,
  };
}

/** Adds a job in `db` (pass the transaction of the change that causes it) and returns its id. */
export async function enqueue(db: Db, job: NewJob): Promise<string> {
  return (await enqueueMany(db, [job]))[0]!;
}

/**
 * Adds a job whose id the caller does not need, in a transaction: on PostgreSQL it travels with the
 * transaction's next statement or its COMMIT (writeWithNext: no round trip of its own; a job of the
 * same dedupeKey leaves it out); on SQLite it is `enqueue`.
 */
export async function enqueueWithNext(db: Db, job: NewJob): Promise<void> {
  if (!isPostgres(db)) {
    await enqueue(db, job);
    return;
  }
  await writeWithNext(
    db,
    db
      .insertInto('jobs')
      .values(jobRow(job))
      .onConflict((oc) => oc.columns(['kind', 'dedupe_key']).doNothing()),
  );
}

/** Adds jobs in one statement (a fan-out to many recipients); returns their ids in order. */
export async function enqueueMany(db: Db, jobs: NewJob[]): Promise<string[]> {
  return (await enqueueManyMarked(db, jobs)).map((job) => job.id);
}

/** enqueueMany, saying of each id whether the job is new (`fresh`) or one its dedupeKey found. */
export async function enqueueManyMarked(db: Db, jobs: NewJob[]): Promise<Array<{ id: string; fresh: boolean }>> {
  if (jobs.length === 0) return [];
  const now = Date.now();
  const rows = jobs.map((job) => jobRow(job, now));
  const deduped = jobs.some((job) => job.dedupeKey !== undefined);
  const inserted = await db
    .insertInto('jobs')
    .values(rows)
    .$if(deduped, (qb) => qb.onConflict((oc) => oc.columns(['kind', 'dedupe_key']).doNothing()))
    .returning('id')
    .execute();
  if (!isPostgres(db)) for (const kind of new Set(jobs.map((job) => job.kind))) localWake.emit('job', kind);
  if (inserted.length === rows.length) return rows.map((row) => ({ id: row.id, fresh: true }));
  // Some keys existed already: answer with those jobs' ids.
  const fresh = new Set(inserted.map((row) => row.id));
  return Promise.all(
    rows.map(async (row) =>
      fresh.has(row.id)
        ? { id: row.id, fresh: true }
        : {
            id: (
              await db
                .selectFrom('jobs')
                .select('id')
                .where('kind', '=', row.kind)
                .where('dedupe_key', '=', row.dedupe_key!)
                .executeTakeFirstOrThrow()
            ).id,
            fresh: false,
          },
    ),
  );
}

/** The row `enqueue` inserts for `job`, for statements that insert a job along with other rows. */
export function jobRow(job: NewJob, now = Date.now()): Insertable<JobsTable> & { id: string } {
  return {
    id: newId('job'),
    kind: job.kind,
    business_id: job.businessId ?? null,
    payload: JSON.stringify(job.payload ?? null),
    status: 'pending',
    due_at: job.dueAt ?? now,
    max_attempts: job.maxAttempts ?? null,
    lease_until: null,
    locked_by: null,
    last_error: null,
    dedupe_key: job.dedupeKey ?? null,
    created_at: now,
    updated_at: now,
    started_at: null,
    finished_at: null,
    ordering_key: job.ordering?.key ?? null,
    ordering_seq: job.ordering?.seq ?? null,
  };
}

export interface Scope {
  /** When given, a job of another business reads as missing. */
  businessId?: string;
}

export async function getJob<P = unknown>(db: Db, id: string, scope: Scope = {}): Promise<Job<P> | null> {
  const row = await db
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', id)
    .$if(scope.businessId !== undefined, (qb) => qb.where('business_id', '=', scope.businessId!))
    .executeTakeFirst();
  return row ? toJob<P>(row) : null;
}

export interface JobFilter extends Scope {
  kind?: string;
  status?: JobStatus;
  limit?: number;
  offset?: number;
}

/** Newest first. */
export async function listJobs<P = unknown>(db: Db, filter: JobFilter = {}): Promise<Job<P>[]> {
  const rows = await db
    .selectFrom('jobs')
    .selectAll()
    .$if(filter.businessId !== undefined, (qb) => qb.where('business_id', '=', filter.businessId!))
    .$if(filter.kind !== undefined, (qb) => qb.where('kind', '=', filter.kind!))
    .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status!))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(filter.limit ?? 50)
    .offset(filter.offset ?? 0)
    .execute();
  return rows.map((row) => toJob<P>(row));
}

/** The last job of a kind that finished (succeeded or failed), or null. */
export async function lastFinished(db: Db, kind: string): Promise<{ status: JobStatus; finished_at: number; last_error: string | null } | null> {
  const row = await db
    .selectFrom('jobs')
    .select(['status', 'finished_at', 'last_error'])
    .where('kind', '=', kind)
    .where('status', 'in', ['succeeded', 'failed'])
    .where('finished_at', 'is not', null)
    .orderBy('finished_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? { status: row.status, finished_at: Number(row.finished_at), last_error: row.last_error } : null;
}

/**
 * Queues a finished job (failed or succeeded) again, due now, with its attempts counted afresh; a
 * pending job is made due now; a running job keeps running, and the retry takes effect when its
 * attempt is settled (settleJob: a failed attempt is followed by one due now, attempts afresh; a
 * success stands). Returns the job, or null when unknown. `payload`, when given, replaces the job's
 * (a finished or pending job only: a running one keeps its own).
 */
export async function retryJob<P = unknown>(db: Db, id: string, scope: Scope = {}, payload?: P): Promise<Job<P> | null> {
  const now = Date.now();
  const row = await db
    .updateTable('jobs')
    .set((eb) => ({
      status: 'pending',
      due_at: now,
      attempts: eb.case().when('status', '=', 'pending').then(eb.ref('attempts')).else(0).end(),
      finished_at: null,
      updated_at: now,
      ...(payload !== undefined && { payload: JSON.stringify(payload) }),
    }))
    .where('id', '=', id)
    .where('status', '!=', 'running')
    .$if(scope.businessId !== undefined, (qb) => qb.where('business_id', '=', scope.businessId!))
    .returningAll()
    .executeTakeFirst();
  if (row) {
    // Sent at commit, like the insert trigger's.
    if (isPostgres(db)) await sql`select pg_notify('cps_jobs', ${row.kind})`.execute(db);
    else localWake.emit('job', row.kind);
    return toJob<P>(row);
  }
  const running = await db
    .updateTable('jobs')
    .set({ retry_requested_at: now, updated_at: now })
    .where('id', '=', id)
    .where('status', '=', 'running')
    .$if(scope.businessId !== undefined, (qb) => qb.where('business_id', '=', scope.businessId!))
    .returningAll()
    .executeTakeFirst();
  return running ? toJob<P>(running) : getJob<P>(db, id, scope);
}

// ---- The worker's statements ---------------------------------------------------------------

/**
 * A lease's end `leaseMs` from now. On PostgreSQL leases are set and compared in the database's clock,
 * which every process sharing it shares: in each process's own, a host whose clock ran ahead took
 * other hosts' live leases for expired (their jobs ran twice at once) and one behind kept a dead
 * process's jobs for as long. On SQLite the processes share one host, and its clock.
 */
function leaseEnd(db: Db, leaseMs: number) {
  return isPostgres(db) ? sql<number>`${DB_NOW_MS} + cast(${leaseMs} as bigint)` : sql<number>`${Date.now() + leaseMs}`;
}

/** Epoch milliseconds by the database's clock (PostgreSQL). */
const DB_NOW_MS = sql<number>`cast(extract(epoch from clock_timestamp()) * 1000 as bigint)`;

export interface ClaimedJob<P = unknown> extends Job<P> {
  /**
   * Later jobs of its kind and key were waiting for it when it was claimed (NewJob.ordering): only then
   * can its settlement make another job claimable, or a dispatch take any along (takeFollowing). One
   * enqueued after the claim wakes the workers itself.
   */
  holdsBack: boolean;
}

/**
 * Marks up to `limit` due jobs of `kind` running under a lease and returns them. On PostgreSQL the
 * rows are locked with SKIP LOCKED, so concurrent claims never take the same job (as in pg-boss and
 * graphile-worker); on SQLite one process runs the workers and one connection runs the statement.
 */
export async function claimJobs(db: Db, kind: string, limit: number, leaseMs: number, workerId: string): Promise<ClaimedJob[]> {
  const now = Date.now();
  const rows = await db
    .with('next', (qb) =>
      qb
        .selectFrom('jobs')
        .select('id')
        .where('status', '=', 'pending')
        .where('kind', '=', kind)
        .where('due_at', '<=', now)
        // An ordered job waits while an earlier job of its key is unsettled (see NewJob.ordering).
        .where((eb) => eb.or([eb('jobs.ordering_key', 'is', null), eb.not(unsettledOfKey(eb, '<'))]))
        .orderBy('due_at')
        .limit(limit)
        .$if(isPostgres(db), (q) => q.forUpdate().skipLocked()),
    )
    .updateTable('jobs')
    .set((eb) => ({
      status: 'running',
      attempts: eb('attempts', '+', 1),
      lease_until: leaseEnd(db, leaseMs),
      locked_by: workerId,
      started_at: now,
      updated_at: now,
    }))
    .where('id', 'in', (eb) => eb.selectFrom('next').select('id'))
    .returningAll()
    .returning((eb) => unsettledOfKey(eb, '>').as('holds_back'))
    .execute();
  return rows.map(({ holds_back, ...row }) => ({ ...toJob(row), holdsBack: Boolean(holds_back) })).sort((a, b) => a.dueAt - b.dueAt);
}

/** Whether a job of the row's kind and ordering key numbered before (`<`) or after (`>`) it is pending or running. */
function unsettledOfKey(eb: ExpressionBuilder<Database, 'jobs'>, order: '<' | '>') {
  return eb.exists(
    eb
      .selectFrom('jobs as other')
      .select(sql.lit(1).as('one'))
      .whereRef('other.kind', '=', 'jobs.kind')
      .whereRef('other.ordering_key', '=', 'jobs.ordering_key')
      .whereRef('other.ordering_seq', order, 'jobs.ordering_seq')
      // Literal, as in jobs_ordering_idx's predicate, so both databases use that index.
      .where(sql<boolean>`other.status in ('pending', 'running')`),
  );
}

/** Extends the lease of a running attempt; false when the attempt is no longer this worker's. */
export async function renewLease(db: Db, job: Job, leaseMs: number): Promise<boolean> {
  const result = await db
    .updateTable('jobs')
    .set({ lease_until: leaseEnd(db, leaseMs) })
    .where('id', '=', job.id)
    .where('status', '=', 'running')
    .where('attempts', '=', job.attempts)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export type Settlement = { status: 'succeeded' } | { status: 'failed'; error: string } | { status: 'pending'; error: string; dueAt: number };

/**
 * Records how an attempt ended, and answers what was recorded, or null when nothing was. The attempt
 * number guards it: an attempt whose lease ran out and whose job was claimed again cannot overwrite
 * the newer attempt. A failed attempt of a job whose retry was asked meanwhile (retryJob) is followed
 * by one due now, with its attempts counted afresh.
 */
export async function settleJob(db: Db, job: Job, settlement: Settlement): Promise<Settlement | null> {
  const now = Date.now();
  const base = {
    status: settlement.status,
    lease_until: null,
    updated_at: now,
    retry_requested_at: null,
    ...(settlement.status === 'pending' ? { due_at: settlement.dueAt } : { finished_at: now }),
    ...(settlement.status === 'succeeded' ? {} : { last_error: truncate(settlement.error) }),
  };
  const retried =
    settlement.status === 'succeeded'
      ? base
      : {
          ...base,
          status: sql<JobStatus>`case when retry_requested_at is null then ${settlement.status} else 'pending' end`,
          due_at: sql<number>`case when retry_requested_at is null then due_at else cast(${now} as bigint) end`,
          finished_at: sql<number | null>`case when retry_requested_at is null then cast(${now} as bigint) else null end`,
          attempts: sql<number>`case when retry_requested_at is null then attempts else 0 end`,
          ...(settlement.status === 'pending' && {
            due_at: sql<number>`case when retry_requested_at is null then cast(${settlement.dueAt} as bigint) else cast(${now} as bigint) end`,
            finished_at: sql<number | null>`finished_at`,
          }),
        };
  const row = await db
    .updateTable('jobs')
    .set(retried)
    .where('id', '=', job.id)
    .where('status', '=', 'running')
    .where('attempts', '=', job.attempts)
    .returning(['status', 'due_at'])
    .executeTakeFirst();
  if (!row) return null;
  if (settlement.status === 'succeeded') return settlement;
  const dueAt = Number(row.due_at);
  if (row.status === settlement.status && (settlement.status === 'failed' || dueAt === settlement.dueAt)) return settlement;
  return { status: 'pending', error: settlement.error, dueAt };
}

/**
 * Records many successful attempts in one statement (the common case, so one commit serves many
 * jobs); returns the ids recorded, guarded by attempt number as in settleJob.
 */
export async function settleSucceeded(db: Db, jobs: Job[]): Promise<Set<string>> {
  const now = Date.now();
  const rows = await db
    .updateTable('jobs')
    .set({ status: 'succeeded', lease_until: null, updated_at: now, finished_at: now, retry_requested_at: null })
    .where('status', '=', 'running')
    .where((eb) =>
      eb(
        eb.refTuple('id', 'attempts'),
        'in',
        jobs.map((job) => eb.tuple(job.id, job.attempts)),
      ),
    )
    .returning('id')
    .execute();
  return new Set(rows.map((row) => row.id));
}

/**
 * Settles as succeeded, in `trx`, the due pending jobs of `kind` and `orderingKey` that follow
 * `afterSeq` without a gap (`afterSeq` + 1, + 2, ...; at most `limit`), and returns them: the caller
 * holds the job numbered `afterSeq` running, so no other claim can take them, and does their work in
 * the same transaction (an event dispatch takes the later events of its key so).
 */
export async function takeFollowing(trx: Db, kind: string, orderingKey: string, afterSeq: number, limit: number, workerId: string): Promise<Job[]> {
  const now = Date.now();
  const rows = await trx
    .with('following', (qb) =>
      qb
        .selectFrom('jobs')
        .select((eb) => [
          'id',
          'ordering_seq',
          eb.fn
            .agg<number>('row_number')
            .over((ob) => ob.orderBy('ordering_seq'))
            .as('n'),
        ])
        .where('kind', '=', kind)
        .where('ordering_key', '=', orderingKey)
        .where('ordering_seq', '>', afterSeq)
        // Literal, as in jobs_ordering_idx's predicate, so both databases use that index.
        .where(sql<boolean>`status in ('pending', 'running')`)
        .where('status', '=', 'pending')
        .where('due_at', '<=', now)
        .orderBy('ordering_seq')
        .limit(limit),
    )
    .updateTable('jobs')
    .set((eb) => ({
      status: 'succeeded',
      attempts: eb('attempts', '+', 1),
      locked_by: workerId,
      started_at: now,
      finished_at: now,
      updated_at: now,
      lease_until: null,
    }))
    // The key's terms again, so that SQLite finds the rows through jobs_ordering_idx: by `status` alone
    // it walked every pending job of every kind (a backlog of thumbnails made each dispatch pay for it).
    .where('kind', '=', kind)
    .where('ordering_key', '=', orderingKey)
    .where('ordering_seq', '>', afterSeq)
    .where(sql<boolean>`status in ('pending', 'running')`)
    .where('status', '=', 'pending')
    // A gap (a number missing, or not yet due) ends the run: what follows it waits for its turn.
    .where('id', 'in', (eb) =>
      eb.selectFrom('following').select('following.id').where(sql<boolean>`following.ordering_seq = ${afterSeq} + following.n`),
    )
    .returningAll()
    .execute();
  return rows.map((row) => toJob(row));
}

/**
 * Returns to `pending` (due now) the running jobs whose lease ran out: their process died or hung.
 * The attempt stays counted; the claim fails a job that has used all its attempts.
 */
export async function releaseExpired(db: Db): Promise<{ id: string; kind: string }[]> {
  const now = Date.now();
  // Due now: a retry asked meanwhile (retryJob) is served by it.
  return db
    .updateTable('jobs')
    .set({
      status: 'pending',
      due_at: now,
      lease_until: null,
      updated_at: now,
      retry_requested_at: null,
      last_error: 'lease expired: the worker stopped or crashed mid-job',
    })
    .where('status', '=', 'running')
    .where('lease_until', '<', isPostgres(db) ? DB_NOW_MS : sql<number>`${now}`)
    .returning(['id', 'kind'])
    .execute();
}

/**
 * Gives back an attempt that shutdown interrupted (its handler stopped at the signal): the job is
 * pending again, due now, and the attempt is not counted, so a job interrupted on its last attempt is
 * tried again rather than failed unsent (releaseExpired counts the attempt of a worker that died).
 * Guarded by the attempt number as settleJob is; false when the attempt was no longer this one.
 */
export async function giveBackAttempt(db: Db, job: Job): Promise<boolean> {
  const now = Date.now();
  const row = await db
    .updateTable('jobs')
    .set((eb) => ({
      status: 'pending',
      due_at: now,
      attempts: eb('attempts', '-', 1),
      lease_until: null,
      updated_at: now,
      retry_requested_at: null,
      last_error: 'interrupted by a shutdown; queued again',
    }))
    .where('id', '=', job.id)
    .where('status', '=', 'running')
    .where('attempts', '=', job.attempts)
    .returning('kind')
    .executeTakeFirst();
  if (!row) return false;
  // Another process takes it at once (the insert trigger does not fire for an update).
  if (isPostgres(db)) await sql`select pg_notify('cps_jobs', ${row.kind})`.execute(db);
  return true;
}

/** The kinds with jobs due now: the poll claims only for those. */
export async function dueKinds(db: Db): Promise<string[]> {
  const rows = await db.selectFrom('jobs').select('kind').distinct().where('status', '=', 'pending').where('due_at', '<=', Date.now()).execute();
  return rows.map((row) => row.kind);
}

/** Jobs pending, running and failed, by kind: the queue's depth (cps_jobs metric, the admin API's operations). */
export async function queueDepth(db: Db): Promise<{ kind: string; status: string; count: number }[]> {
  const rows = await db
    .selectFrom('jobs')
    .select(['kind', 'status', (eb) => eb.fn.countAll<number | string>().as('count')])
    .where('status', 'in', ['pending', 'running', 'failed'])
    .groupBy(['status', 'kind'])
    .execute();
  return rows.map((row) => ({ kind: row.kind, status: row.status, count: Number(row.count) }));
}

function truncate(text: string): string {
  return text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
}
