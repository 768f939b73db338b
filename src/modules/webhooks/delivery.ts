/**
 * Webhook delivery: an event becomes one delivery per matching active subscription (fanOut, run
 * by the event dispatch in one transaction), and each delivery is sent by attempts (attempt), one
 * per job run. The body is the event's stored payload text, byte for byte the same on every
 * attempt; `webhook-id` is the event id; `webhook-timestamp` is the attempt's time.
 */
import type { Counter } from 'prom-client';
import type { Logger } from 'pino';
import type { Db, Storage } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import { decrypt } from '../../security/encryption.ts';
import { failureDetail } from '../../security/outbound-client.ts';
import * as repo from './repo.ts';
import type { Sender } from './sender.ts';
import { signatureHeader } from './signer.ts';
import { PermanentError, RetryableError } from '../../jobs/queue.ts';
import type { FailedAttempt } from '../../jobs/worker.ts';

export const DELIVERY_JOB = 'webhook.delivery';

/** How deliveries become jobs: provided by the delivery wiring (wiring.ts). */
export interface DeliveryQueue {
  /**
   * Adds the job that sends delivery `deliveryId`, in `db` (a transaction), and returns its id; a
   * job with the same `key` already queued is returned instead.
   */
  enqueue(db: Db, businessId: string, deliveryId: string, key: string): Promise<string>;
  /** Queues the delivery's job again, due now; returns the job id (a new one if the old is gone). */
  retry(db: Db, businessId: string, deliveryId: string, jobId: string | null, key: string): Promise<string>;
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
}

/** One delivery (and its job) per active subscription to the event's type; a repeated call adds nothing. */
export async function fanOut(trx: Db, queue: DeliveryQueue, event: EventRef): Promise<number> {
  let added = 0;
  for (const subscription of await repo.activeSubscriptions(trx, event.businessId)) {
    if (!(JSON.parse(subscription.event_names) as string[]).includes(event.type)) continue;
    const id = newId('whd');
    const now = Date.now();
    // The job first: its key is the (event, subscription) pair, so a repeated dispatch gets the
    // existing job back and the delivery insert below adds nothing.
    const jobId = await queue.enqueue(trx, event.businessId, id, deliveryKey(event.id, subscription.id));
    const inserted = await repo.insertDelivery(trx, {
      id,
      business_id: event.businessId,
      subscription_id: subscription.id,
      event_id: event.id,
      event_type: event.type,
      job_id: jobId,
      status: 'pending',
      last_status_code: null,
      last_error: null,
      next_attempt_at: now,
      created_at: event.createdAt,
      updated_at: now,
    });
    if (!inserted) continue;
    added++;
  }
  return added;
}

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
  constructor(message: string, statusCode: number | null, retryAfterSeconds: number | null) {
    super(message, { retryAfterSeconds });
    this.statusCode = statusCode;
  }
}

/** An attempt that retrying cannot help: the subscription is disabled, or the endpoint answered 410. */
export class DeliveryRefused extends PermanentError {
  readonly statusCode: number | null;
  constructor(message: string, statusCode: number | null) {
    super(message);
    this.statusCode = statusCode;
  }
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
  masterKey: Buffer;
  sender: Sender;
  logger: Logger;
  outcomes?: Counter<'outcome'>;
}

/** Sends one attempt; a success is recorded here, anything else is thrown for the queue to settle. */
export async function attempt(deps: AttemptDeps, input: AttemptInput): Promise<AttemptOutcome> {
  const db = deps.storage.db;
  const row = await repo.loadAttempt(db, input.businessId, input.deliveryId);
  if (!row) return { kind: 'gone' };
  const log = { subscription_id: row.subscription_id, event_id: row.event_id, attempt: input.attempt };

  if (row.subscription_status !== 'active') {
    deps.outcomes?.inc({ outcome: 'failed' });
    throw new DeliveryRefused('the subscription is disabled', null);
  }

  const ad = repo.keyAssociatedData(row.subscription_id);
  const now = Date.now();
  const keys = [decrypt(deps.masterKey, row.signing_key, ad)];
  if (row.previous_signing_key && row.previous_key_expires_at !== null && row.previous_key_expires_at > now) {
    keys.push(decrypt(deps.masterKey, row.previous_signing_key, ad));
  }
  const timestamp = Math.floor(now / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'OpenCPS-Webhooks/1.0',
    'webhook-id': row.event_id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(keys, row.event_id, timestamp, row.payload),
  };

  let statusCode: number | null = null;
  let retryAfterSeconds: number | null = null;
  // What the partner sees is the class of failure ("HTTP 503", "could not connect", ...); the
  // network details go to the log only.
  let error: string;
  let detail: ReturnType<typeof failureDetail> | undefined;
  try {
    const result = await deps.sender.send(row.endpoint, headers, row.payload, input.signal);
    statusCode = result.statusCode;
    retryAfterSeconds = result.retryAfterSeconds;
    error = `HTTP ${statusCode}`;
  } catch (caught) {
    // Interrupted by shutdown or a lost lease: nothing to record; the job runs again after its lease.
    if (input.signal?.aborted) throw caught;
    detail = failureDetail(caught);
    error = detail.failure;
  }

  if (statusCode !== null && statusCode >= 200 && statusCode < 300) {
    await repo.recordAttempt(db, input.businessId, row.id, { status: 'succeeded', lastStatusCode: statusCode, lastError: null, nextAttemptAt: null });
    deps.outcomes?.inc({ outcome: 'succeeded' });
    deps.logger.debug({ ...log, status_code: statusCode }, 'webhook delivered');
    return { kind: 'succeeded', statusCode };
  }
  if (statusCode === 410) {
    // The receiver says the endpoint is gone for good: stop sending to it until re-enabled.
    await repo.updateSubscription(db, input.businessId, row.subscription_id, { status: 'disabled', disabled_reason: 'endpoint answered 410 Gone', updated_at: Date.now() });
    deps.outcomes?.inc({ outcome: 'disabled' });
    deps.logger.warn(log, 'webhook endpoint answered 410 Gone; subscription disabled');
    throw new DeliveryRefused('HTTP 410 (the subscription was disabled)', 410);
  }
  deps.logger.info({ ...log, status_code: statusCode, error, ...detail }, 'webhook attempt failed');
  throw new DeliveryRetry(error, statusCode, retryAfterSeconds);
}

/**
 * Writes on the delivery row what the queue decided about an attempt that did not succeed, in the
 * transaction that settles its job: pending until `dueAt`, or failed. An attempt that reached the
 * receiver (or tried to) counts, with what it answered; a failure before sending (the database)
 * changes only the state, so the partner never sees an internal error.
 */
export async function recordFailedAttempt(db: Db, businessId: string, deliveryId: string, outcome: FailedAttempt, cause: unknown, outcomes?: Counter<'outcome'>): Promise<void> {
  const sent = cause instanceof DeliveryRetry || cause instanceof DeliveryRefused;
  const nextAttemptAt = outcome.status === 'pending' ? outcome.dueAt : null;
  if (sent) {
    if (cause instanceof DeliveryRetry) outcomes?.inc({ outcome: outcome.status === 'pending' ? 'retried' : 'failed' });
    await repo.recordAttempt(db, businessId, deliveryId, { status: outcome.status, lastStatusCode: cause.statusCode, lastError: cause.message, nextAttemptAt });
  } else {
    await repo.settleDelivery(db, businessId, deliveryId, { status: outcome.status, nextAttemptAt, lastErrorIfNone: outcome.status === 'failed' ? 'the delivery could not be attempted' : null });
  }
}
