/**
 * Authentication and scopes. Every route declares `config.auth`: 'public', 'admin' (the
 * CPS_ADMIN_TOKEN) or the scopes any one of which grants access ([] = any valid token of a business).
 * The check runs first in each route's onRequest hooks, before parsing and validation, so 401 and 403
 * come before 400. Wrong admin tokens spend a budget per source address (CPS_ADMIN_FAILURES per
 * CPS_LOGIN_FAILURE_WINDOW_SECONDS), checked before the token: an address that spent it gets 429.
 * A request without a token may instead carry the browser console's session cookie (CookieSessions,
 * kept by modules/console): an operator's session admits admin routes, a business client's its scoped
 * routes with the client's scopes, and a change (any method but GET and HEAD) must also send the
 * session's X-CSRF-Token. The route, the service and the access log entry are the API call's own.
 */
import type { FastifyInstance, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.ts';
import type { Scope } from '../auth/scopes.ts';
import type { AccessClaims, AccessTokens } from '../auth/tokens.ts';
import { AppError, type ErrorCode } from '../errors.ts';
import { addressKey, createBuckets, type BucketLimit, type BucketsTake } from '../security/buckets.ts';
import { constantTimeEqual } from '../security/secrets.ts';
import type { ErrorFamily } from './errors.ts';
import { prependRouteHook } from './route-hooks.ts';

export type RouteAuth = 'public' | 'admin' | { anyOf: Scope[]; forbiddenCode?: ErrorCode };

/** A browser console session found by its cookie's token. */
export interface CookieSession {
  /** Signed in with the admin token: admits admin routes. */
  readonly operator: boolean;
  /** Signed in with an API client's credentials: its business and current scopes. */
  readonly principal: Principal | null;
  /** What a change must send in X-CSRF-Token. */
  readonly csrf: string;
}

/** The console's sessions (modules/console implements them; this layer imports no module). */
export interface CookieSessions {
  readonly cookieName: string;
  find(token: string): Promise<CookieSession | null>;
}

export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD']);

/** The value of one cookie of the request, or null. */
export function cookieOf(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (typeof header !== 'string') return null;
  for (const part of header.split(';')) {
    const equals = part.indexOf('=');
    if (equals > 0 && part.slice(0, equals).trim() === name) {
      const value = part.slice(equals + 1).trim();
      return value === '' ? null : value;
    }
  }
  return null;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    family?: ErrorFamily;
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    principal: Principal | null;
    /** The admin token was presented and matched (routes of config.auth 'admin'). */
    operator: boolean;
  }
}

const BEARER = /^Bearer\s+/i;
const WHITESPACE = /\s/;

/** The token from `Authorization: Bearer <t>` or the raw `auth: <t>` header (a `Bearer ` prefix tolerated). */
export function tokenFrom(request: FastifyRequest): string | null {
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string') {
    // What /^Bearer\s+(\S+)\s*$/i captures, in two cheap steps: one such regex over a ~400-character
    // JWT cost ~0.6 us, the prefix match and a whitespace test ~0.2 us.
    const prefix = BEARER.exec(authorization);
    if (prefix) {
      const token = authorization.slice(prefix[0].length).trimEnd();
      if (token !== '' && !WHITESPACE.test(token)) return token;
    }
  }
  const raw = request.headers.auth;
  if (typeof raw === 'string' && raw.trim() !== '') return raw.trim().replace(/^Bearer\s+/i, '');
  return null;
}

/** The authenticated caller of a route that requires a token. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new AppError(401, 'Authentication required');
  return request.principal;
}

/**
 * Principals by the verified claims they come from. The token cache hands back the same claims
 * object for the same token, so a caller's principal and scope set are built once, not per request.
 */
const principals = new WeakMap<AccessClaims, Principal>();

function principalFor(claims: AccessClaims): Principal {
  let principal = principals.get(claims);
  if (!principal) {
    principal = { businessId: claims.businessId, clientId: claims.clientId, scopes: new Set(claims.scopes) };
    principals.set(claims, principal);
  }
  return principal;
}

export interface AdminAuth {
  /** CPS_ADMIN_TOKEN; null: every admin request answers 401. */
  token: string | null;
  /** Wrong tokens per source address per window before 429 (0: no budget). */
  failures: number;
  windowSeconds: number;
  /** Shares the budgets across processes, as the login budgets do. */
  redisUrl: string | null;
  logger: Logger;
}

export function registerAuth(app: FastifyInstance, tokens: AccessTokens, admin: AdminAuth, sessions?: CookieSessions): void {
  const adminToken = admin.token;
  /** The session cookie of a request that sent no token, or null. */
  const sessionCookie = (request: FastifyRequest): string | null =>
    sessions && tokenFrom(request) === null ? cookieOf(request, sessions.cookieName) : null;
  const bySession = async (request: FastifyRequest, cookie: string, auth: Exclude<RouteAuth, 'public'>): Promise<AppError | undefined> => {
    const session = await sessions!.find(cookie);
    if (!session) return new AppError(401, 'The console session has ended; sign in again');
    if (!SAFE_METHODS.has(request.method)) {
      const sent = request.headers[CSRF_HEADER];
      if (typeof sent !== 'string' || !constantTimeEqual(sent, session.csrf)) {
        return new AppError(403, "A change made with a console session must send the session's X-CSRF-Token");
      }
    }
    if (auth === 'admin') {
      if (!session.operator) return new AppError(401, 'A valid admin token is required');
      request.operator = true;
      return undefined;
    }
    if (!session.principal) return new AppError(403, "An operator's console session acts for no business; sign in with a business's API client");
    return admitPrincipal(request, auth, session.principal);
  };
  const buckets = createBuckets({ redisUrl: admin.redisUrl, logger: admin.logger, what: 'admin token throttling' });
  app.addHook('onClose', () => buckets.close());
  const budgetOf = (request: FastifyRequest): BucketLimit | null =>
    admin.failures > 0
      ? { key: `cps:admin:address:${addressKey(request.ip)}`, rate: admin.failures / admin.windowSeconds, burst: admin.failures }
      : null;
  const checkAdmin = (request: FastifyRequest): AppError | undefined => {
    const token = tokenFrom(request);
    if (adminToken === null || token === null || !constantTimeEqual(token, adminToken)) return new AppError(401, 'A valid admin token is required');
    request.operator = true;
    return undefined;
  };
  // The budget is taken before the token is compared, and given back when it matches: only wrong tokens spend it.
  const adminHook = (request: FastifyRequest, _reply: unknown, done: HookHandlerDoneFunction) => {
    const cookie = sessionCookie(request);
    if (cookie !== null) {
      bySession(request, cookie, 'admin').then(done, done);
      return;
    }
    const budget = budgetOf(request);
    if (budget === null) {
      done(checkAdmin(request));
      return;
    }
    const decide = ({ waitMs, refusedBy }: BucketsTake) => {
      if (refusedBy >= 0) {
        const seconds = Math.max(1, Math.ceil(waitMs / 1000));
        done(
          new AppError(429, `Too many wrong admin tokens from this address; retry in ${seconds} s`, { headers: { 'retry-after': String(seconds) } }),
        );
        return;
      }
      const refused = checkAdmin(request);
      if (refused === undefined) void buckets.refund([budget]);
      done(refused);
    };
    const taken = buckets.take([budget]);
    if (taken instanceof Promise) taken.then(decide, done);
    else decide(taken);
  };

  app.decorateRequest('principal', null);
  app.decorateRequest('operator', false);

  app.addHook('onRoute', (route) => {
    if (route.config?.auth === undefined && !route.url.startsWith('/docs')) {
      throw new Error(`route ${route.method} ${route.url} declares no config.auth`);
    }
  });
  // Each route gets its own check, built once for what it declares, and first among its onRequest
  // hooks. No module adds an instance onRequest hook (it would run before this one): work that needs
  // the principal runs from preParsing on. Callback style: a token verified before is admitted
  // without a promise.
  app.addHook('onRoute', (route) => {
    const auth = route.config?.auth;
    if (auth === undefined || auth === 'public') return;
    prependRouteHook(
      route,
      'onRequest',
      auth === 'admin'
        ? adminHook
        : (request, _reply, done) => {
            const token = tokenFrom(request);
            if (token === null) {
              const cookie = sessionCookie(request);
              if (cookie !== null) {
                bySession(request, cookie, auth).then(done, done);
                return;
              }
              done(new AppError(401, 'Authentication required: send Authorization: Bearer <token> or auth: <token>'));
              return;
            }
            const claims = tokens.verifyCached(token);
            if (claims !== undefined) done(admit(request, auth, claims));
            else tokens.verify(token).then((verified) => done(admit(request, auth, verified)), done);
          },
    );
  });
}

/** Sets the request's principal, or answers why not. */
function admit(request: FastifyRequest, auth: Exclude<RouteAuth, 'public' | 'admin'>, claims: AccessClaims | null): AppError | undefined {
  if (!claims) return new AppError(401, 'Invalid or expired token');
  return admitPrincipal(request, auth, principalFor(claims));
}

function admitPrincipal(request: FastifyRequest, auth: Exclude<RouteAuth, 'public' | 'admin'>, principal: Principal): AppError | undefined {
  if (auth.anyOf.length > 0 && !auth.anyOf.some((scope) => principal.scopes.has(scope))) {
    return new AppError(403, `This operation needs the scope ${auth.anyOf.join(' or ')}`, auth.forbiddenCode ? { code: auth.forbiddenCode } : {});
  }
  request.principal = principal;
  return undefined;
}
