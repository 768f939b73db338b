/** Rows written straight into the tables retention prunes, aged to the millisecond around a cutoff. */
import type { Insertable } from 'kysely';
import { newId } from '../../../src/db/ids.ts';
import type { Database } from '../../../src/db/schema.ts';
import type { TestApp } from '../../support.ts';

export const DAY = 86_400_000;
/**
 * How far from a cutoff a row "just older" or "just younger" than its period is: ten minutes, so that
 * a row of an earlier test stays young in the runs of the later ones (each run takes its own now).
 */
export const MARGIN = 10 * 60_000;

export function db(t: TestApp) {
  return t.ctx.storage.db;
}

export async function count(t: TestApp, table: keyof Database & string): Promise<number> {
  const row = await db(t)
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertJob(t: TestApp, row: Partial<Insertable<Database['jobs']>>): Promise<string> {
  const id = newId('job');
  const now = Date.now();
  await db(t)
    .insertInto('jobs')
    .values({
      id,
      kind: 'test.kind',
      payload: '{}',
      status: 'pending',
      due_at: now,
      created_at: now,
      updated_at: now,
      ...row,
    })
    .execute();
  return id;
}

export async function insertEvent(t: TestApp, businessId: string, createdAt: number, ordering?: { key: string; sequence: number }): Promise<string> {
  const id = newId('evt');
  await db(t)
    .insertInto('events')
    .values({
      id,
      business_id: businessId,
      type: 'appointment.created',
      payload: '{}',
      created_at: createdAt,
      ordering_key: ordering?.key ?? null,
      sequence: ordering?.sequence ?? null,
    })
    .execute();
  return id;
}

export async function insertSubscription(t: TestApp, businessId: string): Promise<string> {
  const id = newId('whs');
  const now = Date.now();
  await db(t)
    .insertInto('webhook_subscriptions')
    .values({
      id,
      business_id: businessId,
      endpoint: `https://example.org/${id}`,
      protocol: 'https',
      event_names: '[]',
      status: 'active',
      signing_key: 'sealed',
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

export async function insertDelivery(
  t: TestApp,
  ids: { businessId: string; subscriptionId: string; eventId: string },
  status: 'pending' | 'succeeded' | 'failed',
  updatedAt: number,
): Promise<string> {
  const id = newId('whd');
  await db(t)
    .insertInto('webhook_deliveries')
    .values({
      id,
      business_id: ids.businessId,
      subscription_id: ids.subscriptionId,
      event_id: ids.eventId,
      event_type: 'appointment.created',
      status,
      created_at: updatedAt,
      updated_at: updatedAt,
    })
    .execute();
  return id;
}

export async function insertNotification(
  t: TestApp,
  businessId: string,
  createdAt: number,
  deliveries: Array<{ status: 'pending' | 'sent' | 'failed' | 'dropped'; updatedAt: number }>,
) {
  const id = newId('pn');
  await db(t)
    .insertInto('push_notifications')
    .values({ id, business_id: businessId, title: 'Reminder', body: 'Your appointment', created_by: 'client', created_at: createdAt })
    .execute();
  for (const [i, delivery] of deliveries.entries()) {
    await db(t)
      .insertInto('push_deliveries')
      .values({ notification_id: id, did: `device-${i}`, business_id: businessId, status: delivery.status, updated_at: delivery.updatedAt })
      .execute();
  }
  return id;
}
