/** SQL of the webhooks module; every query is scoped by business_id. */
import type { Insertable, Selectable, Updateable } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { WebhookDeliveriesTable, WebhookDeliveryStatus, WebhookSubscriptionsTable } from '../../db/schema.ts';

export type SubscriptionRow = Selectable<WebhookSubscriptionsTable>;
export type DeliveryRow = Selectable<WebhookDeliveriesTable>;

/** The associated data a subscription's signing keys are encrypted under: a key moved to another row fails to decrypt. */
export function keyAssociatedData(subscriptionId: string): string {
  return `webhook:${subscriptionId}`;
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

/** Adds the deliveries, skipping any (subscription, event) pair that already has one; returns how many were added. */
export async function insertDeliveries(db: Db, rows: Insertable<WebhookDeliveriesTable>[]): Promise<number> {
  if (rows.length === 0) return 0;
  const inserted = await db
    .insertInto('webhook_deliveries')
    .values(rows)
    .onConflict((oc) => oc.columns(['subscription_id', 'event_id']).doNothing())
    .returning('id')
    .execute();
  return inserted.length;
}

/** A subscription's deliveries, newest first. */
export function listDeliveries(db: Db, businessId: string, subscriptionId: string, limit: number, offset: number) {
  return db
    .selectFrom('webhook_deliveries')
    .select(['event_id', 'event_type', 'status', 'attempts', 'last_status_code', 'last_error', 'next_attempt_at'])
    .where('business_id', '=', businessId)
    .where('subscription_id', '=', subscriptionId)
    .orderBy('created_at', 'desc')
    .orderBy('event_id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}

export function getDelivery(db: Db, businessId: string, subscriptionId: string, eventId: string): Promise<DeliveryRow | undefined> {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('subscription_id', '=', subscriptionId)
    .where('event_id', '=', eventId)
    .executeTakeFirst();
}

/** What one attempt needs: the delivery, its subscription and the stored event body. */
export function loadAttempt(db: Db, businessId: string, deliveryId: string) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_subscriptions as s', 's.id', 'd.subscription_id')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .select([
      'd.id',
      'd.event_id',
      'd.subscription_id',
      'd.status as delivery_status',
      's.endpoint',
      's.status as subscription_status',
      's.signing_key',
      's.previous_signing_key',
      's.previous_key_expires_at',
      'e.payload',
    ])
    .where('d.business_id', '=', businessId)
    .where('d.id', '=', deliveryId)
    .executeTakeFirst();
}

export interface AttemptRecord {
  status: WebhookDeliveryStatus;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: number | null;
}

export async function recordAttempt(db: Db, businessId: string, deliveryId: string, record: AttemptRecord): Promise<void> {
  await db
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

/** Records successful attempts that got `statusCode`, as recordAttempt does, in one statement. */
export async function recordSuccesses(db: Db, statusCode: number, deliveries: Array<{ businessId: string; deliveryId: string }>): Promise<void> {
  await db
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
    .execute();
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
