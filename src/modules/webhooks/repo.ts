/** SQL of the webhooks module; every query is scoped by business_id (loadAttempts answers each row's, for its caller to match). */
import {
  sql,
  type Insertable,
  type QueryCreator,
  type Selectable,
  type Transaction,
  type Updateable,
  type UpdateQueryBuilder,
  type UpdateResult,
} from 'kysely';
import { isAnyOf, isPostgres } from '../../db/dialect.ts';
import type { Db } from '../../db/index.ts';
import type { Database, WebhookDeliveriesTable, WebhookDeliveryStatus, WebhookSubscriptionsTable } from '../../db/schema.ts';

export type SubscriptionRow = Selectable<WebhookSubscriptionsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;

/** The associated data a subscription's signing keys are encrypted under: a key moved to another row fails to decrypt. */
export function keyAssociatedData(subscriptionId: string): string {
  return `webhook:${subscriptionId}`;
}

/**
 * Serialises subscription creation within a business, so the count checked before an insert holds
 * (PostgreSQL: an advisory lock to the end of the transaction; SQLite runs one writer at a time).
 */
export async function lockSubscriptionsOf(trx: Db, businessId: string): Promise<void> {
  if (isPostgres(trx)) await sql`select pg_advisory_xact_lock(hashtext(${`webhook_subscriptions:${businessId}`}))`.execute(trx);
}

export async function countSubscriptions(db: Db, businessId: string): Promise<number> {
  const row = await db
    .selectFrom('webhook_subscriptions')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('business_id', '=', businessId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertSubscription(db: Db, row: Insertable<WebhookSubscriptionsTable>): Promise<void> {
  await db.insertInto('webhook_subscriptions').values(row).execute();
}

export function listSubscriptions(db: Db, businessId: string): Promise<SubscriptionRow[]> {
  return db.selectFrom('webhook_subscriptions').selectAll().where('business_id', '=', businessId).orderBy('created_at').orderBy('id').execute();
}

export function getSubscription(db: Db, businessId: string, id: string): Promise<SubscriptionRow | undefined> {
  return db.selectFrom('webhook_subscriptions').selectAll().where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
}

export async function updateSubscription(
  db: Db,
  businessId: string,
  id: string,
  patch: Updateable<WebhookSubscriptionsTable>,
): Promise<SubscriptionRow | undefined> {
  return db
    .updateTable('webhook_subscriptions')
    .set(patch)
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteSubscription(db: Db, businessId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('webhook_subscriptions').where('business_id', '=', businessId).where('id', '=', id).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Active subscriptions of the businesses; the caller filters by event name (stored as JSON). */
export function activeSubscriptions(db: Db, businessIds: string[]): Promise<Pick<SubscriptionRow, 'id' | 'business_id' | 'event_names'>[]> {
  return db
    .selectFrom('webhook_subscriptions')
    .select(['id', 'business_id', 'event_names'])
    .where('business_id', 'in', businessIds)
    .where('status', '=', 'active')
    .execute();
}

/** Adds the deliveries, skipping any (subscription, event) pair that already has one; returns the ids of those added. */
export async function insertDeliveries(db: Db, rows: Insertable<WebhookDeliveriesTable>[]): Promise<string[]> {
  if (rows.length === 0) return [];
  const inserted = await db
    .insertInto('webhook_deliveries')
    .values(rows)
    .onConflict((oc) => oc.columns(['subscription_id', 'event_id']).doNothing())
    .returning('id')
    .execute();
  return inserted.map((row) => row.id);
}

export interface DeliveryFilter {
  status?: WebhookDeliveryStatus;
  eventTypes?: string[];
  /** The event's time (epoch ms), inclusive. */
  from?: number;
  /** The event's time (epoch ms), exclusive. */
  to?: number;
}

/** A subscription's deliveries, newest first. */
export function listDeliveries(db: Db, businessId: string, subscriptionId: string, filter: DeliveryFilter, limit: number, offset: number) {
  return db
    .selectFrom('webhook_deliveries')
    .select(['event_id', 'event_type', 'status', 'attempts', 'last_status_code', 'last_error', 'next_attempt_at'])
    .where('business_id', '=', businessId)
    .where('subscription_id', '=', subscriptionId)
    .$if(filter.status !== undefined, (qb) => qb.where('status', '=', filter.status!))
    .$if(filter.eventTypes !== undefined, (qb) => qb.where('event_type', 'in', filter.eventTypes!))
    .$if(filter.from !== undefined, (qb) => qb.where('created_at', '>=', filter.from!))
    .$if(filter.to !== undefined, (qb) => qb.where('created_at', '<', filter.to!))
    .orderBy('created_at', 'desc')
    .orderBy('event_id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}

/** The delivery with its event's ordering (for a job queued anew). */
export function getDelivery(db: Db, businessId: string, subscriptionId: string, eventId: string) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .selectAll('d')
    .select(['e.ordering_key', 'e.sequence'])
    .where('d.business_id', '=', businessId)
    .where('d.subscription_id', '=', subscriptionId)
    .where('d.event_id', '=', eventId)
    .executeTakeFirst();
}

export function getEvent(db: Db, businessId: string, eventId: string) {
  return db.selectFrom('events').selectAll().where('business_id', '=', businessId).where('id', '=', eventId).executeTakeFirst();
}

/** An event's deliveries, one per subscription, oldest subscription first. */
export function eventDeliveries(db: Db, businessId: string, eventId: string) {
  return db
    .selectFrom('webhook_deliveries')
    .select(['id', 'subscription_id', 'status', 'attempts', 'last_status_code', 'last_error', 'next_attempt_at', 'updated_at'])
    .where('business_id', '=', businessId)
    .where('event_id', '=', eventId)
    .orderBy('subscription_id')
    .execute();
}

export interface ReplayPage {
  /** Epoch ms, inclusive. */
  from: number;
  /** Epoch ms, exclusive. */
  to: number;
  types: string[];
  /** Keyset position: events strictly after (createdAt, id). */
  after: { createdAt: number; id: string } | null;
  limit: number;
}

/** The business's events in the window, oldest first, with the subscription's delivery of each where there is one. */
export function eventsToReplay(db: Db, businessId: string, subscriptionId: string, page: ReplayPage) {
  let query = db
    .selectFrom('events as e')
    .leftJoin('webhook_deliveries as d', (join) => join.onRef('d.event_id', '=', 'e.id').on('d.subscription_id', '=', subscriptionId))
    .select(['e.id', 'e.type', 'e.created_at', 'e.ordering_key', 'e.sequence', 'd.id as delivery_id', 'd.job_id'])
    .where('e.business_id', '=', businessId)
    .where('e.type', 'in', page.types)
    .where('e.created_at', '>=', page.from)
    .where('e.created_at', '<', page.to);
  if (page.after) {
    const { createdAt, id } = page.after;
    query = query.where((eb) => eb(eb.refTuple('e.created_at', 'e.id'), '>', eb.tuple(createdAt, id)));
  }
  return query.orderBy('e.created_at').orderBy('e.id').limit(page.limit).execute();
}

/**
 * Notes a failed attempt on the delivery's subscription (while active): `failing_since` keeps the
 * first failure in a row. Returns the subscription as it is then.
 */
export function markFailing(db: Db, businessId: string, deliveryId: string, now: number) {
  return db
    .updateTable('webhook_subscriptions')
    .set((eb) => ({ failing_since: eb.fn.coalesce('failing_since', eb.val(now)) }))
    .where('business_id', '=', businessId)
    .where('status', '=', 'active')
    .where('id', '=', (eb) =>
      eb.selectFrom('webhook_deliveries').select('subscription_id').where('id', '=', deliveryId).where('business_id', '=', businessId),
    )
    .returning(['id', 'endpoint', 'failing_since'])
    .executeTakeFirst();
}

/** Disables an active subscription; returns it, or nothing when it was not active. */
export function disableActive(db: Db, businessId: string, id: string, reason: string, now: number) {
  return db
    .updateTable('webhook_subscriptions')
    .set({ status: 'disabled', disabled_reason: reason, updated_at: now })
    .where('business_id', '=', businessId)
    .where('id', '=', id)
    .where('status', '=', 'active')
    .returning(['id', 'endpoint', 'failing_since'])
    .executeTakeFirst();
}

/**
 * What attempts need, for many deliveries in one statement: each delivery with its business, its
 * subscription and the stored event body. The caller matches each row's business to its own.
 */
export function loadAttempts(db: Db, deliveryIds: readonly string[]) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_subscriptions as s', 's.id', 'd.subscription_id')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .select([
      'd.id',
      'd.business_id',
      'd.event_id',
      'd.subscription_id',
      'd.status as delivery_status',
      's.endpoint',
      's.status as subscription_status',
      's.signing_key',
      's.previous_signing_key',
      's.previous_key_expires_at',
      's.failing_since',
      'e.payload',
    ])
    .where((eb) => isAnyOf(db, eb.ref('d.id'), deliveryIds))
    .execute();
}

export type AttemptRow = Awaited<ReturnType<typeof loadAttempts>>[number];

export interface AttemptRecord {
  status: WebhookDeliveryStatus;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: number | null;
}

/** One attempt as the attempts table keeps it. */
export interface AttemptLog {
  deliveryId: string;
  startedAt: number;
  finishedAt: number;
  statusCode: number | null;
  error: string | null;
}

/** An error longer than this is cut (it is a class of failure, never a body). */
const ATTEMPT_ERROR_MAX = 200;

/** Most recent attempts of a delivery an event's inspection shows. */
export const ATTEMPTS_SHOWN = 50;

type DeliveryUpdate = UpdateQueryBuilder<Database, 'webhook_deliveries', 'webhook_deliveries', { business_id: string; id: string; attempts: number }>;
type SubscriptionUpdate = UpdateQueryBuilder<Database, 'webhook_subscriptions', 'webhook_subscriptions', UpdateResult>;

/**
 * Runs an update of delivery rows that counts an attempt on each (`attempts + 1`, returning the rows)
 * and adds each one's attempt, numbered by that count, in the same statement on PostgreSQL (a
 * data-modifying WITH: no round trip more than the update alone) and in one transaction on SQLite.
 */
/**
 * Runs `update` on delivery rows and logs their attempts, in one statement on PostgreSQL; `alongside`,
 * another write, goes in the same statement (PostgreSQL) or transaction (SQLite).
 */
async function updateWithAttempts(
  db: Db,
  update: (qc: QueryCreator<Database>) => DeliveryUpdate,
  attempts: AttemptLog[],
  alongside?: (qc: QueryCreator<Database>) => SubscriptionUpdate,
): Promise<void> {
  if (isPostgres(db)) {
    const values = sql.join(
      attempts.map(
        (a) =>
          sql`(cast(${a.deliveryId} as text), cast(${a.startedAt} as bigint), cast(${a.finishedAt} as bigint), cast(${a.statusCode} as integer), cast(${truncate(a.error)} as text))`,
      ),
    );
    await (alongside ? db.with('u', update).with('c', alongside) : db.with('u', update))
      .insertInto('webhook_delivery_attempts')
      .columns(['delivery_id', 'attempt', 'business_id', 'started_at', 'finished_at', 'duration_ms', 'status_code', 'error'])
      .expression(
        sql`select u.id, u.attempts, u.business_id, v.started_at, v.finished_at, v.finished_at - v.started_at, v.status_code, v.error
            from u join (values ${values}) as v (delivery_id, started_at, finished_at, status_code, error) on v.delivery_id = u.id`,
      )
      .execute();
    return;
  }
  const run = async (trx: Db) => {
    const updated = await update(trx).execute();
    const byId = new Map(attempts.map((a) => [a.deliveryId, a]));
    const rows = updated.flatMap((row) => {
      const a = byId.get(row.id);
      if (!a) return [];
      return [
        {
          delivery_id: row.id,
          attempt: Number(row.attempts),
          business_id: row.business_id,
          started_at: a.startedAt,
          finished_at: a.finishedAt,
          duration_ms: a.finishedAt - a.startedAt,
          status_code: a.statusCode,
          error: truncate(a.error),
        },
      ];
    });
    if (rows.length > 0) await trx.insertInto('webhook_delivery_attempts').values(rows).execute();
    if (alongside) await alongside(trx).execute();
  };
  if (db.isTransaction) await run(db);
  else await db.transaction().execute((trx: Transaction<Database>) => run(trx));
}

function truncate(error: string | null): string | null {
  return error === null || error.length <= ATTEMPT_ERROR_MAX ? error : `${error.slice(0, ATTEMPT_ERROR_MAX - 1)}…`;
}

/** A failed attempt: the queue's decision on the delivery row, and the attempt itself. */
export async function recordAttempt(
  db: Db,
  businessId: string,
  deliveryId: string,
  record: AttemptRecord,
  timing: { startedAt: number; finishedAt: number },
): Promise<void> {
  await updateWithAttempts(
    db,
    (qc) =>
      qc
        .updateTable('webhook_deliveries')
        .set((eb) => ({
          status: record.status,
          attempts: eb('attempts', '+', 1),
          last_status_code: record.lastStatusCode,
          last_error: record.lastError,
          next_attempt_at: record.nextAttemptAt,
          updated_at: Date.now(),
        }))
        .where('business_id', '=', businessId)
        .where('id', '=', deliveryId)
        .returning(['business_id', 'id', 'attempts']),
    [{ deliveryId, ...timing, statusCode: record.lastStatusCode, error: record.lastError }],
  );
}

/**
 * The most recent attempts (at most ATTEMPTS_SHOWN each) of the deliveries, oldest first within each.
 */
export function recentAttempts(db: Db, businessId: string, deliveryIds: string[]) {
  if (deliveryIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom((qc) =>
      qc
        .selectFrom('webhook_delivery_attempts')
        .select(['delivery_id', 'attempt', 'started_at', 'finished_at', 'duration_ms', 'status_code', 'error'])
        .select((eb) =>
          eb.fn
            .agg<number>('row_number', [])
            .over((ob) => ob.partitionBy('delivery_id').orderBy('attempt', 'desc'))
            .as('recency'),
        )
        .where('business_id', '=', businessId)
        .where('delivery_id', 'in', deliveryIds)
        .as('a'),
    )
    .select(['delivery_id', 'attempt', 'started_at', 'finished_at', 'duration_ms', 'status_code', 'error'])
    .where('recency', '<=', ATTEMPTS_SHOWN)
    .orderBy('delivery_id')
    .orderBy('attempt')
    .execute();
}

/** The state the job queue decided, without an attempt's answer (nothing was sent). */
export async function settleDelivery(
  db: Db,
  businessId: string,
  deliveryId: string,
  record: { status: WebhookDeliveryStatus; nextAttemptAt: number | null; lastErrorIfNone: string | null },
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({
      status: record.status,
      next_attempt_at: record.nextAttemptAt,
      last_error: eb.fn.coalesce('last_error', eb.val(record.lastErrorIfNone)),
      updated_at: Date.now(),
    }))
    .where('business_id', '=', businessId)
    .where('id', '=', deliveryId)
    .execute();
}

/** Records successful attempts that got `statusCode`, as recordAttempt does, in one statement (PostgreSQL) or transaction (SQLite). */
/**
 * Records successful attempts and, in the same statement, ends the run of failures of
 * `subscriptionIds` that are failing (a success ends it, even one in flight when it began).
 */
export async function recordSuccesses(
  db: Db,
  statusCode: number,
  deliveries: Array<{ businessId: string; deliveryId: string; startedAt: number; finishedAt: number }>,
  subscriptionIds: string[] = [],
): Promise<void> {
  await updateWithAttempts(
    db,
    (qc) =>
      qc
        .updateTable('webhook_deliveries')
        .set((eb) => ({
          status: 'succeeded',
          attempts: eb('attempts', '+', 1),
          last_status_code: statusCode,
          last_error: null,
          next_attempt_at: null,
          updated_at: Date.now(),
        }))
        .where((eb) =>
          eb(
            eb.refTuple('business_id', 'id'),
            'in',
            deliveries.map((d) => eb.tuple(d.businessId, d.deliveryId)),
          ),
        )
        .returning(['business_id', 'id', 'attempts']),
    deliveries.map((d) => ({ deliveryId: d.deliveryId, startedAt: d.startedAt, finishedAt: d.finishedAt, statusCode, error: null })),
    subscriptionIds.length === 0
      ? undefined
      : (qc) =>
          qc
            .updateTable('webhook_subscriptions')
            .set({ failing_since: null })
            .where('id', 'in', subscriptionIds)
            .where('failing_since', 'is not', null),
  );
}

/** Marks the delivery pending again (a manual retry), due at `dueAt`. */
export async function requeueDelivery(db: Db, businessId: string, deliveryId: string, dueAt: number, jobId: string): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ status: 'pending', next_attempt_at: dueAt, job_id: jobId, updated_at: Date.now() })
    .where('business_id', '=', businessId)
    .where('id', '=', deliveryId)
    .execute();
}
