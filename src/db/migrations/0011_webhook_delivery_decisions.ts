import type { Kysely } from 'kysely';

/**
 * A webhook delivery records the job queue's decision (its next attempt, or that it failed) where
 * the job is settled, and the deliveries listing reads the delivery alone. Deliveries written before
 * then may lag their job: they take its state once, as the listing showed it.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const now = Date.now();
  // A last attempt the worker settled without the handler (its lease ran out, or it threw before sending).
  await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      status: 'failed',
      next_attempt_at: null,
      last_error: eb.fn.coalesce('last_error', eb.selectFrom('jobs').select('jobs.last_error').whereRef('jobs.id', '=', 'webhook_deliveries.job_id')),
      updated_at: now,
    }))
    .where('status', '=', 'pending')
    .where('job_id', 'in', db.selectFrom('jobs').select('id').where('status', '=', 'failed'))
    .execute();
  // A retry the queue scheduled: the job's due time is the next attempt's.
  await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ next_attempt_at: eb.selectFrom('jobs').select('jobs.due_at').whereRef('jobs.id', '=', 'webhook_deliveries.job_id') }))
    .where('status', '=', 'pending')
    .where('job_id', 'in', db.selectFrom('jobs').select('id').where('status', '=', 'pending'))
    .execute();
}

/** Nothing to undo: the rows hold what the listing showed. */
export async function down(): Promise<void> {}
