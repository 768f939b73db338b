/**
 * Errors raised before any route runs, answered in the family body of the path with x-request-id and
 * Cache-Control: no-store like every other response. Fastify's router errors (bad percent-encoding,
 * over-long path parameters) come through `frameworkErrors`; what Node's HTTP parser refuses (request
 * heads over the header size limit, unknown methods, bad Content-Length or chunking, head timeouts)
 * comes through `clientErrorHandler`, which writes to the socket itself since no request exists yet;
 * CONNECT, which Node hands to its own event, is refused the same way.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Problem } from '../errors.ts';
import { familyForPath, renderProblem, type ErrorFamily } from './errors.ts';
import { sendProblem } from './errors-plugin.ts';

/** The router's errors; anything else it may raise (an async constraint failing) is a 500 like any other. */
export function frameworkProblem(error: FastifyError, request: FastifyRequest, maxParamLength: number): Problem {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return { status: 400, message: 'The URL path is not validly percent-encoded.' };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { status: 414, message: `A path parameter is longer than ${maxParamLength} characters.` };
    default:
      return { status: 500, message: `Internal server error. Request id: ${request.id}` };
  }
}

export function frameworkErrorHandler(maxParamLength: number) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const problem = frameworkProblem(error, request, maxParamLength);
    if (problem.status >= 500) request.log.error({ err: error }, 'request failed before routing');
    // The onSend hook adds these too when it runs; set here so they never depend on it.
    reply.header('x-request-id', request.id).header('cache-control', 'no-store');
    void sendProblem(reply, familyForPath(request.url), problem);
  };
}

/** Node's parser errors (llhttp codes) as what the client did wrong. */
export function clientErrorProblem(code: string | undefined): Problem {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: `The request line and headers are larger than ${http.maxHeaderSize} bytes.` };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: 'The request was not received in time.' };
    case 'HPE_INVALID_METHOD':
      return { status: 400, message: 'The HTTP method is unknown.' };
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return { status: 400, message: 'The Content-Length header is invalid.' };
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_INVALID_CHUNK_SIZE':
      return { status: 400, message: 'The chunked request body is malformed.' };
    default:
      return { status: 400, message: 'The request is not valid HTTP/1.1.' };
  }
}

/** The path of the request line at the start of what the parser was reading, if it is there. */
export function pathOfRawRequest(raw: unknown): string {
  if (!Buffer.isBuffer(raw)) return '/';
  const head = raw.subarray(0, 8192).toString('latin1');
  const match = /^[A-Za-z-]+ +(\S+)/.exec(head);
  if (!match) return '/';
  const target = match[1]!;
  // Absolute form (http://host/path): the family comes from the path.
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(target)) {
    const slash = target.indexOf('/', target.indexOf('//') + 2);
    return slash === -1 ? '/' : target.slice(slash);
  }
  return target;
}

/** A whole response written to a socket that has no request object, and the socket closed. */
function answerOnSocket(socket: Duplex, family: ErrorFamily, problem: Problem, requestId: string, error?: Error): void {
  // A response already under way on this connection cannot be followed by another one.
  const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const body = JSON.stringify(renderProblem(family, problem));
    socket.write(
      `HTTP/1.1 ${problem.status} ${http.STATUS_CODES[problem.status] ?? 'Error'}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `x-request-id: ${requestId}\r\n` +
        'Cache-Control: no-store\r\n' +
        'Connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy(error);
}

/**
 * Fastify's clientErrorHandler. The family comes from the request line in the data the parser failed
 * on; when that line came in an earlier packet (a head split across reads), the standard family.
 */
export function clientErrorHandler(nextRequestId: () => string) {
  // Fastify calls it with the instance as `this`.
  return function onClientError(this: { log: FastifyBaseLogger }, error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
    // A reset connection is gone: nothing to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const problem = clientErrorProblem(error.code);
    const requestId = nextRequestId();
    this.log.debug({ err: error, reqId: requestId, status: problem.status }, 'client error before routing');
    answerOnSocket(socket, familyForPath(pathOfRawRequest(error.rawPacket)), problem, requestId, error);
  };
}

/** CONNECT never reaches Fastify (Node emits 'connect'); without a listener Node would drop the socket unanswered. */
export function refuseConnect(server: http.Server, nextRequestId: () => string): void {
  server.on('connect', (request: http.IncomingMessage, socket: Duplex) => {
    answerOnSocket(socket, familyForPath(request.url ?? '/'), { status: 405, message: 'The CONNECT method is not supported.' }, nextRequestId());
  });
}
