/**
 * FCM HTTP v1 client: the OAuth2 JWT-bearer grant (RFC 7523) with the business's service account,
 * an access-token cache per business, and `messages:send`. Both requests go through the outbound
 * client, so the token_uri and CPS_FCM_URL pass the outbound address policy at connect time.
 * Outcomes are classified by pure functions (below) so the delivery rules are tested without servers.
 */
import { createHash, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import { failureDetail, type OutboundClient, type OutboundResponse } from '../../security/outbound-client.ts';

export const FCM_SCOPE = 'https://www.googleapis.com/auth/firebase.messaging';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** A cached token is used until this long before it expires. */
export const TOKEN_MARGIN_MS = 60_000;
/** A Retry-After longer than this is capped: a misbehaving server must not park deliveries for days. */
export const MAX_RETRY_AFTER_SECONDS = 3600;

/** What delivery needs of a service-account key (sa_key). */
export interface ServiceAccount {
  project_id: string;
  private_key_id: string;
  client_email: string;
  token_uri: string;
  /** The parsed RSA private key (never the PEM text, so it cannot end up in a log line by accident). */
  privateKey: KeyObject;
}

export interface PushMessage {
  token: string;
  title: string;
  body: string;
  data?: Record<string, string> | null;
}

export type SendOutcome =
  | { kind: 'sent'; name: string | null }
  /** The token is dead: drop the device. */
  | { kind: 'drop'; error: string }
  /** This message cannot be delivered; retrying will not help. */
  | { kind: 'fail'; error: string }
  | { kind: 'retry'; error: string; retryAfterSeconds: number | null /** the cached access token was refused */; invalidateToken?: boolean };

// ---- Pure decisions --------------------------------------------------------------------------

/** Retry-After as seconds (delta-seconds or an HTTP date), capped; null when absent or unreadable. */
export function parseRetryAfter(header: string | null | undefined, now = Date.now()): number | null {
  if (header === null || header === undefined) return null;
  const value = header.trim();
  if (value === '') return null;
  let seconds: number;
  if (/^\d+$/.test(value)) {
    seconds = Number(value);
  } else {
    const at = Date.parse(value);
    if (Number.isNaN(at)) return null;
    seconds = Math.max(0, Math.ceil((at - now) / 1000));
  }
  return Math.min(seconds, MAX_RETRY_AFTER_SECONDS);
}

interface GoogleErrorBody {
  error?: {
    code?: number;
    message?: string;
    status?: string;
    details?: Array<{ '@type'?: string; errorCode?: string; fieldViolations?: Array<{ field?: string; description?: string }> }>;
  };
}

/** The FCM error code of an error body: the FcmError detail's errorCode, else the status. */
export function fcmErrorCode(body: unknown): string | null {
  const error = (body as GoogleErrorBody | null)?.error;
  if (!error || typeof error !== 'object') return null;
  const detail = error.details?.find((d) => typeof d?.errorCode === 'string');
  return detail?.errorCode ?? (typeof error.status === 'string' ? error.status : null);
}

/** Fields a Google BadRequest detail names (e.g. `message.token`). */
function violatedFields(body: unknown): string[] {
  const details = (body as GoogleErrorBody | null)?.error?.details ?? [];
  return details.flatMap((d) => (d?.fieldViolations ?? []).map((v) => String(v?.field ?? '')));
}

/**
 * What a `messages:send` response means for the device. UNREGISTERED, and INVALID_ARGUMENT about the
 * token, mean the token will never work again; 429 and 5xx are transient (honouring Retry-After);
 * 401 means the cached access token was refused, so it is fetched afresh and the send retried.
 */
export function classifySend(status: number, body: unknown, retryAfter: string | null, now = Date.now()): SendOutcome {
  if (status >= 200 && status < 300) {
    const name = (body as { name?: unknown } | null)?.name;
    return { kind: 'sent', name: typeof name === 'string' ? name : null };
  }
  const code = fcmErrorCode(body);
  const label = `FCM ${status}${code ? ` ${code}` : ''}`;
  if (code === 'UNREGISTERED') return { kind: 'drop', error: 'UNREGISTERED' };
  if (status === 400 && (code === 'INVALID_ARGUMENT' || code === null)) {
    // An INVALID_ARGUMENT that names another field than the token is about the message, not the device.
    const fields = violatedFields(body).filter((f) => f !== '');
    if (fields.length > 0 && !fields.some((f) => f === 'message.token' || f === 'token')) {
      return { kind: 'fail', error: `${label}: invalid ${fields.join(', ')}` };
    }
    return { kind: 'drop', error: 'INVALID_ARGUMENT' };
  }
  if (status === 429 || status >= 500) return { kind: 'retry', error: label, retryAfterSeconds: parseRetryAfter(retryAfter, now) };
  if (status === 401) return { kind: 'retry', error: label, retryAfterSeconds: null, invalidateToken: true };
  // 403 SENDER_ID_MISMATCH / PERMISSION_DENIED, 404 without UNREGISTERED, other 4xx.
  return { kind: 'fail', error: label };
}

export type TokenOutcome =
  | { kind: 'token'; accessToken: string; expiresInSeconds: number }
  | { kind: 'fail'; error: string }
  | { kind: 'retry'; error: string; retryAfterSeconds: number | null };

/** What the token endpoint's answer means: 4xx (invalid_grant, a revoked key) will not heal by itself. */
export function classifyToken(status: number, body: unknown, retryAfter: string | null, now = Date.now()): TokenOutcome {
  const b = (body ?? {}) as { access_token?: unknown; expires_in?: unknown; error?: unknown };
  if (status >= 200 && status < 300) {
    if (typeof b.access_token !== 'string' || b.access_token === '')
      return { kind: 'retry', error: 'OAuth token response without access_token', retryAfterSeconds: null };
    const expires = typeof b.expires_in === 'number' ? b.expires_in : Number(b.expires_in);
    return { kind: 'token', accessToken: b.access_token, expiresInSeconds: Number.isFinite(expires) && expires > 0 ? expires : 3600 };
  }
  // Only an RFC 6749 error code is repeated to the client, not free text from the endpoint.
  const code = typeof b.error === 'string' && /^[a-z_]{1,64}$/i.test(b.error) ? ` ${b.error}` : '';
  if (status === 429 || status >= 500)
    return { kind: 'retry', error: `OAuth token endpoint ${status}${code}`, retryAfterSeconds: parseRetryAfter(retryAfter, now) };
  return { kind: 'fail', error: `OAuth token endpoint refused the service account: ${status}${code}` };
}

/** A cached token is good until TOKEN_MARGIN_MS before it expires. */
export function tokenUsable(expiresAt: number, now = Date.now()): boolean {
  return now < expiresAt - TOKEN_MARGIN_MS;
}

// ---- The client ------------------------------------------------------------------------------

interface CachedToken {
  /** Which credentials it belongs to: replaced credentials never use the old token. */
  version: string;
  accessToken: string;
  expiresAt: number;
}

export interface FcmClientOptions {
  fcmUrl: string;
  /** The outbound client (address policy, time limit, bounded bodies). */
  http: OutboundClient;
  /** Network details of failed requests go here (the stored delivery error names only the class). */
  logger?: Logger;
  /** Requests (token and send) in flight at once from this process. */
  maxInFlight?: number;
  now?: () => number;
}

/** Identifies a set of credentials in the token cache without keeping anything secret as a key. */
export function credentialsVersion(account: ServiceAccount, updatedAt: number): string {
  return createHash('sha256').update(`${account.client_email}\0${account.private_key_id}\0${account.token_uri}\0${updatedAt}`).digest('base64url');
}

export class FcmClient {
  private readonly fcmUrl: string;
  private readonly http: OutboundClient;
  private readonly logger: Logger | undefined;
  private readonly now: () => number;
  private readonly limit: LimitFunction;
  private readonly tokens = new Map<string, CachedToken>();
  /** Concurrent sends of one business share one token request. */
  private readonly fetching = new Map<string, Promise<TokenOutcome>>();

  constructor(options: FcmClientOptions) {
    this.fcmUrl = options.fcmUrl.replace(/\/+$/, '');
    this.http = options.http;
    this.logger = options.logger;
    this.now = options.now ?? Date.now;
    this.limit = pLimit(options.maxInFlight ?? 16);
  }

  /** Requests waiting for a slot plus those in flight. */
  get pending(): number {
    return this.limit.activeCount + this.limit.pendingCount;
  }

  forget(businessId: string): void {
    this.tokens.delete(businessId);
  }

  /** The business's access token, from the cache or the token endpoint. */
  async accessToken(businessId: string, account: ServiceAccount, version: string, signal?: AbortSignal): Promise<TokenOutcome> {
    const cached = this.tokens.get(businessId);
    if (cached && cached.version === version && tokenUsable(cached.expiresAt, this.now())) {
      return { kind: 'token', accessToken: cached.accessToken, expiresInSeconds: Math.floor((cached.expiresAt - this.now()) / 1000) };
    }
    const key = `${businessId}\0${version}`;
    let pending = this.fetching.get(key);
    if (!pending) {
      // Shared by the business's concurrent sends, so no one send's signal aborts it: each send stops
      // waiting at its own (below); the fetch itself ends within the outbound client's time limit.
      pending = this.requestToken(account)
        .then((outcome) => {
          if (outcome.kind === 'token') {
            this.tokens.set(businessId, { version, accessToken: outcome.accessToken, expiresAt: this.now() + outcome.expiresInSeconds * 1000 });
          }
          return outcome;
        })
        .finally(() => this.fetching.delete(key));
      this.fetching.set(key, pending);
    }
    return signal ? untilAborted(pending, signal) : pending;
  }

  /** The RS256 assertion of the JWT-bearer grant, as Google's token endpoint expects it. */
  async assertion(account: ServiceAccount): Promise<string> {
    const iat = Math.floor(this.now() / 1000);
    return new SignJWT({ scope: FCM_SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: account.private_key_id })
      .setIssuer(account.client_email)
      .setAudience(account.token_uri)
      .setIssuedAt(iat)
      .setExpirationTime(iat + 3600)
      .sign(account.privateKey);
  }

  private async requestToken(account: ServiceAccount): Promise<TokenOutcome> {
    const assertion = await this.assertion(account);
    const form = new URLSearchParams({ grant_type: JWT_BEARER, assertion });
    return this.limit(async (): Promise<TokenOutcome> => {
      let response: OutboundResponse;
      try {
        response = await this.http.request(account.token_uri, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
          body: form.toString(),
        });
      } catch (error) {
        return this.networkFailure('OAuth token endpoint', error);
      }
      return classifyToken(response.status, readJson(response), retryAfterOf(response), this.now());
    });
  }

  /** One `messages:send`; never throws for HTTP or network failures (they are outcomes). */
  async send(businessId: string, account: ServiceAccount, version: string, message: PushMessage, signal?: AbortSignal): Promise<SendOutcome> {
    const token = await this.accessToken(businessId, account, version, signal);
    if (token.kind === 'fail') return token;
    if (token.kind === 'retry') return token;
    const url = `${this.fcmUrl}/v1/projects/${encodeURIComponent(account.project_id)}/messages:send`;
    const payload = {
      message: {
        token: message.token,
        notification: { title: message.title, body: message.body },
        ...(message.data && Object.keys(message.data).length > 0 ? { data: message.data } : {}),
      },
    };
    const outcome = await this.limit(async (): Promise<SendOutcome> => {
      let response: OutboundResponse;
      try {
        response = await this.http.request(url, {
          method: 'POST',
          headers: { authorization: `Bearer ${token.accessToken}`, 'content-type': 'application/json; charset=utf-8' },
          body: JSON.stringify(payload),
          signal,
        });
      } catch (error) {
        return this.networkFailure('FCM', error);
      }
      return classifySend(response.status, readJson(response), retryAfterOf(response), this.now());
    });
    if (outcome.kind === 'retry' && outcome.invalidateToken) this.forget(businessId);
    return outcome;
  }

  /**
   * A request without a response: the stored error names the step and the failure class only, and
   * the attempt is retried (a refused name may resolve elsewhere later; no connection is made meanwhile).
   */
  private networkFailure(step: 'OAuth token endpoint' | 'FCM', error: unknown): { kind: 'retry'; error: string; retryAfterSeconds: null } {
    const detail = failureDetail(error);
    if (detail.failure === 'address not allowed') this.logger?.warn({ step, ...detail }, 'push request refused by the outbound address policy');
    else this.logger?.debug({ step, ...detail }, 'push request failed');
    return { kind: 'retry', error: `${step}: ${detail.failure}`, retryAfterSeconds: null };
  }
}

/** `outcome`, or a retry as soon as `signal` aborts (the attempt is interrupted: the queue leaves it to its lease). */
function untilAborted(outcome: Promise<TokenOutcome>, signal: AbortSignal): Promise<TokenOutcome> {
  const interrupted: TokenOutcome = { kind: 'retry', error: 'OAuth token endpoint: interrupted', retryAfterSeconds: null };
  if (signal.aborted) return Promise.resolve(interrupted);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(interrupted);
    signal.addEventListener('abort', onAbort, { once: true });
    outcome.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function readJson(response: OutboundResponse): unknown {
  try {
    return JSON.parse(response.body);
  } catch {
    return null;
  }
}

function retryAfterOf(response: OutboundResponse): string | null {
  const value = response.headers['retry-after'];
  return (Array.isArray(value) ? value[0] : value) ?? null;
}
