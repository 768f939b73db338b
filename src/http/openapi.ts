/**
 * OpenAPI 3.1 generated from the route schemas (the same ones that validate requests), served at
 * /openapi.json, and an interactive reference at /docs with locally bundled assets.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/** Schemas of outbound events, for the OpenAPI `webhooks` section. Modules that emit events add theirs. */
export const webhookDocs: Record<string, unknown> = {
  'external_review.request': {
    post: {
      summary: 'A review was requested for an appointment',
      description: 'Sent to each active subscription for `external_review.request`, signed the Standard Webhooks way ' +
        '(`webhook-id`, `webhook-timestamp`, `webhook-signature`). Delivery is at least once; a 2xx within 15 s is success.',
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              required: ['event', 'event_time', 'timestamp', 'client_id', 'business_id', 'data'],
              properties: {
                event: { type: 'string', const: 'external_review.request' },
                event_time: { type: 'integer', description: 'Epoch seconds when the review request occurred' },
                timestamp: { type: 'integer', description: 'Epoch seconds; equals event_time' },
                client_id: { type: 'string' },
                business_id: { type: 'string' },
                data: {
                  type: 'object',
                  required: ['doctor_id', 'external_review_link', 'patient_id', 'appointment_id', 'clinic_id'],
                  properties: {
                    doctor_id: { type: 'string' },
                    external_review_link: { type: 'string', format: 'uri' },
                    patient_id: { type: 'string' },
                    appointment_id: { type: 'string' },
                    clinic_id: { type: 'string' },
                  },
                },
              },
            },
          },
        },
      },
      responses: { '2XX': { description: 'Received' } },
    },
  },
};

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
      webhooks: webhookDocs,
    } as never,
    transform: ({ schema, url, route }) => {
      const auth = route.config?.auth;
      const transformed: Record<string, unknown> = { ...(schema ?? {}) };
      if (auth !== undefined && auth !== 'public') {
        transformed.security = auth === 'admin' ? [{ bearerAuth: [] }] : [{ bearerAuth: [] }, { authHeader: [] }];
      }
      return { schema: transformed as never, url };
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true }, config: { auth: 'public' } }, async () => app.swagger());
}
