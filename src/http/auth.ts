/**
 * Authentication and scopes. Every route declares `config.auth`: 'public', 'admin' (the
 * CPS_ADMIN_TOKEN) or the scopes any one of which grants access ([] = any valid token of a business).
 * The check runs in onRequest, before parsing and validation, so 401 and 403 come before 400.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccessTokens } from '../modules/auth/tokens.ts';
import { constantTimeEqual } from '../security/secrets.ts';
import { AppError, type ErrorCode, type ErrorFamily } from './errors.ts';
import type { Scope } from './scopes.ts';

export interface Principal {
  businessId: string;
  clientId: string;
  scopes: ReadonlySet<string>;
}

export type RouteAuth = 'public' | 'admin' | { anyOf: Scope[]; forbiddenCode?: ErrorCode };

declare module 'fastify' {
  interface FastifyContextConfig {
    family?: ErrorFamily;
    auth?: RouteAuth;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

/** The token from `Authorization: Bearer <t>` or the raw `auth: <t>` header (a `Bearer ` prefix tolerated). */
export function tokenFrom(request: FastifyRequest): string | null {
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (match?.[1]) return match[1];
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

export function registerAuth(app: FastifyInstance, tokens: AccessTokens, adminToken: string | null): void {
  app.decorateRequest('principal', null);

  app.addHook('onRoute', (route) => {
    if (route.config?.auth === undefined && !route.url.startsWith('/docs')) {
      throw new Error(`route ${route.method} ${route.url} declares no config.auth`);
    }
  });

  // An instance hook, so it runs before any module's own onRequest hooks (which may rely on it).
  // Public routes call back at once: no promise for the majority of cheap requests.
  app.addHook('onRequest', (request, _reply, done) => {
    const auth = request.routeOptions.config.auth;
    if (auth === undefined || auth === 'public') {
      done();
    } else if (auth === 'admin') {
      const token = tokenFrom(request);
      done(adminToken === null || token === null || !constantTimeEqual(token, adminToken) ? new AppError(401, 'A valid admin token is required') : undefined);
    } else {
      authenticate(request, auth).then(() => done(), done);
    }
  });

  async function authenticate(request: FastifyRequest, auth: Exclude<RouteAuth, 'public' | 'admin'>): Promise<void> {
    const token = tokenFrom(request);
    const claims = token === null ? null : await tokens.verify(token);
    if (!claims) throw new AppError(401, token === null ? 'Authentication required: send Authorization: Bearer <token> or auth: <token>' : 'Invalid or expired token');
    const scopes = new Set(claims.scopes);
    if (auth.anyOf.length > 0 && !auth.anyOf.some((scope) => scopes.has(scope))) {
      throw new AppError(403, `This operation needs the scope ${auth.anyOf.join(' or ')}`, auth.forbiddenCode ? { code: auth.forbiddenCode } : {});
    }
    request.principal = { businessId: claims.businessId, clientId: claims.clientId, scopes };
  }
}
