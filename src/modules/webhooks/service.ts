/** Webhook subscriptions and their deliveries (contract 8): rules, no HTTP. */
import type { AppContext } from '../../context.ts';
import { inTransaction, isUniqueViolation, type Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { WebhookSubscriptionStatus } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { decrypt, encrypt } from '../../security/encryption.ts';
import { deliveryKey, type DeliveryQueue } from './delivery.ts';
import * as repo from './repo.ts';
import { generateSigningKey, keyBytes } from './signer.ts';

/** The events this service emits; a subscription to any other name is refused. */
export const EVENT_NAMES = ['external_review.request'] as const;
export const DEFAULT_EVENT_NAMES = ['external_review.request'];
/** After a rotation the previous key keeps signing (beside the new one) this long. */
export const KEY_OVERLAP_MS = 24 * 3600 * 1000;
export const DELIVERIES_PAGE_SIZE = 50;

export interface SubscriptionView {
  id: string;
  endpoint: string;
  event_names: string[];
  protocol: 'https' | 'http';
  status: WebhookSubscriptionStatus;
  created_at: number;
  updated_at: number;
}

export interface DeliveryView {
  event_id: string;
  event: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
}

const INVALID = 'INVALID_REQUEST' as const;

function invalid(message: string): AppError {
  return new AppError(400, message, { code: INVALID });
}

function toView(row: repo.SubscriptionRow): SubscriptionView {
  return {
    id: row.id,
    endpoint: row.endpoint,
    event_names: JSON.parse(row.event_names) as string[],
    protocol: row.protocol,
    status: row.status,
    created_at: Math.floor(row.created_at / 1000),
    updated_at: Math.floor(row.updated_at / 1000),
  };
}

function checkEventNames(names: string[]): string[] {
  for (const name of names) {
    if (!(EVENT_NAMES as readonly string[]).includes(name)) {
      throw invalid(`event_names: unknown event name "${name}"; this service emits ${EVENT_NAMES.join(', ')}`);
    }
  }
  return [...new Set(names)];
}

function checkSigningKey(key: string): string {
  if (!keyBytes(key)) throw invalid('signing_key: must be "whsec_" followed by the base64 of 24 to 64 random bytes');
  return key;
}

/**
 * The endpoint as stored: an absolute http(s) URL (a bare host/path takes `protocol`'s scheme),
 * matching `protocol` when given; in production https to a public host only (the outbound policy).
 */
async function normaliseEndpoint(ctx: AppContext, endpoint: string, protocol: 'https' | 'http' | undefined): Promise<{ endpoint: string; protocol: 'https' | 'http' }> {
  const raw = endpoint.trim();
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `${protocol ?? 'https'}://${raw}`);
  } catch {
    throw invalid('endpoint: must be an absolute http or https URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid('endpoint: must be an absolute http or https URL');
  const scheme = url.protocol === 'https:' ? 'https' : 'http';
  if (protocol !== undefined && protocol !== scheme) throw invalid(`protocol: "${protocol}" does not match the endpoint's scheme "${scheme}"`);
  if (url.hash) url.hash = '';
  const refused = await ctx.outbound.policy.check(url);
  if (refused) {
    throw invalid(refused.addressClass === 'not https' ? 'endpoint: must use https'
      : 'endpoint: must not be or resolve to a loopback, private, link-local, metadata or other non-public address');
  }
  return { endpoint: url.toString(), protocol: scheme };
}

function duplicate(error: unknown): never {
  if (isUniqueViolation(error)) throw invalid('requested endpoint is already registered');
  throw error;
}

export interface CreateInput {
  endpoint: string;
  event_names?: string[];
  signing_key?: string;
  protocol?: 'https' | 'http';
}

export async function createSubscription(ctx: AppContext, businessId: string, input: CreateInput): Promise<{ id: string; signing_key: string }> {
  const eventNames = checkEventNames(input.event_names ?? DEFAULT_EVENT_NAMES);
  const signingKey = input.signing_key === undefined ? generateSigningKey() : checkSigningKey(input.signing_key);
  const { endpoint, protocol } = await normaliseEndpoint(ctx, input.endpoint, input.protocol);
  const id = newId('whs');
  const now = Date.now();
  await repo.insertSubscription(ctx.storage.db, {
    id,
    business_id: businessId,
    endpoint,
    protocol,
    event_names: JSON.stringify(eventNames),
    status: 'active',
    signing_key: encrypt(ctx.keys.masterKey, signingKey, repo.keyAssociatedData(id)),
    previous_signing_key: null,
    previous_key_expires_at: null,
    disabled_reason: null,
    created_at: now,
    updated_at: now,
  }).catch(duplicate);
  return { id, signing_key: signingKey };
}

export async function listSubscriptions(ctx: AppContext, businessId: string): Promise<SubscriptionView[]> {
  return (await repo.listSubscriptions(ctx.storage.db, businessId)).map(toView);
}

async function existing(db: Db, businessId: string, id: string): Promise<repo.SubscriptionRow> {
  const row = await repo.getSubscription(db, businessId, id);
  if (!row) throw new AppError(404, 'webhook subscription not found', { code: 'NOT_FOUND' });
  return row;
}

export interface UpdateInput {
  endpoint?: string;
  event_names?: string[];
  signing_key?: string;
  status?: WebhookSubscriptionStatus;
  protocol?: 'https' | 'http';
}

export async function updateSubscription(ctx: AppContext, businessId: string, id: string, input: UpdateInput): Promise<SubscriptionView> {
  const eventNames = input.event_names === undefined ? undefined : checkEventNames(input.event_names);
  const signingKey = input.signing_key === undefined ? undefined : checkSigningKey(input.signing_key);
  const current = await existing(ctx.storage.db, businessId, id);
  const now = Date.now();
  const patch: Parameters<typeof repo.updateSubscription>[3] = { updated_at: now };
  if (input.endpoint !== undefined || input.protocol !== undefined) {
    const target = await normaliseEndpoint(ctx, input.endpoint ?? current.endpoint, input.protocol);
    patch.endpoint = target.endpoint;
    patch.protocol = target.protocol;
  }
  if (eventNames !== undefined) patch.event_names = JSON.stringify(eventNames);
  if (input.status !== undefined) {
    patch.status = input.status;
    patch.disabled_reason = input.status === 'disabled' ? 'disabled by the partner' : null;
  }
  if (signingKey !== undefined) {
    const ad = repo.keyAssociatedData(id);
    const oldKey = decrypt(ctx.keys.masterKey, current.signing_key, ad);
    if (oldKey !== signingKey) {
      // The old key keeps signing beside the new one for a day, so receivers can switch over.
      patch.signing_key = encrypt(ctx.keys.masterKey, signingKey, ad);
      patch.previous_signing_key = current.signing_key;
      patch.previous_key_expires_at = now + KEY_OVERLAP_MS;
    }
  }
  const row = await repo.updateSubscription(ctx.storage.db, businessId, id, patch).catch(duplicate);
  if (!row) throw new AppError(404, 'webhook subscription not found', { code: 'NOT_FOUND' });
  return toView(row);
}

export async function deleteSubscription(ctx: AppContext, businessId: string, id: string): Promise<void> {
  if (!(await repo.deleteSubscription(ctx.storage.db, businessId, id))) {
    throw new AppError(404, 'webhook subscription not found', { code: 'NOT_FOUND' });
  }
}

export async function listDeliveries(ctx: AppContext, businessId: string, subscriptionId: string, pageNo: number): Promise<DeliveryView[]> {
  await existing(ctx.storage.db, businessId, subscriptionId);
  const rows = await repo.listDeliveries(ctx.storage.db, businessId, subscriptionId, DELIVERIES_PAGE_SIZE, pageNo * DELIVERIES_PAGE_SIZE);
  return rows.map((row) => {
    // The handler records each attempt; a last attempt whose worker died is failed by the jobs
    // sweep without the handler, so a failed job overrides a pending delivery.
    const status = row.status === 'pending' && row.job_status === 'failed' ? 'failed' : row.status;
    const next = status !== 'pending' ? null : row.job_status === 'pending' ? row.job_due_at : row.next_attempt_at;
    return {
      event_id: row.event_id,
      event: row.event_type,
      status,
      attempts: row.attempts,
      last_status_code: row.last_status_code,
      last_error: row.last_error ?? (status === 'failed' ? row.job_last_error : null),
      next_attempt_at: next === null ? null : Math.ceil(next / 1000),
    };
  });
}

/** Queues a delivery again, due now (contract 8's manual retry). */
export async function retryDelivery(ctx: AppContext, queue: DeliveryQueue, businessId: string, subscriptionId: string, eventId: string): Promise<void> {
  await existing(ctx.storage.db, businessId, subscriptionId);
  const delivery = await repo.getDelivery(ctx.storage.db, businessId, subscriptionId, eventId);
  if (!delivery) throw new AppError(404, 'delivery not found', { code: 'NOT_FOUND' });
  await inTransaction(ctx.storage.db, async (trx) => {
    const jobId = await queue.retry(trx, businessId, delivery.id, delivery.job_id, deliveryKey(eventId, subscriptionId));
    await repo.requeueDelivery(trx, businessId, delivery.id, Date.now(), jobId);
  });
}
