/**
 * The admin API of contract 2: businesses and their API clients, behind CPS_ADMIN_TOKEN; and a business's own
 * API clients, listed for a client of that business (never another's).
 */
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { principalOf } from '../../http/auth.ts';
import { SCOPES } from '../../auth/scopes.ts';
import { MAX_ID_LENGTH, StandardError } from '../../http/schemas.ts';
import { MAX_SECRET_GRACE_SECONDS, MAX_USAGE_DAYS, type BusinessService } from './service.ts';

const AuthError = Type.Object({ code: Type.Integer(), error: Type.String() });

const ClientPath = Type.Object({ business_id: Type.String({ maxLength: MAX_ID_LENGTH }), client_id: Type.String({ maxLength: MAX_ID_LENGTH }) });

const ClientListing = Type.Object({
  client_id: Type.String(),
  scopes: Type.Array(Type.String()),
  created_at: Type.Integer({ description: 'epoch ms' }),
  disabled_at: Type.Union([Type.Integer(), Type.Null()], { description: 'epoch ms; null while the client is active' }),
  previous_secret_expires_at: Type.Union([Type.Integer(), Type.Null()], {
    description: 'epoch ms until which the secret a rotation replaced still logs in; null when none does',
  }),
});

export function businessRoutes(service: BusinessService) {
  return async function plugin(app: App): Promise<void> {
    const config = { family: 'standard', auth: 'admin' } as const;

    app.post(
      '/admin/v1/businesses',
      {
        config,
        schema: {
          tags: ['admin'],
          summary: 'Create a business with one API client holding every scope',
          body: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) }),
          response: {
            201: Type.Object({ business_id: Type.String(), client_id: Type.String(), client_secret: Type.String() }),
            400: StandardError,
            401: StandardError,
          },
        },
      },
      async (request, reply) => reply.code(201).send(await service.createBusiness(request.body.name)),
    );

    app.post(
      '/admin/v1/businesses/:business_id/clients',
      {
        config,
        schema: {
          tags: ['admin'],
          summary: 'Create an API client for a business (all scopes unless listed)',
          params: Type.Object({ business_id: Type.String({ maxLength: MAX_ID_LENGTH }) }),
          body: Type.Union([
            Type.Object({ scopes: Type.Optional(Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), { maxItems: 20 })) }),
            Type.Null(),
          ]),
          response: {
            201: Type.Object({
              business_id: Type.String(),
              client_id: Type.String(),
              client_secret: Type.String(),
              scopes: Type.Array(Type.String()),
            }),
            400: StandardError,
            401: StandardError,
            404: StandardError,
          },
        },
      },
      async (request, reply) => reply.code(201).send(await service.createClient(request.params.business_id, request.body?.scopes)),
    );

    app.get(
      '/admin/v1/businesses',
      {
        config,
        schema: {
          tags: ['admin'],
          summary: 'List every business, with its count of active API clients',
          response: {
            200: Type.Object({
              businesses: Type.Array(
                Type.Object({
                  business_id: Type.String(),
                  name: Type.String(),
                  created_at: Type.Integer({ description: 'epoch ms' }),
                  clients: Type.Integer({ description: 'active API clients' }),
                }),
              ),
            }),
            401: StandardError,
          },
        },
      },
      async () => ({
        businesses: (await service.listBusinesses()).map((business) => ({
          business_id: business.id,
          name: business.name,
          created_at: business.created_at,
          clients: business.clients,
        })),
      }),
    );

    app.get(
      '/admin/v1/businesses/:business_id/clients',
      {
        config,
        schema: {
          tags: ['admin'],
          summary: "List a business's API clients (never their secrets), revoked ones too",
          params: Type.Object({ business_id: Type.String({ maxLength: MAX_ID_LENGTH }) }),
          response: { 200: Type.Object({ clients: Type.Array(ClientListing) }), 400: StandardError, 401: StandardError, 404: StandardError },
        },
      },
      async (request) => ({ clients: await service.listClients(request.params.business_id) }),
    );

    app.get(
      '/connect-auth/v1/account/clients',
      {
        // The family of its path: errors as the login's, {code, error}.
        config: { family: 'auth', auth: { anyOf: ['webhook:admin'] } },
        schema: {
          tags: ['auth'],
          summary: "List the API clients of the caller's own business (never their secrets), revoked ones too",
          description: "The business is the caller's: no other business's clients can be asked for.",
          response: { 200: Type.Object({ clients: Type.Array(ClientListing) }), 401: AuthError, 403: AuthError },
        },
      },
      async (request) => ({ clients: await service.listClients(principalOf(request).businessId) }),
    );

    app.get(
      '/admin/v1/businesses/:business_id/usage',
      {
        config,
        schema: {
          tags: ['admin'],
          summary: "A business's usage per UTC day: API calls that touched its data, webhook delivery attempts, and the failures of each",
          description:
            'requests counts its access log entries (failures: answered 400 or more, or never answered); deliveries counts its webhook ' +
            'delivery attempts (failures: no answer, or one outside 2xx). Every day of the window is listed, oldest first. ' +
            "A process counts a business's window at most once every 10 seconds, so the figures may lag by up to 10 seconds.",
          params: Type.Object({ business_id: Type.String({ maxLength: MAX_ID_LENGTH }) }),
          querystring: Type.Object({ days: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_USAGE_DAYS, default: 7 })) }),
          response: {
            200: Type.Object({
              days: Type.Array(
                Type.Object({
                  day: Type.String({ description: 'YYYY-MM-DD, UTC' }),
                  requests: Type.Integer(),
                  failures: Type.Integer(),
                  deliveries: Type.Integer(),
                  delivery_failures: Type.Integer(),
                }),
              ),
            }),
            400: StandardError,
            401: StandardError,
            404: StandardError,
          },
        },
      },
      async (request) => ({ days: await service.usage(request.params.business_id, request.query.days ?? 7) }),
    );

    app.post(
      '/admin/v1/businesses/:business_id/clients/:client_id/revoke',
      {
        config,
        schema: {
          tags: ['admin'],
          summary: 'Revoke an API client: no more logins or refreshes; access tokens issued last until they expire',
          params: ClientPath,
          body: Type.Union([Type.Object({}), Type.Null()]),
          response: {
            200: Type.Object({ client_id: Type.String(), revoked: Type.Literal(true) }),
            400: StandardError,
            401: StandardError,
            404: StandardError,
          },
        },
      },
      async (request) => service.revokeClient(request.params.client_id, request.params.business_id),
    );

    app.post(
      '/admin/v1/businesses/:business_id/clients/:client_id/rotate-secret',
      {
        config,
        schema: {
          tags: ['admin'],
          summary: 'Give an API client a new secret; the old one keeps logging in for grace_seconds',
          description:
            'The answer holds the new secret, once. The secret replaced keeps logging in for grace_seconds (0: it stops now), so the ' +
            "client's systems can move over; a secret replaced by an earlier rotation stops now. Tokens already issued stay valid until they expire.",
          params: ClientPath,
          body: Type.Object({
            grace_seconds: Type.Integer({
              minimum: 0,
              maximum: MAX_SECRET_GRACE_SECONDS,
              description: `seconds the replaced secret keeps logging in (0 to ${MAX_SECRET_GRACE_SECONDS}, 30 days)`,
            }),
          }),
          response: {
            200: Type.Object({
              client_id: Type.String(),
              client_secret: Type.String(),
              previous_secret_expires_at: Type.Union([Type.Integer(), Type.Null()], {
                description: 'epoch ms until which the replaced secret logs in; null when it stopped now',
              }),
            }),
            400: StandardError,
            401: StandardError,
            404: StandardError,
            409: StandardError,
          },
        },
      },
      async (request) => service.rotateSecret(request.params.client_id, request.body.grace_seconds, request.params.business_id),
    );
  };
}
