/** Login, refresh (both paths) and the public keys: contract section 2. */
import { Type } from 'typebox';
import type { AccessTokens } from '../../auth/tokens.ts';
import type { App } from '../../http/app-type.ts';
import type { AuthService } from './service.ts';

const TokenPair = Type.Object({
  access_token: Type.String(),
  expires_in: Type.Integer({ description: 'Seconds' }),
  refresh_token: Type.String(),
  refresh_expires_in: Type.Integer({ description: 'Seconds' }),
});

const AuthError = Type.Object({ code: Type.Integer(), error: Type.String() });

/** `tokens` publishes the public keys of the access tokens the service issues. */
export function authRoutes(service: AuthService, tokens: AccessTokens) {
  return async function plugin(app: App): Promise<void> {
    const config = { family: 'auth', auth: 'public' } as const;

    app.post(
      '/connect-auth/v1/account/login',
      {
        config,
        schema: {
          tags: ['auth'],
          summary: 'Log in with client credentials',
          description:
            'Failed logins spend a budget per client id and per source address (CPS_LOGIN_CLIENT_FAILURES, CPS_LOGIN_ADDRESS_FAILURES per CPS_LOGIN_FAILURE_WINDOW_SECONDS); an address that spent its budget is answered 429 with Retry-After before the secret is checked; a client id that spent its budget answers a wrong secret 429 and still admits the right one. A successful login spends nothing. 503 with Retry-After when too many secret checks are already in progress.',
          body: Type.Object({
            client_id: Type.String({ minLength: 1, maxLength: 200 }),
            client_secret: Type.String({ minLength: 1, maxLength: 500 }),
          }),
          response: { 200: TokenPair, 400: AuthError, 401: AuthError, 429: AuthError, 503: AuthError },
        },
      },
      async (request) => service.login(request.body.client_id, request.body.client_secret, request.ip),
    );

    const refreshSchema = {
      tags: ['auth'],
      summary: 'Exchange a refresh token for a new token pair (each refresh token works once)',
      body: Type.Object({ refresh_token: Type.String({ minLength: 1, maxLength: 500 }) }),
      response: { 200: TokenPair, 400: AuthError, 401: AuthError },
    };
    for (const url of ['/connect-auth/v1/account/refresh-token', '/connect-auth/v1/account/refresh']) {
      app.post(url, { config, schema: refreshSchema }, async (request) => service.refresh(request.body.refresh_token));
    }

    app.get(
      '/.well-known/jwks.json',
      {
        config: { auth: 'public' },
        schema: { tags: ['auth'], summary: 'Public keys that verify access tokens' },
      },
      async (_request, reply) => {
        reply.header('cache-control', 'public, max-age=300');
        return tokens.jwks();
      },
    );
  };
}
