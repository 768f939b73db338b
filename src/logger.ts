/** JSON logs (pino) that never carry tokens, secrets, private keys or patients' contact details. */
import pino, { type Logger } from 'pino';

export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.auth',
  'req.headers.cookie',
  'req.headers["x-pt-id"]',
  'headers.authorization',
  'headers.auth',
  '*.authorization',
  '*.auth',
  '*.client_secret',
  '*.refresh_token',
  '*.access_token',
  '*.private_key',
  '*.sa_key',
  '*.mobile',
  '*.email',
  '*.signing_key',
  '*.password',
  '*.token',
  'client_secret',
  'refresh_token',
  'access_token',
  'private_key',
  'sa_key',
  'mobile',
  'email',
  'signing_key',
  '*.patient_details.mobile',
  '*.*.mobile',
  '*.*.private_key',
];

/**
 * pino's isoTime, formatted once per millisecond: a Date and its ISO string per line were a tenth of
 * the cost of a request's log line.
 */
let stampedAt = -1;
let stamp = '';
function isoTime(): string {
  const now = Date.now();
  if (now !== stampedAt) {
    stampedAt = now;
    stamp = `,"time":"${new Date(now).toISOString()}"`;
  }
  return stamp;
}

const FORMAT = { base: { service: 'opencps' }, timestamp: isoTime };

const MAX_PATH = 200;
const WORD = /^[a-z][a-z0-9.-]{0,39}$/;

/** An unmatched request's path as logged: its words kept, anything else (a token, an id) masked; never the query. */
export function maskedPath(url: string): string {
  const path = url.split('?', 1)[0]!.slice(0, MAX_PATH);
  return path
    .split('/')
    .map((segment) => (segment === '' || WORD.test(segment) ? segment : '*'))
    .join('/');
}

interface LoggedRequest {
  id?: string;
  method?: string;
  url?: string;
  routeOptions?: { url?: string };
}

/**
 * A request as any line shows it (Fastify's error lines among them): its route's pattern, else its
 * masked path. Its address would carry what a query or a path holds: a download link's token, a
 * patient's reference, search terms.
 */
function loggedRequest(request: LoggedRequest): Record<string, unknown> {
  return { id: request.id, method: request.method, url: request.routeOptions?.url ?? maskedPath(request.url ?? '') };
}

/**
 * The request's address in Fastify's "Reply was already sent" warnings, `in "<address>" (GET)?` or
 * `in the "<address>" (GET) route?`: all of the line up to its last `" (`, since an address may hold a
 * quote or be in absolute form (`http://host/path?query`). It is left out whole: the line's request
 * id leads to the request's own line, which names its route.
 */
const QUOTED_ADDRESS = /( in (?:the )?")(.*)(" \([A-Z]+\)(?: route)?\?)$/m;
const ALREADY_SENT = 'Reply was already sent';

function withAddressesMasked(text: string): string {
  return text.replace(QUOTED_ADDRESS, (_line, before: string, _address: string, after: string) => `${before}*${after}`);
}

/** Fastify's warning of a second reply, its message and stack without the request's address. */
function maskedWarning(error: Error & { code?: string; statusCode?: number }): Error {
  const masked = Object.assign(new Error(withAddressesMasked(error.message)), { code: error.code, statusCode: error.statusCode });
  masked.name = error.name;
  masked.stack = withAddressesMasked(error.stack ?? '');
  return masked;
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      serializers: { req: loggedRequest },
      hooks: {
        // Fastify warns of a second reply with the request's raw address in the message, as a string
        // or as the message of an error (which pino also takes as the line's message).
        logMethod(args, write) {
          const [first] = args as unknown[];
          const error = (first as { err?: Error & { code?: string } } | null)?.err;
          if (typeof first === 'string' && first.startsWith(ALREADY_SENT)) args[0] = withAddressesMasked(first);
          else if (error?.code === 'FST_ERR_REP_ALREADY_SENT') args[0] = { ...(first as object), err: maskedWarning(error) };
          write.apply(this, args as Parameters<typeof write>);
        },
      },
      ...FORMAT,
    },
    destination,
  );
}

/**
 * The request log's logger: the same level, format and output as `logger`, without the redaction.
 * Its lines hold only fields the access log puts there (method, route, status, time, request id);
 * running the wildcard redaction over each of them was most of the cost of logging at info.
 */
export function createAccessLogger(logger: Logger): Logger {
  return pino({ level: logger.level, ...FORMAT }, (logger as unknown as Record<symbol, pino.DestinationStream>)[pino.symbols.streamSym]);
}
