/**
 * The event outbox: an event is stored in the caller's transaction, so it commits with the change
 * that caused it, or not at all. With it goes an `event.dispatch` job, which runs the hooks that
 * modules register with `jobs.onEvent(type, hook)`; the hooks turn the event into deliveries (one
 * job per recipient). See queue.ts for the whole design.
 */
import { sql, type Selectable } from 'kysely';
import type { EventsTable } from '../db/schema.ts';
import { writeWithNext, type Db } from '../db/index.ts';
import { isSequenced, type EventBody, type EventInput, type EventName } from '../events.ts';
import { newId } from '../db/ids.ts';
import { isPostgres } from '../db/dialect.ts';
import { enqueue, jobRow } from './queue-repo.ts';

export const EVENT_DISPATCH = 'event.dispatch';

export interface NewEvent<N extends EventName = EventName> {
  businessId: string;
  type: N;
  /** The event body as delivered (src/events.ts declares each), without the `sequence` recordEvent adds. */
  payload: EventInput<N>;
  /**
   * Events of one key (`appointment:<id>`, `patient:<ref>`) are numbered 1, 2, ... and delivered to
   * each subscription in that order. The caller holds the lock that orders the key's changes (the
   * appointment's row, the patient's records lock), so the numbers follow the commits.
   */
  orderingKey?: string;
  /**
   * The event's number, where the caller keeps its key's count (an appointment's row keeps the number
   * of its last event): the key's last is then not read from the events.
   */
  sequence?: number;
}

export interface StoredEvent {
  id: string;
  businessId: string;
  type: EventName;
  payload: EventBody;
  createdAt: number;
  orderingKey: string | null;
  sequence: number | null;
}

/** The key of an appointment's events. */
export function appointmentKey(appointmentId: string): string {
  return `appointment:${appointmentId}`;
}

/** The key of the events of a patient's cases. */
export function patientKey(patientRef: string): string {
  return `patient:${patientRef}`;
}

/** Stores the event and its dispatch job in `db` (pass the transaction of the change) and returns the event id. */
export async function recordEvent<N extends EventName>(db: Db, event: NewEvent<N>): Promise<string> {
  const id = newId('evt');
  const now = Date.now();
  const key = event.orderingKey ?? null;
  let sequence: number | null = null;
  let payload: unknown = event.payload;
  if (key !== null) {
    sequence = event.sequence ?? (await nextSequence(db, event.businessId, key));
    if (isSequenced(event.type)) payload = withSequence(event.payload, sequence);
  } else if (isSequenced(event.type)) {
    throw new Error(`event ${event.type} needs an ordering key`);
  }
  const row = {
    id,
    business_id: event.businessId,
    type: event.type,
    payload: JSON.stringify(payload),
    created_at: now,
    ordering_key: key,
    sequence,
  };
  const job = {
    kind: EVENT_DISPATCH,
    businessId: event.businessId,
    payload: { eventId: id },
    dedupeKey: id,
    // Dispatched in order too: a later event's deliveries are only queued after the earlier one's. Keys
    // are the business's own (two businesses may name a patient alike), so the job's is prefixed.
    ...(key !== null && sequence !== null && { ordering: { key: `${event.businessId}|${key}`, seq: sequence } }),
  };
  if (isPostgres(db)) {
    // One statement, sent with the transaction's next one (or its COMMIT); the dispatch job's key is
    // the new event's id, so it cannot conflict.
    await writeWithNext(
      db,
      db
        .with('event', (qb) => qb.insertInto('events').values(row))
        .insertInto('jobs')
        .values(jobRow(job, now)),
    );
  } else {
    await db.insertInto('events').values(row).execute();
    await enqueue(db, job);
  }
  return id;
}

/** The number after the last event of `key`. */
async function nextSequence(db: Db, businessId: string, key: string): Promise<number> {
  const last = await db
    .selectFrom('events')
    .select((eb) => eb.fn.max('sequence').as('last'))
    .where('business_id', '=', businessId)
    .where('ordering_key', '=', key)
    .executeTakeFirst();
  return Number(last?.last ?? 0) + 1;
}

/** The body with `sequence` after `event`, where the envelope declares it. */
function withSequence(payload: object, sequence: number): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(payload).flatMap(([name, value]) =>
      name === 'event'
        ? [
            [name, value],
            ['sequence', sequence],
          ]
        : [[name, value]],
    ),
  );
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
    // Parsed when a hook reads it: the webhooks' fan-out needs only the event's id, type and key.
    get payload() {
      return JSON.parse(row.payload) as EventBody;
    },
    createdAt: row.created_at,
    orderingKey: row.ordering_key,
    sequence: row.sequence === null ? null : Number(row.sequence),
  }));
}

/** `value` matched literally by LIKE ... ESCAPE '!'. */
function likeEscaped(value: string): string {
  return value.replace(/[!%_]/g, (c) => `!${c}`);
}

/**
 * The events about a patient (the privacy module's export and erasure): those of the ordering keys of
 * its rows, and the unordered ones whose body names one of its ids (a review request, a merge).
 */
export async function eventsAbout(db: Db, businessId: string, orderingKeys: string[], ids: string[]): Promise<Selectable<EventsTable>[]> {
  if (orderingKeys.length === 0 && ids.length === 0) return [];
  return db
    .selectFrom('events')
    .selectAll()
    .where('business_id', '=', businessId)
    .where((eb) =>
      eb.or([
        ...(orderingKeys.length === 0 ? [] : [eb('ordering_key', 'in', orderingKeys)]),
        eb.and([
          eb('ordering_key', 'is', null),
          eb.or(ids.map((id) => sql<boolean>`payload like ${`%${likeEscaped(JSON.stringify(id))}%`} escape '!'`)),
        ]),
      ]),
    )
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Replaces a stored event's body (an erasure's redaction). */
export async function replaceEventPayload(db: Db, id: string, payload: string): Promise<void> {
  await db.updateTable('events').set({ payload }).where('id', '=', id).execute();
}
