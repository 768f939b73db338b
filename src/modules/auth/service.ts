/**
 * Login and refresh (contract 2). Refresh tokens are random, stored as SHA-256 hashes, and rotate:
 * each works once; presenting a spent one revokes every token of its login's family.
 */
import type { Kysely } from 'kysely';
import type { AccessTokens } from '../../auth/tokens.ts';
import { inTransaction, type Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { ApiClientsTable, Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { DUMMY_SECRET_HASH, randomToken, sha256, verifySecret } from '../../security/secrets.ts';
import type { BusinessService } from '../businesses/service.ts';
import * as repo from './repo.ts';
import type { LoginGuard } from './throttle.ts';

export interface TokenPair {
  access_token: string;
  expires_in: number;
  refresh_token: string;
  refresh_expires_in: number;
}

export interface AuthServiceDeps {
  db: Kysely<Database>;
  tokens: AccessTokens;
  /** CPS_REFRESH_TOKEN_TTL, seconds. */
  refreshTtlSeconds: number;
  guard: LoginGuard;
  /** The API clients that log in. */
  businesses: BusinessService;
}

export class AuthService {
  readonly #db: Kysely<Database>;
  readonly #tokens: AccessTokens;
  readonly #refreshTtlSeconds: number;
  readonly #guard: LoginGuard;
  readonly #businesses: BusinessService;

  constructor(deps: AuthServiceDeps) {
    this.#db = deps.db;
    this.#tokens = deps.tokens;
    this.#refreshTtlSeconds = deps.refreshTtlSeconds;
    this.#guard = deps.guard;
    this.#businesses = deps.businesses;
  }

  /** `address` is the caller's source address, for its failure budget (throttle.ts); undefined on a Unix socket. */
  async login(clientId: string, clientSecret: string, address: string | undefined): Promise<TokenPair> {
    const client = await this.authenticate(clientId, clientSecret, address);
    return this.#issue(this.#db, client.id, client.business_id, client.scopes.split(' '), newId('rtf'));
  }

  /**
   * The active API client these credentials name, checked as a login checks them (the same failure
   * budgets): the browser console's sign-in, which opens a session instead of issuing tokens.
   */
  async authenticate(clientId: string, clientSecret: string, address: string | undefined): Promise<ApiClientsTable> {
    // Before the database and the hash: a throttled attempt costs neither.
    const admission = await this.#guard.admit(clientId, address);
    let client: ApiClientsTable | undefined;
    let valid: boolean;
    try {
      client = await this.#businesses.findActiveClient(this.#db, clientId);
      // Unknown clients cost one scrypt too, so timing does not reveal which ids exist.
      // A replaced secret still in its grace period (a rotation's) is a second try, for that client only.
      const previous = client?.previous_secret_hash && (client.previous_secret_expires_at ?? 0) > Date.now() ? client.previous_secret_hash : null;
      valid = await this.#guard.verify(
        async () =>
          (await verifySecret(clientSecret, client?.secret_hash ?? DUMMY_SECRET_HASH)) ||
          (previous !== null && (await verifySecret(clientSecret, previous))),
      );
    } catch (error) {
      // The secret was never tried (no verification slot, or the database failed): no failure to count.
      await this.#guard.giveBack(admission);
      throw error;
    }
    if (!client || !valid) throw this.#guard.failed(admission);
    await this.#guard.succeeded(admission);
    return client;
  }

  async refresh(refreshToken: string): Promise<TokenPair> {
    const now = Date.now();
    const stored = await repo.findRefreshToken(this.#db, sha256(refreshToken));
    if (!stored || stored.revoked_at !== null || stored.expires_at <= now) {
      throw new AppError(401, 'Invalid or expired refresh token');
    }
    // Spending the token and storing its successor commit together, so a replay that revokes the
    // family sees (and revokes) the successor too, also one committed while it ran (revokeFamily).
    const issued = await inTransaction(this.#db, async (trx) => {
      if (stored.used_at !== null || !(await repo.spendRefreshToken(trx, stored.id, now))) return 'reused' as const;
      const client = await this.#businesses.findActiveClient(trx, stored.client_id);
      if (!client) return 'invalid' as const;
      return this.#issue(trx, client.id, client.business_id, client.scopes.split(' '), stored.family_id);
    });
    if (issued === 'reused') {
      // A spent token coming back means it was copied: end the whole login.
      await repo.revokeFamily(this.#db, stored.family_id, now);
      throw new AppError(401, 'Refresh token already used; every token of this login is revoked');
    }
    if (issued === 'invalid') throw new AppError(401, 'Invalid or expired refresh token');
    return issued;
  }

  async #issue(db: Db, clientId: string, businessId: string, scopes: string[], familyId: string): Promise<TokenPair> {
    const now = Date.now();
    const refreshToken = `rt_${randomToken(32)}`;
    await repo.insertRefreshToken(db, {
      id: newId('rt'),
      token_hash: sha256(refreshToken),
      family_id: familyId,
      client_id: clientId,
      business_id: businessId,
      expires_at: now + this.#refreshTtlSeconds * 1000,
      used_at: null,
      revoked_at: null,
      created_at: now,
    });
    return {
      access_token: await this.#tokens.issue(clientId, businessId, scopes),
      expires_in: this.#tokens.ttlSeconds,
      refresh_token: refreshToken,
      refresh_expires_in: this.#refreshTtlSeconds,
    };
  }
}
