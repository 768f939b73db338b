/** Webhook subscriptions and their deliveries (contract 8): rules, no HTTP. */
import { EVENT_NAMES, isEventName } from '../../events.ts';
import { inTransaction, isUniqueViolation, type Db } from '../../db/index.ts';
import type { Kysely } from 'kysely';
import type { Static } from 'typebox';
import type { Database } from '../../db/schema.ts';
import { newId } from '../../db/ids.ts';
import type { WebhookSubscriptionStatus } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import type { OutboundPolicy } from '../../security/outbound.ts';
import { decrypt, encrypt } from '../../security/encryption.ts';
import { deliveryKey, deliveryOrdering, fanOutTo, type DeliveryQueue } from './delivery.ts';
import type { Buckets } from '../../security/buckets.ts';
import * as repo from './repo.ts';
import { type CreateBody, DEFAULT_EVENT_NAMES, type DeliveryQuery as DeliveryQuerySchema, type ReplayBody, type UpdateBody } from './schemas.ts';
import { generateSigningKey, keyProblem, keyWarning } from './signer.ts';

/** After a rotation the previous key keeps signing (beside the new one) this long. */
export const KEY_OVERLAP_MS = 24 * 3600 * 1000;
export const DELIVERIES_PAGE_SIZE = 50;
/** Each event is delivered once per subscription: the cap bounds the deliveries one business's event costs. */
export const MAX_SUBSCRIPTIONS_PER_BUSINESS = 20;

/** Most recent attempts shown per delivery in an event's inspection. */
export const ATTEMPTS_SHOWN = repo.ATTEMPTS_SHOWN;

export interface SubscriptionView {
  id: string;
  endpoint: string;
  event_names: string[];
  protocol: 'https' | 'http';
  status: WebhookSubscriptionStatus;
  created_at: number;
  updated_at: number;
}

export interface DeliveryState {
  status: 'pending' | 'succeeded' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: number | null;
}

/** Contract 8's delivery, exactly. */
export interface DeliveryView extends DeliveryState {
  event_id: string;
  event: string;
}

export interface EventView {
  id: string;
  event: string;
  created_at: number;
  ordering_key: string | null;
  sequence: number | null;
  /** The body as every attempt sends it. */
  body: Record<string, unknown>;
  deliveries: Array<DeliveryState & { subscription_id: string; last_attempt_at: number | null; attempt_history: AttemptView[] }>;
}

/** One attempt of a delivery: when, how long, and what came of it. */
export interface AttemptView {
  attempt: number;
  /** Epoch seconds. */
  started_at: number;
  finished_at: number;
  duration_ms: number;
  /** The receiver's answer; null when none came. */
  status_code: number | null;
  /** The class of failure ("HTTP 503", "could not connect"); null when the receiver accepted it. */
  error: string | null;
}

export type DeliveryQuery = Static<typeof DeliveryQuerySchema>;

export type ReplayInput = Static<typeof ReplayBody>;

/** Events queued again per replay call. */
export const REPLAY_PAGE_SIZE = 200;
/** Replays per subscription: a burst of 10, then one every 6 s. */
const REPLAY_RATE = { rate: 1 / 6, burst: 10 };

function deliveryState(row: Pick<repo.DeliveryRow, 'status' | 'attempts' | 'last_status_code' | 'last_error' | 'next_attempt_at'>): DeliveryState {
  return {
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.last_status_code,
    last_error: row.last_error,
    next_attempt_at: row.status === 'pending' && row.next_attempt_at !== null ? Math.ceil(Number(row.next_attempt_at) / 1000) : null,
  };
}

/**
 * A replay's page token: the last event queued and what the replay asked, so that a token continues
 * only the replay it was made for. Not secret: it names events of the caller's own business.
 */
function replayFilter(subscriptionId: string, input: ReplayInput): string {
  return JSON.stringify([subscriptionId, input.since, input.until ?? null, input.event_names ?? null]);
}

function sealReplayToken(after: { createdAt: number; id: string }, subscriptionId: string, input: ReplayInput): string {
  return Buffer.from(JSON.stringify([after.createdAt, after.id, replayFilter(subscriptionId, input)])).toString('base64url');
}

function openReplayToken(token: string, subscriptionId: string, input: ReplayInput): { createdAt: number; id: string } | null {
  try {
    const [createdAt, id, filter] = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as [unknown, unknown, unknown];
    if (typeof createdAt !== 'number' || typeof id !== 'string' || filter !== replayFilter(subscriptionId, input)) return null;
    return { createdAt, id };
  } catch {
    return null;
  }
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

const keyWarnings = (key: string | undefined): string[] => {
  const warning = key === undefined ? null : keyWarning(key);
  return warning === null ? [] : [warning];
};

/** A `whsec_` key, or any other text key as Eka's partners configure theirs (signer.ts says how each signs). */
function checkSigningKey(key: string): string {
  const problem = keyProblem(key);
  if (problem) throw invalid(`signing_key: ${problem}`);
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

export type CreateInput = Static<typeof CreateBody>;

/** The route hands over an empty object for a null body. */
export type UpdateInput = NonNullable<Static<typeof UpdateBody>>;

export interface WebhookServiceDeps {
  db: Kysely<Database>;
  /** Encrypts the stored signing keys. */
  masterKey: Buffer;
  /** Checks an endpoint's address at registration (every connection checks it again). */
  outbound: OutboundPolicy;
  queue: DeliveryQueue;
  /** Replays per subscription (REPLAY_RATE). */
  replayLimiter: Buckets;
}

export class WebhookService {
  readonly #deps: WebhookServiceDeps;

  constructor(deps: WebhookServiceDeps) {
    this.#deps = deps;
  }

  /** `warnings`: why the signing key given is guessable (accepted all the same; signer.ts says why). */
  async createSubscription(businessId: string, input: CreateInput): Promise<{ id: string; signing_key: string; warnings: string[] }> {
    const eventNames = checkEventNames(input.event_names ?? DEFAULT_EVENT_NAMES);
    const signingKey = input.signing_key === undefined ? generateSigningKey() : checkSigningKey(input.signing_key);
    const { endpoint, protocol } = await normaliseEndpoint(this.#deps.outbound, input.endpoint, input.protocol);
    const id = newId('whs');
    const now = Date.now();
    await inTransaction(this.#deps.db, async (trx) => {
      await repo.lockSubscriptionsOf(trx, businessId);
      if ((await repo.countSubscriptions(trx, businessId)) >= MAX_SUBSCRIPTIONS_PER_BUSINESS) {
        throw invalid(`a business has at most ${MAX_SUBSCRIPTIONS_PER_BUSINESS} webhook subscriptions: delete one first`);
      }
      await repo.insertSubscription(trx, {
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
      });
    }).catch(duplicate);
    return { id, signing_key: signingKey, warnings: keyWarnings(input.signing_key) };
  }

  async listSubscriptions(businessId: string): Promise<SubscriptionView[]> {
    return (await repo.listSubscriptions(this.#deps.db, businessId)).map(toView);
  }

  async updateSubscription(businessId: string, id: string, input: UpdateInput): Promise<SubscriptionView & { warnings?: string[] }> {
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
      // Re-enabled: its run of failures starts afresh.
      if (input.status === 'active') patch.failing_since = null;
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
    const warnings = keyWarnings(input.signing_key);
    return warnings.length === 0 ? toView(row) : { ...toView(row), warnings };
  }

  async deleteSubscription(businessId: string, id: string): Promise<void> {
    if (!(await repo.deleteSubscription(this.#deps.db, businessId, id))) {
      throw new AppError(404, 'webhook subscription not found', { code: 'NOT_FOUND' });
    }
  }

  async listDeliveries(businessId: string, subscriptionId: string, query: DeliveryQuery): Promise<DeliveryView[]> {
    await this.#existing(businessId, subscriptionId);
    const eventTypes = query.event === undefined ? undefined : checkEventNames(query.event.split(','));
    if (query.since !== undefined && query.until !== undefined && query.until <= query.since) throw invalid('until: must be after since');
    const pageNo = query.page_no ?? 0;
    const rows = await repo.listDeliveries(
      this.#deps.db,
      businessId,
      subscriptionId,
      {
        status: query.status,
        eventTypes,
        from: query.since === undefined ? undefined : query.since * 1000,
        to: query.until === undefined ? undefined : query.until * 1000,
      },
      DELIVERIES_PAGE_SIZE,
      pageNo * DELIVERIES_PAGE_SIZE,
    );
    // The delivery row holds what the job queue decided: its state and the next attempt's time.
    return rows.map((row) => ({
      event_id: row.event_id,
      event: row.event_type,
      ...deliveryState(row),
    }));
  }

  /** Queues a delivery again, due now (contract 8's manual retry). */
  async retryDelivery(businessId: string, subscriptionId: string, eventId: string): Promise<void> {
    await this.#existing(businessId, subscriptionId);
    const delivery = await repo.getDelivery(this.#deps.db, businessId, subscriptionId, eventId);
    if (!delivery) throw new AppError(404, 'delivery not found', { code: 'NOT_FOUND' });
    await inTransaction(this.#deps.db, async (trx) => {
      await this.#requeue(trx, businessId, subscriptionId, { ...delivery, id: eventId, delivery_id: delivery.id });
    });
  }

  /** One event of the business as it was sent, and its delivery to each subscription with its latest attempts. */
  async getEvent(businessId: string, eventId: string): Promise<EventView> {
    const event = await repo.getEvent(this.#deps.db, businessId, eventId);
    if (!event) throw new AppError(404, 'event not found', { code: 'NOT_FOUND' });
    const deliveries = await repo.eventDeliveries(this.#deps.db, businessId, eventId);
    const attempts = Map.groupBy(
      await repo.recentAttempts(
        this.#deps.db,
        businessId,
        deliveries.map((row) => row.id),
      ),
      (row) => row.delivery_id,
    );
    return {
      id: event.id,
      event: event.type,
      created_at: Math.floor(event.created_at / 1000),
      ordering_key: event.ordering_key,
      sequence: event.sequence === null ? null : Number(event.sequence),
      body: JSON.parse(event.payload) as Record<string, unknown>,
      deliveries: deliveries.map((row) => ({
        subscription_id: row.subscription_id,
        ...deliveryState(row),
        last_attempt_at: row.attempts > 0 ? Math.floor(row.updated_at / 1000) : null,
        attempt_history: (attempts.get(row.id) ?? []).map((a) => ({
          attempt: Number(a.attempt),
          started_at: Math.floor(Number(a.started_at) / 1000),
          finished_at: Math.floor(Number(a.finished_at) / 1000),
          duration_ms: Number(a.duration_ms),
          status_code: a.status_code === null ? null : Number(a.status_code),
          error: a.error,
        })),
      })),
    };
  }

  /**
   * Queues the subscription's events of a window again (those it never received too), oldest first,
   * REPLAY_PAGE_SIZE a call; `next_token` continues. Deliveries keep each appointment's order.
   */
  async replay(businessId: string, subscriptionId: string, input: ReplayInput): Promise<{ queued: number; next_token: string | null }> {
    const subscription = await this.#existing(businessId, subscriptionId);
    const subscribed = JSON.parse(subscription.event_names) as string[];
    const types = input.event_names === undefined ? subscribed : checkEventNames(input.event_names);
    const unsubscribed = types.filter((type) => !subscribed.includes(type));
    if (unsubscribed.length > 0) throw invalid(`event_names: the subscription does not name ${unsubscribed.join(', ')}`);
    const now = Date.now();
    const from = input.since * 1000;
    const to = input.until === undefined ? now + 1 : input.until * 1000;
    if (to <= from) throw invalid('until: must be after since');
    let after: repo.ReplayPage['after'] = null;
    if (input.page_token !== undefined) {
      after = openReplayToken(input.page_token, subscriptionId, input);
      if (!after) throw invalid('page_token: is not a page token of this replay');
    }
    if (subscription.status !== 'active') throw AppError.conflict('the subscription is disabled: enable it before a replay', 'CONFLICT');
    const taken = await this.#deps.replayLimiter.take([{ key: `webhook-replay:${subscriptionId}`, ...REPLAY_RATE }]);
    if (taken.waitMs > 0) {
      const seconds = Math.ceil(taken.waitMs / 1000);
      throw new AppError(429, `too many replays of this subscription: try again in ${seconds} s`, {
        code: 'RATE_LIMITED',
        headers: { 'retry-after': String(seconds) },
      });
    }
    const rows = await repo.eventsToReplay(this.#deps.db, businessId, subscriptionId, { from, to, types, after, limit: REPLAY_PAGE_SIZE + 1 });
    const page = rows.slice(0, REPLAY_PAGE_SIZE);
    await inTransaction(this.#deps.db, async (trx) => {
      const missing = page.filter((row) => row.delivery_id === null);
      await fanOutTo(
        trx,
        this.#deps.queue,
        subscriptionId,
        missing.map((row) => ({
          id: row.id,
          businessId,
          type: row.type,
          createdAt: Number(row.created_at),
          orderingKey: row.ordering_key,
          sequence: row.sequence === null ? null : Number(row.sequence),
        })),
      );
      for (const row of page)
        if (row.delivery_id !== null) await this.#requeue(trx, businessId, subscriptionId, { ...row, delivery_id: row.delivery_id });
    });
    const last = page.at(-1);
    return {
      queued: page.length,
      next_token:
        rows.length > REPLAY_PAGE_SIZE && last ? sealReplayToken({ createdAt: Number(last.created_at), id: last.id }, subscriptionId, input) : null,
    };
  }

  async #requeue(
    trx: Db,
    businessId: string,
    subscriptionId: string,
    event: { id: string; delivery_id: string; job_id: string | null; ordering_key: string | null; sequence: number | string | null },
  ): Promise<void> {
    const ordering = deliveryOrdering(subscriptionId, {
      orderingKey: event.ordering_key,
      sequence: event.sequence === null ? null : Number(event.sequence),
    });
    const jobId = await this.#deps.queue.retry(
      trx,
      { businessId, deliveryId: event.delivery_id, key: deliveryKey(event.id, subscriptionId), ordering },
      event.job_id,
    );
    await repo.requeueDelivery(trx, businessId, event.delivery_id, Date.now(), jobId);
  }

  async #existing(businessId: string, id: string): Promise<repo.SubscriptionRow> {
    const row = await repo.getSubscription(this.#deps.db, businessId, id);
    if (!row) throw new AppError(404, 'webhook subscription not found', { code: 'NOT_FOUND' });
    return row;
  }
}
