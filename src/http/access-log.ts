/**
 * One line per request at info, when the response is sent: `reqId`, `method`, `url`, `statusCode`,
 * `responseTime` (ms) and `remoteAddress`. A matched route is logged by its pattern
 * (`/reviews/:token`, not the address that holds the token) and never with the query string (search
 * terms, patient references); an unmatched request by its path with every segment that is not a plain
 * lower-case word shown as `*` (a token or an id in a mistyped address). Fastify's own lines for each
 * request (on arrival, on completion, for an unknown route, each through the redaction) are off; its
 * lines for errors stay (AccessLogController).
 */
import { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { createAccessLogger, maskedPath } from '../logger.ts';
import { observeResponses } from './route-hooks.ts';

/** Fastify's request-lifecycle logging without the per-request lines this module writes instead. */
export class AccessLogController extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    // 'request errored' (a failure while sending) stays.
    if (error) super.requestCompleted(error, request, reply, metadata);
  }

  override routeNotFound(): void {}
}

export function registerAccessLog(app: FastifyInstance, logger: Logger): void {
  const access = createAccessLogger(logger);
  const write = (request: FastifyRequest, reply: FastifyReply, url: string) => {
    // Flat fields of plain values: nested objects made pino's serialisation twice as dear.
    access.info(
      {
        reqId: request.id,
        method: request.method,
        url,
        statusCode: reply.statusCode,
        responseTime: Math.round(reply.elapsedTime * 1000) / 1000,
        remoteAddress: request.ip,
      },
      'request completed',
    );
  };
  observeResponses(
    app,
    (url) => (request, reply) => {
      if (access.isLevelEnabled('info')) write(request, reply, url);
    },
    (request, reply) => {
      if (access.isLevelEnabled('info')) write(request, reply, maskedPath(request.url));
    },
  );
}
