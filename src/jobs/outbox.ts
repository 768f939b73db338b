/**
 * The event outbox: an event is stored in the caller's transaction, so it commits with the change
 * that caused it, or not at all. With it goes an `event.dispatch` job, which runs the hooks that
 * modules register with `jobs.onEvent(type, hook)`; the hooks turn the event into deliveries (one
 * job per recipient). See worker.ts for the whole design.
 */
import type { Db } from '../db/index.ts';
import type { EventBody, EventName } from '../events.ts';
import { newId } from '../db/ids.ts';
import { isPostgres } from '../db/dialect.ts';
import { enqueue, jobRow } from './queue.ts';

export const EVENT_DISPATCH = 'event.dispatch';

export interface NewEvent<N extends EventName = EventName> {
  businessId: string;
  type: N;
  /** The event body as delivered (src/events.ts declares each). */
  payload: EventBody<N>;
}

export interface StoredEvent {
  id: string;
  businessId: string;
  type: EventName;
  payload: EventBody;
  createdAt: number;
}

/** Stores the event and its dispatch job in `db` (pass the transaction of the change) and returns the event id. */
export async function recordEvent<N extends EventName>(db: Db, event: NewEvent<N>): Promise<string> {
  const id = newId('evt');
  const now = Date.now();
  const row = { id, business_id: event.businessId, type: event.type, payload: JSON.stringify(event.payload), created_at: now };
  const job = { kind: EVENT_DISPATCH, businessId: event.businessId, payload: { eventId: id }, dedupeKey: id };
  if (isPostgres(db)) {
    // One round trip inside the caller's transaction; the dispatch job's key is the new event's id,
    // so it cannot conflict.
    await db
      .with('event', (qb) => qb.insertInto('events').values(row))
      .insertInto('jobs')
      .values(jobRow(job, now))
      .execute();
  } else {
    await db.insertInto('events').values(row).execute();
    await enqueue(db, job);
  }
  return id;
}

/** The events of `ids` that exist (a deleted business's are gone), in no particular order. */
export async function loadEvents(db: Db, ids: string[]): Promise<StoredEvent[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('events')
    .selectAll()
    .where('id', 'in', [...new Set(ids)])
    .execute();
  return rows.map((row) => ({
    id: row.id,
    businessId: row.business_id,
    type: row.type as EventName,
    payload: JSON.parse(row.payload) as EventBody,
    createdAt: row.created_at,
  }));
}
