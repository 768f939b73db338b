/**
 * One line per request at info, when the response is sent: `reqId`, `method`, `url`, `statusCode`,
 * `responseTime` (ms) and `remoteAddress`. Matched routes are logged by their pattern (`/reviews/:token`, not the address that
 * holds the token), without the query string (search terms, patient references); an unmatched
 * request by its path. Fastify's own request logging (a line on arrival and one on completion, each
 * through the redaction) is off.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { createAccessLogger } from '../logger.ts';
import { addRouteHook } from './route-hooks.ts';

const MAX_PATH = 200;

export function registerAccessLog(app: FastifyInstance, logger: Logger): void {
  const access = createAccessLogger(logger);
  const write = (request: FastifyRequest, reply: FastifyReply, url: string) => {
    // Flat fields of plain values: nested objects made pino's serialisation twice as dear.
    access.info({
      reqId: request.id, method: request.method, url, statusCode: reply.statusCode,
      responseTime: Math.round(reply.elapsedTime * 1000) / 1000, remoteAddress: request.ip,
    }, 'request completed');
  };
  app.addHook('onRoute', (route) => {
    const url = route.url;
    addRouteHook(route, 'onResponse', (request, reply, done) => {
      if (access.isLevelEnabled('info')) write(request, reply, url);
      done();
    });
  });
  // Requests no route matched run only the instance's hooks.
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404 && access.isLevelEnabled('info')) write(request, reply, request.url.split('?', 1)[0]!.slice(0, MAX_PATH));
    done();
  });
}
