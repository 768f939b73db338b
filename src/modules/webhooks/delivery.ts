/**
 * Webhook delivery: an event becomes one delivery per matching active subscription (fanOut, run
 * by the event dispatch in one transaction), and each delivery is sent by attempts (attempt), one
 * per job run. The body is the event's stored payload as body.ts writes it, byte for byte the same
 * on every attempt; `webhook-id` is the event id; `webhook-timestamp` and the `t` of
 * `Eka-Webhook-Signature` are the attempt's time.
 */
import { envelope } from '../../events.ts';
import type { Insertable } from 'kysely';
import type { Counter } from 'prom-client';
import type { Logger } from 'pino';
import { inTransaction, type Db, type Storage } from '../../db/index.ts';
import { recordEvent } from '../../jobs/outbox.ts';
import { newId } from '../../db/ids.ts';
import type { WebhookDeliveriesTable } from '../../db/schema.ts';
import { decrypt } from '../../security/encryption.ts';
import { failureDetail } from '../../security/outbound-client.ts';
import * as repo from './repo.ts';
import type { Sender } from './sender.ts';
import { deliveryBody } from './body.ts';
import { ekaSignatureHeader, prepareKey, signatureHeader, type PreparedKey } from './signer.ts';
import { PermanentError, RetryableError } from '../../jobs/queue-repo.ts';
import type { FailedAttempt } from '../../jobs/queue.ts';

export const DELIVERY_JOB = 'webhook.delivery';

/** How deliveries become jobs: provided by the delivery wiring (wiring.ts). */
export interface DeliveryQueue {
  /**
   * Adds the jobs that send the deliveries, in `db` (a transaction), in one statement, and returns
   * their ids in order; where a job with the same `key` is already queued, its id instead (not fresh).
   */
  enqueue(db: Db, deliveries: QueuedDelivery[]): Promise<Array<{ id: string; fresh: boolean }>>;
  /**
   * Makes the existing job `jobId` (of the delivery's key) send `delivery`, due now: its own delivery
   * row is gone (pruned by retention while the job was kept). Returns the job id (a new one if that
   * job is gone meanwhile).
   */
  adopt(db: Db, delivery: QueuedDelivery, jobId: string): Promise<string>;
  /** Queues the delivery's job again, due now; returns the job id (a new one if the old is gone). */
  retry(db: Db, delivery: QueuedDelivery, jobId: string | null): Promise<string>;
}

export interface QueuedDelivery {
  businessId: string;
  deliveryId: string;
  /** deliveryKey(event, subscription) */
  key: string;
  /** The event's place among its key's events for this subscription (deliveryOrdering). */
  ordering: { key: string; seq: number } | null;
}

/**
 * A subscription receives the events of one appointment (one ordering key) in order: its delivery
 * jobs share a key, numbered by the events' sequence. Other subscriptions and keys do not wait.
 */
export function deliveryOrdering(subscriptionId: string, event: { orderingKey: string | null; sequence: number | null }) {
  return event.orderingKey !== null && event.sequence !== null ? { key: `${subscriptionId}|${event.orderingKey}`, seq: event.sequence } : null;
}

/** One delivery per (event, subscription): the key of its job. */
export function deliveryKey(eventId: string, subscriptionId: string): string {
  return `${eventId}:${subscriptionId}`;
}

export interface EventRef {
  id: string;
  businessId: string;
  type: string;
  createdAt: number;
  orderingKey: string | null;
  sequence: number | null;
}

/**
 * One delivery (and its job) per active subscription to each event's type, all in two statements;
 * a repeated call adds nothing. Returns the deliveries added.
 */
export async function fanOut(trx: Db, queue: DeliveryQueue, events: EventRef[]): Promise<number> {
  if (events.length === 0) return 0;
  // Each subscription's names are read once, not once per event.
  const subscriptions = Map.groupBy(
    (await repo.activeSubscriptions(trx, [...new Set(events.map((event) => event.businessId))])).map((subscription) => ({
      id: subscription.id,
      businessId: subscription.business_id,
      names: new Set(JSON.parse(subscription.event_names) as string[]),
    })),
    (subscription) => subscription.businessId,
  );
  const pairs: Array<[EventRef, string]> = [];
  for (const event of events) {
    for (const subscription of subscriptions.get(event.businessId) ?? []) {
      if (subscription.names.has(event.type)) pairs.push([event, subscription.id]);
    }
  }
  return addDeliveries(trx, queue, pairs);
}

/** One delivery (and its job) of each event to one subscription (a replay of events it never got). */
export function fanOutTo(trx: Db, queue: DeliveryQueue, subscriptionId: string, events: EventRef[]): Promise<number> {
  return addDeliveries(
    trx,
    queue,
    events.map((event) => [event, subscriptionId]),
  );
}

async function addDeliveries(trx: Db, queue: DeliveryQueue, pairs: Array<[EventRef, string]>): Promise<number> {
  const now = Date.now();
  const rows: Array<Omit<Insertable<WebhookDeliveriesTable>, 'job_id'> & { id: string }> = [];
  const jobs: Array<Pick<QueuedDelivery, 'key' | 'ordering'>> = [];
  for (const [event, subscriptionId] of pairs) {
    jobs.push({ key: deliveryKey(event.id, subscriptionId), ordering: deliveryOrdering(subscriptionId, event) });
    rows.push({
      id: newId('whd'),
      business_id: event.businessId,
      subscription_id: subscriptionId,
      event_id: event.id,
      event_type: event.type,
      status: 'pending',
      last_status_code: null,
      last_error: null,
      next_attempt_at: now,
      created_at: event.createdAt,
      updated_at: now,
    });
  }
  let added = 0;
  // Chunks keep each statement under SQLite's limit of bound values.
  for (let start = 0; start < rows.length; start += FAN_OUT_CHUNK) {
    const chunk = rows.slice(start, start + FAN_OUT_CHUNK);
    // The jobs first: their key is the (event, subscription) pair, so a repeated dispatch gets the
    // existing jobs back and the delivery insert below adds nothing for them.
    const queued = chunk.map((row, i) => ({ businessId: row.business_id, deliveryId: row.id, ...jobs[start + i]! }));
    const jobIds = await queue.enqueue(trx, queued);
    const inserted = new Set(
      await repo.insertDeliveries(
        trx,
        chunk.map((row, i) => ({ ...row, job_id: jobIds[i]!.id })),
      ),
    );
    added += inserted.size;
    // A new delivery whose key found an existing job: that job's delivery was pruned by retention (a
    // replay of an old event), so the job is another's; left so, it never sent this one.
    for (const [i, delivery] of queued.entries()) {
      if (!inserted.has(delivery.deliveryId) || jobIds[i]!.fresh) continue;
      const jobId = await queue.adopt(trx, delivery, jobIds[i]!.id);
      if (jobId !== jobIds[i]!.id) await repo.requeueDelivery(trx, delivery.businessId, delivery.deliveryId, now, jobId);
    }
  }
  return added;
}

/** Deliveries per insert statement (12 values each for the delivery, 17 for its job). */
const FAN_OUT_CHUNK = 500;

export type AttemptOutcome =
  | { kind: 'succeeded'; statusCode: number }
  /** Nothing to send: the subscription or the event was deleted. */
  | { kind: 'gone' };

/**
 * An attempt the receiver did not accept, thrown to the job queue, which decides whether and when
 * the delivery is tried again; `recordFailedAttempt` writes that decision on the delivery row.
 * The message is what the partner sees: the class of failure ("HTTP 503", "could not connect").
 */
export class DeliveryRetry extends RetryableError {
  readonly statusCode: number | null;
  readonly timing: AttemptTiming;
  constructor(message: string, statusCode: number | null, retryAfterSeconds: number | null, timing: AttemptTiming = instant()) {
    super(message, { retryAfterSeconds });
    this.statusCode = statusCode;
    this.timing = timing;
  }
}

/** An attempt that retrying cannot help: the subscription is disabled, or the endpoint answered 410. */
export class DeliveryRefused extends PermanentError {
  readonly statusCode: number | null;
  readonly timing: AttemptTiming;
  constructor(message: string, statusCode: number | null, timing: AttemptTiming = instant()) {
    super(message);
    this.statusCode = statusCode;
    this.timing = timing;
  }
}

/** When an attempt started and finished (epoch ms): what the attempts table keeps of its timing. */
export interface AttemptTiming {
  startedAt: number;
  finishedAt: number;
}

/** The timing of an attempt that sent nothing. */
function instant(): AttemptTiming {
  const now = Date.now();
  return { startedAt: now, finishedAt: now };
}

export interface AttemptInput {
  businessId: string;
  deliveryId: string;
  /** 1 for the first attempt (of this round: a manual retry starts again at 1). */
  attempt: number;
  signal?: AbortSignal;
}

export interface AttemptDeps {
  storage: Storage;
  loads: AttemptLoads;
  signingKeys: SigningKeys;
  successes: SuccessRecords;
  sender: Sender;
  logger: Logger;
  outcomes?: Counter<'outcome'>;
  disabled?: Counter<'reason'>;
}

/** What follows failed attempts beyond the delivery: a subscription failing for too long is disabled. */
export interface FailurePolicy {
  /** CPS_WEBHOOK_DISABLE_AFTER_SECONDS in ms; 0: never. */
  disableAfterMs: number;
  logger: Logger;
  outcomes?: Counter<'outcome'>;
  disabled?: Counter<'reason'>;
}

/**
 * Disables an active subscription and, in the same transaction (`db`), records the
 * `webhook.subscription.disabled` event for the business's other subscriptions.
 */
export async function disableSubscription(
  db: Db,
  businessId: string,
  subscriptionId: string,
  reason: { text: string; label: 'failing' | 'gone' },
  disabled?: Counter<'reason'>,
): Promise<boolean> {
  const now = Date.now();
  const row = await repo.disableActive(db, businessId, subscriptionId, reason.text, now);
  if (!row) return false;
  await recordEvent(db, {
    businessId,
    type: 'webhook.subscription.disabled',
    payload: {
      // No API client caused it.
      ...envelope('webhook.subscription.disabled', { businessId, clientId: null }, now),
      data: {
        subscription_id: row.id,
        endpoint: row.endpoint,
        reason: reason.text,
        failing_since: row.failing_since === null ? null : Math.floor(Number(row.failing_since) / 1000),
      },
    },
  });
  disabled?.inc({ reason: reason.label });
  return true;
}

/** Sends one attempt; a success is recorded here, anything else is thrown for the queue to settle. */
export async function attempt(deps: AttemptDeps, input: AttemptInput): Promise<AttemptOutcome> {
  const db = deps.storage.db;
  const row = await deps.loads.load(input.businessId, input.deliveryId);
  if (!row) return { kind: 'gone' };
  const log = { subscription_id: row.subscription_id, event_id: row.event_id, attempt: input.attempt };

  if (row.subscription_status !== 'active') {
    deps.outcomes?.inc({ outcome: 'failed' });
    throw new DeliveryRefused('the subscription is disabled', null);
  }

  const ad = repo.keyAssociatedData(row.subscription_id);
  const now = Date.now();
  const keys = [deps.signingKeys.key(row.signing_key, ad)];
  if (row.previous_signing_key && row.previous_key_expires_at !== null && row.previous_key_expires_at > now) {
    keys.push(deps.signingKeys.key(row.previous_signing_key, ad));
  }
  const timestamp = Math.floor(now / 1000);
  const body = deliveryBody(row.payload);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'OpenCPS-Webhooks/1.0',
    'webhook-id': row.event_id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(keys, row.event_id, timestamp, body),
    'Eka-Webhook-Signature': ekaSignatureHeader(keys, timestamp, body),
  };

  let statusCode: number | null = null;
  let retryAfterSeconds: number | null = null;
  // What the partner sees is the class of failure ("HTTP 503", "could not connect", ...); the
  // network details go to the log only.
  let error: string;
  let detail: ReturnType<typeof failureDetail> | undefined;
  const startedAt = Date.now();
  try {
    const result = await deps.sender.send(row.endpoint, headers, body, input.signal);
    statusCode = result.statusCode;
    retryAfterSeconds = result.retryAfterSeconds;
    error = `HTTP ${statusCode}`;
  } catch (caught) {
    // Interrupted by shutdown or a lost lease: nothing to record; the job runs again after its lease.
    if (input.signal?.aborted) throw caught;
    detail = failureDetail(caught);
    error = detail.failure;
  }
  const timing = { startedAt, finishedAt: Date.now() };

  if (statusCode !== null && statusCode >= 200 && statusCode < 300) {
    // Whether the subscription was failing when the row was read or became so since (a failure landing
    // while this attempt ran), the success ends the run (recordSuccesses touches only a failing one).
    await deps.successes.record(input.businessId, row.id, statusCode, timing, row.subscription_id);
    deps.outcomes?.inc({ outcome: 'succeeded' });
    deps.logger.debug({ ...log, status_code: statusCode }, 'webhook delivered');
    return { kind: 'succeeded', statusCode };
  }
  if (statusCode === 410) {
    // The receiver says the endpoint is gone for good: stop sending to it until re-enabled.
    await inTransaction(db, (trx) =>
      disableSubscription(trx, input.businessId, row.subscription_id, { text: 'endpoint answered 410 Gone', label: 'gone' }, deps.disabled),
    );
    deps.outcomes?.inc({ outcome: 'disabled' });
    deps.logger.warn(log, 'webhook endpoint answered 410 Gone; subscription disabled');
    throw new DeliveryRefused('HTTP 410 (the subscription was disabled)', 410, timing);
  }
  deps.logger.info({ ...log, status_code: statusCode, error, ...detail }, 'webhook attempt failed');
  throw new DeliveryRetry(error, statusCode, retryAfterSeconds, timing);
}

/**
 * Writes on the delivery row what the queue decided about an attempt that did not succeed, in the
 * transaction that settles its job: pending until `dueAt`, or failed. An attempt that reached the
 * receiver (or tried to) counts, with what it answered; a failure before sending (the database)
 * changes only the state, so the partner never sees an internal error.
 */
export async function recordFailedAttempt(
  db: Db,
  businessId: string,
  deliveryId: string,
  outcome: FailedAttempt,
  cause: unknown,
  policy?: FailurePolicy,
): Promise<void> {
  const sent = cause instanceof DeliveryRetry || cause instanceof DeliveryRefused;
  const nextAttemptAt = outcome.status === 'pending' ? outcome.dueAt : null;
  if (sent) {
    if (cause instanceof DeliveryRetry) policy?.outcomes?.inc({ outcome: outcome.status === 'pending' ? 'retried' : 'failed' });
    await repo.recordAttempt(
      db,
      businessId,
      deliveryId,
      { status: outcome.status, lastStatusCode: cause.statusCode, lastError: cause.message, nextAttemptAt },
      cause.timing,
    );
    if (cause instanceof DeliveryRetry && policy) await noteFailure(db, businessId, deliveryId, policy);
  } else {
    await repo.settleDelivery(db, businessId, deliveryId, {
      status: outcome.status,
      nextAttemptAt,
      lastErrorIfNone: outcome.status === 'failed' ? 'the delivery could not be attempted' : null,
    });
  }
}

/** A failed attempt starts or continues its subscription's run of failures; one too long disables it. */
async function noteFailure(db: Db, businessId: string, deliveryId: string, policy: FailurePolicy): Promise<void> {
  const now = Date.now();
  const subscription = await repo.markFailing(db, businessId, deliveryId, now);
  if (!subscription || policy.disableAfterMs <= 0) return;
  const since = Number(subscription.failing_since ?? now);
  if (now - since < policy.disableAfterMs) return;
  const hours = Math.round((now - since) / 360_000) / 10;
  const reason = { text: `every delivery attempt failed for ${hours} h`, label: 'failing' as const };
  if (await disableSubscription(db, businessId, subscription.id, reason, policy.disabled)) {
    policy.outcomes?.inc({ outcome: 'disabled' });
    policy.logger.warn(
      { subscription_id: subscription.id, failing_since: new Date(since).toISOString() },
      'webhook subscription kept failing; disabled',
    );
  }
}

/**
 * Decrypted signing keys, ready to sign with, by their ciphertext and associated data: a delivery
 * decrypts and prepares nothing that an earlier one did. A rotated key has a new ciphertext, so
 * nothing stale is served.
 */
export class SigningKeys {
  readonly #masterKey: Buffer;
  readonly #keys = new Map<string, PreparedKey>();

  constructor(masterKey: Buffer) {
    this.#masterKey = masterKey;
  }

  key(sealed: string, associatedData: string): PreparedKey {
    const id = `${associatedData}\n${sealed}`;
    let key = this.#keys.get(id);
    if (key === undefined) {
      key = prepareKey(decrypt(this.#masterKey, sealed, associatedData));
      // Bounded: past this many subscriptions, start over rather than track use.
      if (this.#keys.size >= 10_000) this.#keys.clear();
      this.#keys.set(id, key);
    }
    return key;
  }
}

/**
 * What the attempts started together need, read by one statement: a claim starts its attempts in one
 * turn of the event loop, so the deliveries of a claim are read at once, not one statement each; an
 * attempt started alone is read alone. A delivery of another business reads as gone.
 */
export class AttemptLoads {
  readonly #db: Db;
  #pending: Array<{ businessId: string; deliveryId: string; done: (row: repo.AttemptRow | undefined) => void; fail: (error: unknown) => void }> = [];

  constructor(db: Db) {
    this.#db = db;
  }

  load(businessId: string, deliveryId: string): Promise<repo.AttemptRow | undefined> {
    return new Promise((done, fail) => {
      // After the current turn's synchronous work (the claim's loop starting its attempts), in the same turn.
      if (this.#pending.length === 0) queueMicrotask(() => void this.#flush());
      this.#pending.push({ businessId, deliveryId, done, fail });
    });
  }

  async #flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    try {
      const rows = new Map((await repo.loadAttempts(this.#db, [...new Set(batch.map((entry) => entry.deliveryId))])).map((row) => [row.id, row]));
      for (const entry of batch) {
        const row = rows.get(entry.deliveryId);
        entry.done(row?.business_id === entry.businessId ? row : undefined);
      }
    } catch (error) {
      for (const entry of batch) entry.fail(error);
    }
  }
}

/**
 * Successful attempts that finish while one batch is being written go into the next, as the jobs'
 * own successes do: under load one statement records many; alone, one is recorded at once. An
 * attempt resolves only once its record is written, so its job is settled after it.
 */
export class SuccessRecords {
  readonly #db: Db;
  #pending: Array<{
    businessId: string;
    deliveryId: string;
    statusCode: number;
    startedAt: number;
    finishedAt: number;
    /** The subscription whose run of failures, if any, the success ends (null: none to end). */
    subscriptionId: string | null;
    done: () => void;
    fail: (error: unknown) => void;
  }> = [];
  #flushing = false;

  constructor(db: Db) {
    this.#db = db;
  }

  record(businessId: string, deliveryId: string, statusCode: number, timing: AttemptTiming, subscriptionId: string | null = null): Promise<void> {
    return new Promise((done, fail) => {
      this.#pending.push({ businessId, deliveryId, statusCode, ...timing, subscriptionId, done, fail });
      if (!this.#flushing) {
        this.#flushing = true;
        setImmediate(() => void this.#flush());
      }
    });
  }

  async #flush(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = this.#pending.splice(0, 500);
      for (const [statusCode, entries] of Map.groupBy(batch, (entry) => entry.statusCode)) {
        try {
          const subscriptions = entries.flatMap((entry) => (entry.subscriptionId === null ? [] : [entry.subscriptionId]));
          await repo.recordSuccesses(this.#db, statusCode, entries, [...new Set(subscriptions)]);
          for (const entry of entries) entry.done();
        } catch (error) {
          for (const entry of entries) entry.fail(error);
        }
      }
    }
    this.#flushing = false;
  }
}
