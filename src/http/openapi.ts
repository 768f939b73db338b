/**
 * OpenAPI 3.1 generated from the route schemas (the same ones that validate requests), served at
 * /openapi.json, and an interactive reference at /docs with locally bundled assets.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { webhookDocs } from '../events.ts';
import { documentIdempotencyKey } from './idempotency.ts';

export async function registerOpenApi(app: FastifyInstance, publicUrl: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'OpenCPS — Clinical Practice Service',
        version: '1.0.0',
        description: 'Drug and lab search, appointments, clinics and doctors, patient cases, push notifications and webhooks.',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      },
      servers: [{ url: publicUrl }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Access token from /connect-auth/v1/account/login' },
          authHeader: { type: 'apiKey', in: 'header', name: 'auth', description: 'The same access token, sent raw in the `auth` header' },
        },
      },
      webhooks: webhookDocs(),
    } as never,
    transform: ({ schema, url, route }) => {
      const auth = route.config?.auth;
      const transformed: Record<string, unknown> = route.config?.idempotent ? documentIdempotencyKey({ ...(schema ?? {}) }) : { ...(schema ?? {}) };
      if (auth !== undefined && auth !== 'public') {
        transformed.security = auth === 'admin' ? [{ bearerAuth: [] }] : [{ bearerAuth: [] }, { authHeader: [] }];
      }
      return { schema: transformed as never, url };
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true }, config: { auth: 'public' } }, async () => app.swagger());
}
