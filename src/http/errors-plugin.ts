/**
 * The one place where failures become responses: validation, parsing (malformed JSON 400, 413, 415),
 * auth, not found, AppError and unexpected errors, each rendered in the route's family body.
 * A 500 shows only the request id; the cause goes to the log.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DATABASE_RETRY_AFTER_SECONDS, errorLogFields, isDatabaseUnavailable, logLevelFor } from '../db/unavailable.ts';
import { AppError, type Problem } from '../errors.ts';
import { familyForPath, renderProblem, validationProblem, type ErrorFamily } from './errors.ts';

function familyOf(request: FastifyRequest): ErrorFamily {
  return request.routeOptions.config?.family ?? familyForPath(request.url);
}

/** The database is unreachable, failing over, full or locked: the client may retry. */
const DATABASE_UNAVAILABLE: Problem = {
  status: 503,
  code: 'SERVICE_UNAVAILABLE',
  message: 'The service is temporarily unavailable; retry shortly.',
  headers: { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
};

export function problemFromError(error: unknown, request: FastifyRequest): Problem {
  if (error instanceof AppError) return error.problem;
  if (isDatabaseUnavailable(error)) return DATABASE_UNAVAILABLE;
  const e = error as FastifyError;
  if (e.validation) return validationProblem(e);
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, message: 'The request body is larger than 1 MiB.' };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, message: 'The request body does not match its Content-Length.' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, message: `Unsupported content type ${JSON.stringify(request.headers['content-type'] ?? '')}; send application/json.` };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { status: 400, message: 'The request body is not valid JSON.' };
  }
  if (e instanceof SyntaxError || (e.statusCode === 400 && /JSON/i.test(e.message))) {
    return { status: 400, message: 'The request body is not valid JSON.' };
  }
  if (typeof e.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    return { status: e.statusCode, message: e.message };
  }
  return { status: 500, message: `Internal server error. Request id: ${request.id}` };
}

export function sendProblem(reply: FastifyReply, family: ErrorFamily, problem: Problem): FastifyReply {
  if (problem.headers) reply.headers(problem.headers);
  return reply.code(problem.status).type('application/json; charset=utf-8').send(renderProblem(family, problem));
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const problem = problemFromError(error, request);
    // An outage is the operator's to see once per request, not a defect with a stack.
    if (problem.status >= 500) {
      request.log[logLevelFor(error)](
        errorLogFields(error),
        problem === DATABASE_UNAVAILABLE ? 'database unavailable; answered 503' : 'request failed',
      );
    }
    return sendProblem(reply, familyOf(request), problem);
  });

  app.setNotFoundHandler((request, reply) => {
    const family = familyForPath(request.url);
    const message = family === 'clinics' ? 'Not found' : `No route for ${request.method} ${request.url.split('?')[0]}`;
    return sendProblem(reply, family, { status: 404, message, code: 'NOT_FOUND' });
  });
}
