/** Businesses and their API clients, for the admin API, the cps command and the demo business alike; auth reads the clients. */
import type { Kysely } from 'kysely';
import { SCOPES, isScope, type Scope } from '../../auth/scopes.ts';
import { inTransaction, type Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { ApiClientsTable, Database } from '../../db/schema.ts';
import { openChain } from '../../access-log/store.ts';
import type { ChainSeal } from '../../access-log/seal.ts';
import { AppError } from '../../errors.ts';
import { hashSecret, randomToken } from '../../security/secrets.ts';
import * as repo from './repo.ts';

/** An API client as listed (times in epoch ms); never a secret. */
export interface ClientListing {
  client_id: string;
  scopes: string[];
  created_at: number;
  disabled_at: number | null;
  /** While a replaced secret still logs in: until when. */
  previous_secret_expires_at: number | null;
}

/** The longest a replaced client secret may keep working: 30 days. */
export const MAX_SECRET_GRACE_SECONDS = 2_592_000;

export interface CreatedClient {
  business_id: string;
  client_id: string;
  client_secret: string;
  scopes: Scope[];
}

/** No list grants every scope; an empty list is refused, since it would otherwise grant everything. */
export function normaliseScopes(scopes: readonly string[] | undefined): Scope[] {
  if (scopes === undefined) return [...SCOPES];
  if (scopes.length === 0) {
    throw AppError.badRequest('scopes: must list at least one scope, or be left out for every scope', {
      scopes: ['must list at least one scope, or be left out for every scope'],
    });
  }
  const unknown = scopes.filter((scope) => !isScope(scope));
  if (unknown.length > 0) {
    throw AppError.badRequest(`Unknown scope: ${unknown.join(', ')}. Known scopes: ${SCOPES.join(', ')}.`, {
      scopes: unknown.map((scope) => `Unknown scope: ${scope}`),
    });
  }
  return [...new Set(scopes as Scope[])];
}

/** What another module does, in the transaction that disables a client, about the client's rows it keeps. */
export type ClientDisabledHook = (trx: Db, clientId: string, now: number) => Promise<void>;

export interface BusinessServiceDeps {
  db: Kysely<Database>;
  /** Opens each new business's access log chain, so a chain deleted later is found (audit/verify.ts). */
  chainSeal: ChainSeal;
  /**
   * Run in the transaction that disables a client: auth revokes its refresh tokens (auth's front door's
   * `revokeClientTokens`, handed over by whoever composes the modules, since auth depends on businesses).
   * A service built without it cannot revoke a client; one that only creates businesses needs none.
   */
  onClientDisabled?: ClientDisabledHook;
}

const DAY_MS = 86_400_000;
/** Days of usage one call may ask for. */
export const MAX_USAGE_DAYS = 90;
/**
 * How long a business's counted usage is answered again before it is counted anew: the count reads every
 * entry of the window, so operators watching one busy business at once share one count instead of queueing
 * behind each other's (a figure lags by this much at most).
 */
export const USAGE_FRESH_MS = 10_000;
/** The most counts kept at once (a business and a number of days each); the oldest goes first. */
const USAGE_COUNTS_KEPT = 1_000;

export interface UsageDayView {
  day: string;
  requests: number;
  failures: number;
  deliveries: number;
  delivery_failures: number;
}

export class BusinessService {
  readonly #deps: BusinessServiceDeps;
  readonly #usageCounts = new Map<string, { at: number; days: Promise<UsageDayView[]> }>();

  constructor(deps: BusinessServiceDeps) {
    this.#deps = deps;
  }

  /**
   * A new business with one API client holding every scope. `businessId` is chosen beforehand by a caller
   * that records the creation under it (the cps command's access log entry, written in this transaction).
   */
  async createBusiness(name: string, businessId = newId('biz')): Promise<Omit<CreatedClient, 'scopes'>> {
    const trimmed = name.trim();
    if (trimmed.length === 0 || trimmed.length > 200)
      throw AppError.badRequest('name: must be 1 to 200 characters', { name: ['must be 1 to 200 characters'] });
    return inTransaction(this.#deps.db, async (trx) => {
      await repo.insertBusiness(trx, { id: businessId, name: trimmed, created_at: Date.now() });
      await openChain(trx, this.#deps.chainSeal, businessId);
      const { scopes: _all, ...client } = await this.#newClient(trx, businessId, [...SCOPES]);
      return client;
    });
  }

  /** Another API client of a business; `clientId` as createBusiness's `businessId`. */
  async createClient(businessId: string, scopes?: readonly string[], clientId = newId('cl')): Promise<CreatedClient> {
    const granted = normaliseScopes(scopes);
    return inTransaction(this.#deps.db, async (trx) => {
      if (!(await repo.findBusiness(trx, businessId))) throw AppError.notFound(`Business ${businessId} not found`);
      return this.#newClient(trx, businessId, granted, clientId);
    });
  }

  /**
   * Development's demo business, when the database has no business yet: its fixed id makes the insert
   * a claim, so of several processes starting together one creates it (the others get null).
   */
  async createDemoBusiness(id: string, name: string): Promise<Omit<CreatedClient, 'scopes'> | null> {
    if ((await repo.countBusinesses(this.#deps.db)) > 0) return null;
    return inTransaction(this.#deps.db, async (trx) => {
      if (!(await repo.claimBusiness(trx, { id, name, created_at: Date.now() }))) return null;
      await openChain(trx, this.#deps.chainSeal, id);
      const { scopes: _all, ...client } = await this.#newClient(trx, id, [...SCOPES]);
      return client;
    });
  }

  /** The business's id and name. */
  async find(businessId: string): Promise<{ id: string; name: string } | undefined> {
    const business = await repo.findBusiness(this.#deps.db, businessId);
    return business && { id: business.id, name: business.name };
  }

  /** Every business, with its count of active API clients. */
  async listBusinesses(): Promise<{ id: string; name: string; created_at: number; clients: number }[]> {
    return repo.listBusinesses(this.#deps.db);
  }

  /**
   * A business's usage over its last `days` UTC days, today included, oldest first: every day listed, a quiet one
   * with zeros. Days as ISO dates (YYYY-MM-DD, UTC). A count made less than USAGE_FRESH_MS before is answered again.
   */
  usage(businessId: string, days: number, now = Date.now()): Promise<UsageDayView[]> {
    const key = `${businessId} ${days}`;
    const kept = this.#usageCounts.get(key);
    if (kept && now - kept.at < USAGE_FRESH_MS) return kept.days;
    const counting = this.#countUsage(businessId, days, now);
    this.#usageCounts.delete(key);
    this.#usageCounts.set(key, { at: now, days: counting });
    if (this.#usageCounts.size > USAGE_COUNTS_KEPT) this.#usageCounts.delete(this.#usageCounts.keys().next().value!);
    counting.catch(() => {
      if (this.#usageCounts.get(key)?.days === counting) this.#usageCounts.delete(key);
    });
    return counting;
  }

  async #countUsage(businessId: string, days: number, now: number): Promise<UsageDayView[]> {
    if (!(await repo.findBusiness(this.#deps.db, businessId))) throw AppError.notFound(`Business ${businessId} not found`);
    const today = Math.floor(now / DAY_MS);
    const first = today - days + 1;
    const recorded = new Map((await repo.usageByDay(this.#deps.db, businessId, first * DAY_MS)).map((row) => [row.day, row]));
    return Array.from({ length: days }, (_, i) => {
      const day = first + i;
      const { requests = 0, failures = 0, deliveries = 0, delivery_failures = 0 } = recorded.get(day) ?? {};
      return { day: new Date(day * DAY_MS).toISOString().slice(0, 10), requests, failures, deliveries, delivery_failures };
    });
  }

  /** A business's API clients (never their secrets), disabled ones with the time they were disabled. */
  async listClients(businessId: string): Promise<ClientListing[]> {
    if (!(await repo.findBusiness(this.#deps.db, businessId))) throw AppError.notFound(`Business ${businessId} not found`);
    const now = Date.now();
    return (await repo.listClients(this.#deps.db, businessId)).map((client) => ({
      client_id: client.id,
      scopes: client.scopes.split(' ').filter(Boolean),
      created_at: client.created_at,
      disabled_at: client.disabled_at,
      previous_secret_expires_at:
        client.previous_secret_expires_at !== null && client.previous_secret_expires_at > now ? client.previous_secret_expires_at : null,
    }));
  }

  /**
   * Revokes a client: it can no longer log in or refresh, and its refresh tokens are revoked; access
   * tokens already issued last until they expire (CPS_ACCESS_TOKEN_TTL).
   */
  async revokeClient(clientId: string, businessId?: string): Promise<{ client_id: string; revoked: true }> {
    const { onClientDisabled } = this.#deps;
    if (!onClientDisabled) throw new Error('BusinessService built without onClientDisabled cannot revoke a client: its refresh tokens would stay');
    const revoked = await inTransaction(this.#deps.db, async (trx) => {
      const now = Date.now();
      if (!(await repo.disableClient(trx, clientId, now, businessId))) return false;
      await onClientDisabled(trx, clientId, now);
      return true;
    });
    if (!revoked) throw AppError.notFound(`Active API client ${clientId} not found`);
    return { client_id: clientId, revoked: true };
  }

  /**
   * A new secret for a client. The secret replaced keeps logging in for `graceSeconds` (0: not at all), so
   * the client's systems can move over; a secret replaced before that (an earlier rotation's) stops at
   * once, since one previous secret is kept. With `businessId`, a client of another business is 404.
   */
  async rotateSecret(
    clientId: string,
    graceSeconds: number,
    businessId?: string,
  ): Promise<{ client_id: string; client_secret: string; previous_secret_expires_at: number | null }> {
    if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_SECRET_GRACE_SECONDS) {
      const message = `must be a whole number of seconds from 0 to ${MAX_SECRET_GRACE_SECONDS}`;
      throw AppError.badRequest(`grace_seconds: ${message}`, { grace_seconds: [message] });
    }
    // The secret as the rotation found it: the update applies only while it is still that one, so of two
    // rotations at once the second to commit is told (409) rather than silently cut the first's short.
    const seen = await this.findActiveClient(this.#deps.db, clientId);
    if (!seen || (businessId !== undefined && seen.business_id !== businessId)) throw AppError.notFound(`Active API client ${clientId} not found`);
    const clientSecret = `cs_${randomToken(32)}`;
    const secretHash = await hashSecret(clientSecret);
    const now = Date.now();
    const expiresAt = graceSeconds === 0 ? null : now + graceSeconds * 1000;
    const rotated = await inTransaction(this.#deps.db, (trx) => repo.replaceClientSecret(trx, clientId, seen.secret_hash, secretHash, expiresAt));
    if (!rotated) {
      if (!(await repo.findActiveClient(this.#deps.db, clientId))) throw AppError.notFound(`Active API client ${clientId} not found`);
      throw AppError.conflict(
        `API client ${clientId}: another rotation of its secret finished while this one ran, so this one was not applied and no new secret was issued; list the business's clients to see the secret's state, and rotate again if another secret is still wanted`,
      );
    }
    return { client_id: clientId, client_secret: clientSecret, previous_secret_expires_at: expiresAt };
  }

  /** The client `clientId` unless it is disabled; `db` may be the caller's transaction. */
  async findActiveClient(db: Db, clientId: string): Promise<ApiClientsTable | undefined> {
    return repo.findActiveClient(db, clientId);
  }

  async #newClient(db: Db, businessId: string, scopes: Scope[], clientId = newId('cl')): Promise<CreatedClient> {
    const clientSecret = `cs_${randomToken(32)}`;
    await repo.insertClient(db, {
      id: clientId,
      business_id: businessId,
      secret_hash: await hashSecret(clientSecret),
      scopes: scopes.join(' '),
      created_at: Date.now(),
      disabled_at: null,
      previous_secret_hash: null,
      previous_secret_expires_at: null,
    });
    return { business_id: businessId, client_id: clientId, client_secret: clientSecret, scopes };
  }
}
