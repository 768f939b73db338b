/** The admin API of contract 2: businesses and their API clients, behind CPS_ADMIN_TOKEN. */
import { Type } from 'typebox';
import type { App } from '../../http/app-type.ts';
import { SCOPES } from '../../auth/scopes.ts';
import { MAX_ID_LENGTH, StandardError } from '../../http/schemas.ts';
import type { BusinessService } from './service.ts';

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
  };
}
