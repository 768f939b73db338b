/**
 * Builds the Fastify app (no listen), so tests drive it with app.inject(). createContext wires
 * configuration, storage, keys and metrics; buildApp adds the HTTP layer and every module
 * (modules/index.ts creates them).
 */
import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import { registerAudit } from './access-log/http.ts';
import { AuditLog } from './access-log/log.ts';
import { AccessTokens } from './auth/tokens.ts';
import { PatientCompartment } from './compartment.ts';
import type { Config } from './config.ts';
import type { AppContext } from './context.ts';
import type { Storage } from './db/index.ts';
import { AccessLogController, registerAccessLog } from './http/access-log.ts';
import type { App } from './http/app-type.ts';
import { registerAuth } from './http/auth.ts';
import { registerErrorHandling } from './http/errors-plugin.ts';
import { registerIdempotency } from './http/idempotency.ts';
import { clientErrorHandler, frameworkErrorHandler, refuseConnect } from './http/framework-errors.ts';
import { createRegistry, registerPoolMetrics, registerRequestMetrics } from './http/metrics.ts';
import { registerOpenApi } from './http/openapi.ts';
import { MAX_ID_LENGTH } from './http/schemas.ts';
import { requestLogger } from './http/request-logger.ts';
import { sharedResponseSerializers } from './http/response-serializers.ts';
import { registerValidation } from './http/validation.ts';
import { JobQueue } from './jobs/queue.ts';
import { createModules, type Modules } from './modules/index.ts';
import type { Keys } from './security/keys.ts';
import { OutboundClient } from './security/outbound-client.ts';

export const BODY_LIMIT = 1024 * 1024;

/**
 * The router's limit on one path parameter, in UTF-16 code units after percent-decoding: the longest
 * id a schema accepts (MAX_ID_LENGTH code points) is up to twice that when made of astral characters.
 * Raised to fit the schemas rather than the schemas lowered, since ids of up to 200 characters exist.
 */
export const MAX_PARAM_LENGTH = 2 * MAX_ID_LENGTH;

export function createContext(config: Config, storage: Storage, keys: Keys, logger: Logger): AppContext {
  const metrics = createRegistry();
  if (storage.pgPool) registerPoolMetrics(metrics, storage.pgPool);
  return {
    config,
    storage,
    keys,
    logger,
    tokens: new AccessTokens(keys.signing, config.publicUrl, config.accessTokenTtl, keys.previous ? [keys.previous] : [], (issuer) =>
      logger.warn(
        { issuer, our_issuer: config.publicUrl },
        'refused a token signed with our key but issued by another process with a different CPS_PUBLIC_URL: every process must share one CPS_PUBLIC_URL',
      ),
    ),
    metrics,
    jobs: new JobQueue(storage, logger, metrics),
    readiness: new Map(),
    compartment: new PatientCompartment(),
    outbound: new OutboundClient({ publicOnly: config.env === 'production', allow: config.outboundAllow }),
    audit: new AuditLog({
      db: storage.db,
      dataDir: config.dataDir,
      enabled: config.audit,
      flushMs: config.auditFlushMs,
      flushEntries: config.auditFlushEntries,
      sync: config.auditSync,
      masterKey: keys.masterKey,
      logger,
    }),
  };
}

/** Running jobs get the shutdown grace period less a second, so they settle before the process exits. */
export function jobsGraceMs(config: Config): number {
  return Math.max(0, config.shutdownGraceSeconds * 1000 - 1000);
}

const INCOMING_REQUEST_ID = /^[A-Za-z0-9._:-]{8,64}$/;

/** Request ids: a random prefix per process and a counter, unique without a random draw per request. */
const REQUEST_ID_PREFIX = `req_${randomBytes(6).toString('base64url')}`;
let requestCounter = 0;
const nextRequestId = () => `${REQUEST_ID_PREFIX}${(requestCounter++).toString(36)}`;

/**
 * How often Node looks for requests past their time: a tenth of the timeout, between 0.1 s and 3 s
 * (Node's own 30 s would let a 30 s timeout run to a minute).
 */
export function timeoutCheckIntervalMs(requestTimeoutMs: number): number {
  return Math.min(3000, Math.max(100, Math.floor(requestTimeoutMs / 10)));
}

export async function buildApp(ctx: AppContext, modules: Modules = createModules(ctx)): Promise<App> {
  const requestTimeoutMs = ctx.config.requestTimeoutSeconds * 1000;
  const app = Fastify({
    // The whole request (head and body) within CPS_REQUEST_TIMEOUT_SECONDS, else 408 (framework-errors.ts):
    // Fastify's default of 0 let a body dripped a byte at a time hold its socket for ever.
    requestTimeout: requestTimeoutMs,
    http: { headersTimeout: Math.min(60_000, requestTimeoutMs), connectionsCheckingInterval: timeoutCheckIntervalMs(requestTimeoutMs) },
    loggerInstance: ctx.logger as FastifyBaseLogger,
    childLoggerFactory: requestLogger,
    // One line per request, written by registerAccessLog, instead of Fastify's.
    logController: new AccessLogController(),
    bodyLimit: BODY_LIMIT,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    schemaController: { compilersFactory: { buildSerializer: sharedResponseSerializers } },
    requestIdHeader: false,
    // request.ip is the client's address behind the proxies named in CPS_TRUST_PROXY (login budgets).
    trustProxy: ctx.config.trustProxy,
    // Errors before routing, in the family body like the rest (framework-errors.ts).
    frameworkErrors: frameworkErrorHandler(MAX_PARAM_LENGTH),
    clientErrorHandler: clientErrorHandler(nextRequestId),
    // A caller's well-formed x-request-id is kept so that traces join up; anything else is replaced.
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && INCOMING_REQUEST_ID.test(incoming) ? incoming : nextRequestId();
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  refuseConnect(app.server, nextRequestId);
  registerValidation(app);
  registerErrorHandling(app);
  registerAuth(
    app,
    ctx.tokens,
    {
      token: ctx.config.adminToken,
      failures: ctx.config.adminFailures,
      windowSeconds: ctx.config.loginFailureWindowSeconds,
      redisUrl: ctx.config.redisUrl,
      logger: ctx.logger,
    },
    modules.console.sessions,
  );
  registerIdempotency(app, modules.idempotency.keys);
  registerRequestMetrics(app, ctx.metrics);
  registerAccessLog(app, ctx.logger);
  registerAudit(app, ctx.audit);

  // During shutdown, responses to requests in flight close their connection, so keep-alive
  // sockets do not hold the process open for Fastify's 72 s keep-alive timeout. Running jobs get
  // the grace period alongside the requests in flight; the modules stop once both are done, and
  // the outbound keep-alive sockets go last. ctx.jobs.stop is idempotent.
  let closing = false;
  let jobsStopping: Promise<void> | null = null;
  app.addHook('preClose', async () => {
    closing = true;
    jobsStopping = ctx.jobs.stop(jobsGraceMs(ctx.config));
  });
  // Callback style: an async hook would cost every response a promise and a turn of the microtask queue.
  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  const list = Object.values(modules);
  for (const module of list) if (module.ready) ctx.readiness.set(module.name, module.ready);
  // The app is ready (listens) once every module has started: a new process never answers from an empty search index.
  app.addHook('onReady', async () => {
    await Promise.all([ctx.audit.start(), ...list.map((module) => module.start?.())]);
  });
  app.addHook('onClose', async () => {
    await ctx.audit.stop();
    await (jobsStopping ?? ctx.jobs.stop(jobsGraceMs(ctx.config)));
    for (const module of list) await module.stop?.();
    ctx.outbound.close();
  });

  await registerOpenApi(app, ctx.config.publicUrl);
  for (const module of list) await app.register(module.routes);
  return app;
}
