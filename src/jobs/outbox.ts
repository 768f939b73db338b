/**
 * The event outbox: an event is stored in the caller's transaction, so it commits with the change
 * that caused it, or not at all. Background jobs turn stored events into deliveries.
 */
import type { Db } from '../db/index.ts';
import { newId } from '../db/ids.ts';

export type EventType = 'external_review.request';

export interface NewEvent {
  businessId: string;
  type: EventType;
  /** The event body as delivered (for external_review.request: interface section 6). */
  payload: Record<string, unknown>;
}

/** Stores the event in `db` (pass the transaction of the change) and returns its id. */
export async function recordEvent(db: Db, event: NewEvent): Promise<string> {
  const id = newId('evt');
  await db.insertInto('events').values({
    id,
    business_id: event.businessId,
    type: event.type,
    payload: JSON.stringify(event.payload),
    created_at: Date.now(),
  }).execute();
  return id;
}
