/**
 * The browser console's sessions. Signing in (the admin token, or an API client's id and secret checked
 * as a login checks them) opens a session: a random token in an HttpOnly cookie, stored only as its
 * SHA-256. Every request the console's page makes is an ordinary API call that the cookie authorises
 * (http/auth.ts asks `find`), so a change made in the console runs the same route, service, access log
 * entry and event as the API call. A change also sends the CSRF token, derived from the session's token
 * (never stored), which the page reads from GET /console/session and keeps in memory only.
 */
import type { Kysely } from 'kysely';
import type { Principal } from '../../auth/principal.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { randomToken, sha256 } from '../../security/secrets.ts';
import type { AuthService } from '../auth/service.ts';
import * as repo from './repo.ts';

export const SESSION_COOKIE = 'cps_console';
/** A session ends 12 hours after sign-in however busy it is. */
export const SESSION_MAX_MS = 12 * 3600 * 1000;
/** last_seen_at moves at most this often: a write a minute per busy session, not one per request. */
const TOUCH_MS = 60_000;

export interface ConsoleServiceDeps {
  db: Kysely<Database>;
  auth: AuthService;
  /** CPS_CONSOLE_IDLE_MINUTES. */
  idleMinutes: number;
  /** CPS_TIMEZONE: the zone of the dates the API takes, in which the page shows times. */
  timezone: string;
  /**
   * CPS_ADMIN_TOKEN: an operator's session is stored under a digest of its token and this one, so a
   * process started with another admin token (or none) finds none of the sessions opened with the old one.
   */
  adminToken: string | null;
}

/** What the page is told of its session. */
export interface SessionView {
  kind: 'operator' | 'client';
  business_id: string | null;
  business_name: string | null;
  client_id: string | null;
  scopes: string[];
  csrf_token: string;
  idle_seconds: number;
  timezone: string;
}

export interface OpenedSession {
  /** The cookie's value. */
  token: string;
  view: SessionView;
}

interface Found {
  operator: boolean;
  principal: Principal | null;
  csrf: string;
  view: SessionView;
}

function csrfOf(token: string): string {
  return sha256(`console-csrf:${token}`);
}

/** What an operator's session is stored under: its token's digest bound to the admin token it was opened with. */
function operatorHash(token: string, adminToken: string): string {
  return sha256(`console-operator:${sha256(adminToken)}:${token}`);
}

export class ConsoleService {
  readonly cookieName = SESSION_COOKIE;
  readonly #db: Kysely<Database>;
  readonly #auth: AuthService;
  readonly #idleMs: number;
  readonly #timezone: string;
  readonly #adminToken: string | null;

  constructor(deps: ConsoleServiceDeps) {
    this.#adminToken = deps.adminToken;
    this.#db = deps.db;
    this.#auth = deps.auth;
    this.#idleMs = deps.idleMinutes * 60_000;
    this.#timezone = deps.timezone;
  }

  get idleSeconds(): number {
    return this.#idleMs / 1000;
  }

  /** The caller presented the admin token (the route's admin check). */
  async signInOperator(): Promise<OpenedSession> {
    return this.#open('operator', null);
  }

  /** `address` is the caller's, for the login failure budgets. */
  async signInClient(clientId: string, clientSecret: string, address: string | undefined): Promise<OpenedSession> {
    const client = await this.#auth.authenticate(clientId, clientSecret, address);
    return this.#open('client', client.id);
  }

  async #open(kind: 'operator' | 'client', clientId: string | null): Promise<OpenedSession> {
    const now = Date.now();
    await repo.deleteEndedSessions(this.#db, now - this.#idleMs, now - SESSION_MAX_MS);
    const token = randomToken(32);
    let tokenHash = sha256(token);
    if (kind === 'operator') {
      if (this.#adminToken === null) throw new AppError(401, 'A valid admin token is required');
      tokenHash = operatorHash(token, this.#adminToken);
    }
    await repo.insertSession(this.#db, { token_hash: tokenHash, kind, client_id: clientId, created_at: now, last_seen_at: now });
    const found = await this.#find(token);
    if (!found) throw new AppError(401, 'The API client was revoked');
    return { token, view: found.view };
  }

  /** The session of a cookie's token, still open (http/auth.ts's CookieSessions). */
  async find(token: string): Promise<Found | null> {
    return this.#find(token);
  }

  async #find(token: string): Promise<(Found & { tokenHash: string }) | null> {
    const clientHash = sha256(token);
    const operatorHashNow = this.#adminToken === null ? null : operatorHash(token, this.#adminToken);
    const row = await repo.findSession(this.#db, operatorHashNow === null ? [clientHash] : [clientHash, operatorHashNow]);
    if (!row) return null;
    const tokenHash = row.token_hash;
    // An operator's session is found only under the admin token it was opened with (one stored under the
    // token's plain digest predates that binding): a replaced or removed admin token ends it.
    if (row.kind === 'operator' && tokenHash !== operatorHashNow) {
      await repo.deleteSession(this.#db, tokenHash);
      return null;
    }
    if (row.kind === 'client' && tokenHash !== clientHash) return null;
    const now = Date.now();
    const ended = now - row.last_seen_at > this.#idleMs || now - row.created_at > SESSION_MAX_MS;
    // A client revoked (or deleted) since sign-in ends its sessions at their next request.
    const revoked = row.kind === 'client' && (row.business_id === null || row.disabled_at !== null);
    if (ended || revoked) {
      await repo.deleteSession(this.#db, tokenHash);
      return null;
    }
    if (now - row.last_seen_at >= TOUCH_MS) await repo.touchSession(this.#db, tokenHash, now);
    const csrf = csrfOf(token);
    const scopes = row.scopes ? row.scopes.split(' ').filter((scope) => scope !== '') : [];
    const principal =
      row.kind === 'client' && row.business_id !== null && row.client_id !== null
        ? { businessId: row.business_id, clientId: row.client_id, scopes: new Set(scopes) }
        : null;
    return {
      tokenHash,
      operator: row.kind === 'operator',
      principal,
      csrf,
      view: {
        kind: row.kind,
        business_id: row.business_id,
        business_name: row.business_name,
        client_id: row.client_id,
        scopes,
        csrf_token: csrf,
        idle_seconds: this.idleSeconds,
        timezone: this.#timezone,
      },
    };
  }

  async signOut(token: string): Promise<void> {
    const found = await this.#find(token);
    if (found) await repo.deleteSession(this.#db, found.tokenHash);
  }
}
