/**
 * OpenAPI 3.1 generated from the route schemas (the same ones that validate requests), served at
 * /openapi.json, and an interactive reference at /docs with locally bundled assets, under our own
 * name, logo and version.
 */
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { webhookDocs } from '../events.ts';
import { API_VERSION, PRODUCT, VERSION } from '../version.ts';
import { documentIdempotencyKey } from './idempotency.ts';

/** The top bar's mark: the name in white on the bar's dark background. */
const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="40" viewBox="0 0 200 40"><rect x="2" y="6" width="28" height="28" rx="6" fill="#0b5cad"/><path d="M16 12v16M8 20h16" stroke="#fff" stroke-width="4" stroke-linecap="round"/><text x="38" y="28" font-family="system-ui,sans-serif" font-size="22" font-weight="700" fill="#fff">${PRODUCT}</text></svg>`;

export async function registerOpenApi(app: FastifyInstance, publicUrl: string): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: `${PRODUCT} — Clinical Practice Service`,
        // The interface's version (contract section 9); the package's release names the /docs page.
        version: API_VERSION,
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
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    staticCSP: true,
    // Every asset is served from this origin. upgrade-insecure-requests would turn them into https
    // requests, which leave the page blank when the service is reached over http on a LAN name or IP.
    transformStaticCSP: (header) => header.replace(/\s*upgrade-insecure-requests;?/, ''),
    logo: { type: 'image/svg+xml', content: Buffer.from(LOGO), href: '/docs', target: '_self' },
    theme: {
      title: `${PRODUCT} ${VERSION} — API reference`,
      favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: Buffer.from(LOGO) }],
    },
  });
  app.get('/openapi.json', { schema: { hide: true }, config: { auth: 'public' } }, async () => app.swagger());
}
