/**
 * What every response must satisfy (contract section 0): no 5xx, x-request-id and Cache-Control:
 * no-store on every response, no stack trace, and every error in the body of its path's family,
 * checked by shape. The family table is written here from the contract, not taken from src/.
 */

export interface Exchange {
  request: { method: string; url: string; headers: Record<string, string>; payload?: string | Buffer };
  response: { status: number; headers: Record<string, unknown>; body: string };
}

type Family = 'search' | 'appointments' | 'clinics' | 'cases' | 'notifications' | 'standard' | 'auth' | 'profiles';

/** Contract section 0: the error body family of a path prefix. */
export function familyOf(url: string): Family {
  const path = url.split('?')[0]!;
  if (path.startsWith('/medical-db/')) return 'search';
  if (path.startsWith('/dr/')) return 'appointments';
  if (path.startsWith('/cdr/')) return 'clinics';
  if (path.startsWith('/mr/')) return 'cases';
  if (path.startsWith('/connect-auth/')) return 'auth';
  if (path.startsWith('/profiles/')) return 'profiles';
  // Webhook subscriptions live under /notification but answer in the standard family.
  if (path.startsWith('/notification/') && !path.startsWith('/notification/v1/connect/webhook')) return 'notifications';
  return 'standard';
}

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
const keysAre = (value: Record<string, unknown>, keys: string[]) => JSON.stringify(Object.keys(value).sort()) === JSON.stringify([...keys].sort());
const STRING_CODE = /^[A-Z][A-Z_]*$/;
const nonEmptyString = (value: unknown) => typeof value === 'string' && value.length > 0;

/** Why `body` is not `family`'s error body for `status`, or null when it is. */
export function familyBodyProblem(family: Family, status: number, body: unknown): string | null {
  if (!isObject(body)) return 'error body is not a JSON object';
  switch (family) {
    case 'search':
      return keysAre(body, ['error', 'code', 'details']) &&
        nonEmptyString(body.error) &&
        body.code === status &&
        (body.details === null || typeof body.details === 'string')
        ? null
        : 'not {"error": string, "code": <status>, "details": string|null}';
    case 'auth':
      return keysAre(body, ['code', 'error']) && body.code === status && nonEmptyString(body.error)
        ? null
        : 'not {"code": <status>, "error": string}';
    case 'notifications':
      return keysAre(body, ['message', 'error_code']) && body.error_code === status && nonEmptyString(body.message)
        ? null
        : 'not {"message": string, "error_code": <status>}';
    case 'cases':
      return keysAre(body, ['error', 'code']) && nonEmptyString(body.error) && typeof body.code === 'string' && STRING_CODE.test(body.code)
        ? null
        : 'not {"error": string, "code": string}';
    case 'appointments':
    case 'standard':
      return keysAre(body, ['error']) &&
        isObject(body.error) &&
        keysAre(body.error, ['code', 'message']) &&
        typeof body.error.code === 'string' &&
        STRING_CODE.test(body.error.code) &&
        nonEmptyString(body.error.message)
        ? null
        : 'not {"error": {"code": string, "message": string}}';
    case 'profiles':
      return keysAre(body, ['error']) &&
        isObject(body.error) &&
        keysAre(body.error, ['code', 'message']) &&
        typeof body.error.code === 'string' &&
        /^[a-z][a-z_]*$/.test(body.error.code) &&
        nonEmptyString(body.error.message)
        ? null
        : 'not {"error": {"code": lower-case string, "message": string}}';
    case 'clinics':
      if (status === 404)
        return keysAre(body, ['status', 'message']) && body.status === 'error' && nonEmptyString(body.message)
          ? null
          : 'not {"status": "error", "message": string}';
      return Object.keys(body).length > 0 &&
        Object.values(body).every((messages) => Array.isArray(messages) && messages.length > 0 && messages.every(nonEmptyString))
        ? null
        : 'not {"<field>": [string, ...], "message": [string, ...]}';
  }
}

/** Contract section 3: a search without a match answers 404 with empty result lists, not an error body. */
function noMatch(request: Exchange['request'], status: number, body: unknown): boolean {
  return (
    status === 404 &&
    request.method === 'GET' &&
    /^\/medical-db\/v1\/drugs-and-labs\/?(\?|$)/.test(request.url) &&
    isObject(body) &&
    keysAre(body, ['drugs', 'lab_tests']) &&
    Array.isArray(body.drugs) &&
    body.drugs.length === 0 &&
    Array.isArray(body.lab_tests) &&
    body.lab_tests.length === 0
  );
}

const STACK_TRACE = /\n\s+at .+:\d+:\d+|node_modules\//;

/** Every property a response breaks; empty when it keeps them all. */
export function checkResponse(exchange: Exchange, options: { htmlPage: boolean }): string[] {
  const { request, response } = exchange;
  const problems: string[] = [];
  if (response.status >= 500) problems.push(`status ${response.status}`);
  const requestId = response.headers['x-request-id'];
  if (typeof requestId !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(requestId)) problems.push(`x-request-id is ${JSON.stringify(requestId)}`);
  const cacheControl = response.headers['cache-control'];
  // The public key set is meant to be cached by verifiers; everything else holds or may hold patient data.
  const publicKeys = request.url.split('?')[0]!.replace(/\/$/, '') === '/.well-known/jwks.json' && response.status < 300;
  if (cacheControl !== 'no-store' && !publicKeys) problems.push(`cache-control is ${JSON.stringify(cacheControl)}`);
  if (STACK_TRACE.test(response.body)) problems.push('the body holds a stack trace');
  if (response.status >= 400 && request.method !== 'HEAD') {
    const type = String(response.headers['content-type'] ?? '');
    if (options.htmlPage && type.startsWith('text/html')) {
      if (!/<html[\s>]/i.test(response.body)) problems.push('error page is not an HTML document');
    } else if (!type.startsWith('application/json')) {
      problems.push(`error content-type is ${JSON.stringify(type)}`);
    } else {
      let body: unknown;
      try {
        body = JSON.parse(response.body);
      } catch {
        problems.push('error body is not JSON');
      }
      const family = familyOf(request.url);
      const problem = body === undefined || noMatch(request, response.status, body) ? null : familyBodyProblem(family, response.status, body);
      if (problem) problems.push(`error body is ${problem} (${family} family)`);
    }
  }
  return problems;
}

const LIMIT = 1500;
const HEADER_LIMIT = 100;

function shorten(text: string, limit = LIMIT): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}... (${text.length} characters)`;
}

/** The request and response, as a failure message shows them. */
export function describeExchange({ request, response }: Exchange): string {
  const payload =
    request.payload === undefined
      ? '(none)'
      : typeof request.payload === 'string'
        ? JSON.stringify(shorten(request.payload))
        : `bytes ${request.payload.toString('hex').slice(0, LIMIT)}`;
  const headers = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, shorten(value, HEADER_LIMIT)]));
  return [
    `request: ${request.method} ${shorten(request.url)}`,
    `  headers: ${JSON.stringify(headers)}`,
    `  body: ${payload}`,
    `response: ${response.status}`,
    `  headers: ${JSON.stringify(response.headers)}`,
    `  body: ${shorten(response.body)}`,
  ].join('\n');
}
