/** Webhook subscriptions and their deliveries (contract 8): rules, no HTTP. */
import { EVENT_NAMES, isEventName, type EventName } from '../../events.ts';
import { inTransaction, isUniqueViolation } from '../../db/index.ts';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { newId } from '../../db/ids.ts';
import type { WebhookSubscriptionStatus } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import type { OutboundPolicy } from '../../security/outbound.ts';
import { decrypt, encrypt } from '../../security/encryption.ts';
import { deliveryKey, type DeliveryQueue } from './delivery.ts';
import * as repo from './repo.ts';
import { generateSigningKey, keyBytes } from './signer.ts';

/** What a subscription that names no events receives. */
export const DEFAULT_EVENT_NAMES: EventName[] = ['external_review.request'];
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
    if (!isEventName(name)) {
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
async function normaliseEndpoint(
  policy: OutboundPolicy,
  endpoint: string,
  protocol: 'https' | 'http' | undefined,
): Promise<{ endpoint: string; protocol: 'https' | 'http' }> {
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
  const refused = await policy.check(url);
  if (refused) {
    throw invalid(
      refused.addressClass === 'not https'
        ? 'endpoint: must use https'
        : 'endpoint: must not be or resolve to a loopback, private, link-local, metadata or other non-public address',
    );
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

export interface UpdateInput {
  endpoint?: string;
  event_names?: string[];
  signing_key?: string;
  status?: WebhookSubscriptionStatus;
  protocol?: 'https' | 'http';
}

export interface WebhookServiceDeps {
  db: Kysely<Database>;
  /** Encrypts the stored signing keys. */
  masterKey: Buffer;
  /** Checks an endpoint's address at registration (every connection checks it again). */
  outbound: OutboundPolicy;
  queue: DeliveryQueue;
}

export class WebhookService {
  readonly #deps: WebhookServiceDeps;

  constructor(deps: WebhookServiceDeps) {
    this.#deps = deps;
  }

  async createSubscription(businessId: string, input: CreateInput): Promise<{ id: string; signing_key: string }> {
    const eventNames = checkEventNames(input.event_names ?? DEFAULT_EVENT_NAMES);
    const signingKey = input.signing_key === undefined ? generateSigningKey() : checkSigningKey(input.signing_key);
    const { endpoint, protocol } = await normaliseEndpoint(this.#deps.outbound, input.endpoint, input.protocol);
    const id = newId('whs');
    const now = Date.now();
    await repo
      .insertSubscription(this.#deps.db, {
        id,
        business_id: businessId,
        endpoint,
        protocol,
        event_names: JSON.stringify(eventNames),
        status: 'active',
        signing_key: encrypt(this.#deps.masterKey, signingKey, repo.keyAssociatedData(id)),
        previous_signing_key: null,
        previous_key_expires_at: null,
        disabled_reason: null,
        created_at: now,
        updated_at: now,
      })
      .catch(duplicate);
    return { id, signing_key: signingKey };
  }

  async listSubscriptions(businessId: string): Promise<SubscriptionView[]> {
    return (await repo.listSubscriptions(this.#deps.db, businessId)).map(toView);
  }

  async updateSubscription(businessId: string, id: string, input: UpdateInput): Promise<SubscriptionView> {
    const eventNames = input.event_names === undefined ? undefined : checkEventNames(input.event_names);
    const signingKey = input.signing_key === undefined ? undefined : checkSigningKey(input.signing_key);
    const current = await this.#existing(businessId, id);
    const now = Date.now();
    const patch: Parameters<typeof repo.updateSubscription>[3] = { updated_at: now };
    if (input.endpoint !== undefined || input.protocol !== undefined) {
      const target = await normaliseEndpoint(this.#deps.outbound, input.endpoint ?? current.endpoint, input.protocol);
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
      const oldKey = decrypt(this.#deps.masterKey, current.signing_key, ad);
      if (oldKey !== signingKey) {
        // The old key keeps signing beside the new one for a day, so receivers can switch over.
        patch.signing_key = encrypt(this.#deps.masterKey, signingKey, ad);
        patch.previous_signing_key = current.signing_key;
        patch.previous_key_expires_at = now + KEY_OVERLAP_MS;
      }
    }
    const row = await repo.updateSubscription(this.#deps.db, businessId, id, patch).catch(duplicate);
    if (!row) throw new AppError(404, 'webhook subscription not found', { code: 'NOT_FOUND' });
    return toView(row);
  }

  async deleteSubscription(businessId: string, id: string): Promise<void> {
    if (!(await repo.deleteSubscription(this.#deps.db, businessId, id))) {
      throw new AppError(404, 'webhook subscription not found', { code: 'NOT_FOUND' });
    }
  }

  async listDeliveries(businessId: string, subscriptionId: string, pageNo: number): Promise<DeliveryView[]> {
    await this.#existing(businessId, subscriptionId);
    const rows = await repo.listDeliveries(this.#deps.db, businessId, subscriptionId, DELIVERIES_PAGE_SIZE, pageNo * DELIVERIES_PAGE_SIZE);
    // The delivery row holds what the job queue decided: its state and the next attempt's time.
    return rows.map((row) => ({
      event_id: row.event_id,
      event: row.event_type,
      status: row.status,
      attempts: row.attempts,
      last_status_code: row.last_status_code,
      last_error: row.last_error,
      next_attempt_at: row.status === 'pending' && row.next_attempt_at !== null ? Math.ceil(row.next_attempt_at / 1000) : null,
    }));
  }

  /** Queues a delivery again, due now (contract 8's manual retry). */
  async retryDelivery(businessId: string, subscriptionId: string, eventId: string): Promise<void> {
    await this.#existing(businessId, subscriptionId);
    const delivery = await repo.getDelivery(this.#deps.db, businessId, subscriptionId, eventId);
    if (!delivery) throw new AppError(404, 'delivery not found', { code: 'NOT_FOUND' });
    await inTransaction(this.#deps.db, async (trx) => {
      const jobId = await this.#deps.queue.retry(trx, businessId, delivery.id, delivery.job_id, deliveryKey(eventId, subscriptionId));
      await repo.requeueDelivery(trx, businessId, delivery.id, Date.now(), jobId);
    });
  }

  async #existing(businessId: string, id: string): Promise<repo.SubscriptionRow> {
    const row = await repo.getSubscription(this.#deps.db, businessId, id);
    if (!row) throw new AppError(404, 'webhook subscription not found', { code: 'NOT_FOUND' });
    return row;
  }
}
