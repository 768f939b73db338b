/**
 * The Idempotency-Key header on the routes whose config says `idempotent: true`. A preHandler claims
 * the key for the caller's business (or replays the response stored for it, or refuses the request),
 * and an onSend hook stores the response of the request that claimed it. The keys are a store's (the
 * idempotency module's): this layer decides what a request is and which responses are kept.
 *
 * - The request is its method, path and query, the headers its route declares (X-Pt-Id) and its body
 *   (keys sorted), hashed: the same key with another request is 422.
 * - Responses below 400 are stored; 4xx and 5xx are not (the key is freed, a retry runs again), so a
 *   refused request stores nothing, as without the header.
 * - A request without the header runs as it would on a route without this hook.
 */
import { createHash, type Hash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler, preHandlerHookHandler } from 'fastify';
import { AppError } from '../errors.ts';
import { principalOf } from './auth.ts';
import { addRouteHook } from './route-hooks.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Accept an Idempotency-Key header (registerIdempotency); the route must be a business's. */
    idempotent?: boolean;
  }
}

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';

/** 1 to 255 printable ASCII characters (Node trims the spaces around a header's value). */
const KEY_FORMAT = /^[\x20-\x7e]{1,255}$/;
const KEY_FORMAT_MESSAGE = 'must be 1 to 255 printable ASCII characters';

export interface StoredResponse {
  status: number;
  contentType: string | null;
  body: string;
}

export type IdempotencyBegun<C> =
  | { outcome: 'claimed'; claim: C }
  | { outcome: 'replay'; response: StoredResponse }
  | { outcome: 'mismatch' }
  | { outcome: 'busy' };

export interface IdempotencyStore<C> {
  begin(businessId: string, key: string, fingerprint: string): Promise<IdempotencyBegun<C>>;
  complete(claim: C, response: StoredResponse): Promise<boolean>;
  release(claim: C): Promise<void>;
}

/** The header as /openapi.json shows it on an idempotent route. */
const HEADER_DOC = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x20-\\x7e]+$',
  description:
    'Optional. A retry with the same key and the same request gets the first response again (with Idempotent-Replayed: true) ' +
    'without doing the work twice; the same key with another request is 422. Kept 24 hours per business.',
};

/** A route's schema with the Idempotency-Key header added to its headers, for the OpenAPI document. */
export function documentIdempotencyKey(schema: Record<string, unknown>): Record<string, unknown> {
  const headers = (schema.headers ?? { type: 'object' }) as { properties?: Record<string, unknown> };
  return { ...schema, headers: { ...headers, type: 'object', properties: { ...headers.properties, [IDEMPOTENCY_KEY_HEADER]: HEADER_DOC } } };
}

/**
 * Feeds `hash` the JSON of `root` with every object's keys sorted, so that two encodings of one body
 * hash alike. Iterative: a body nested thousands deep must not overflow the stack.
 */
function hashJson(hash: Hash, root: unknown): void {
  // [true, text]: written as is; [false, value]: a value still to write.
  const stack: Array<[boolean, unknown]> = [[false, root]];
  while (stack.length > 0) {
    const [raw, item] = stack.pop()!;
    if (raw) {
      hash.update(item as string);
    } else if (Array.isArray(item)) {
      hash.update('[');
      stack.push([true, ']']);
      for (let i = item.length - 1; i >= 0; i--) stack.push([true, ','], [false, item[i]]);
    } else if (item !== null && typeof item === 'object') {
      hash.update('{');
      stack.push([true, '}']);
      const keys = Object.keys(item).sort();
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push([true, ','], [false, (item as Record<string, unknown>)[keys[i]!]], [true, `${JSON.stringify(keys[i])}:`]);
      }
    } else {
      hash.update(JSON.stringify(item) ?? 'null');
    }
  }
}

function fingerprintOf(request: FastifyRequest, headerNames: readonly string[]): string {
  const hash = createHash('sha256').update(`${request.method} ${request.url}\n`);
  for (const name of headerNames) hash.update(`${name}: ${JSON.stringify(request.headers[name] ?? null)}\n`);
  hashJson(hash, request.body);
  return hash.digest('base64url');
}

/** The lower-case names of the headers a route's schema declares. */
function declaredHeaders(schema: unknown): string[] {
  const properties = (schema as { properties?: Record<string, unknown> } | undefined)?.properties;
  return properties
    ? Object.keys(properties)
        .map((name) => name.toLowerCase())
        .sort()
    : [];
}

/** Only these responses are stored: anything else frees the key for a retry. */
function storable(reply: FastifyReply, payload: unknown): payload is string | null | undefined {
  return reply.statusCode < 400 && (typeof payload === 'string' || payload === null || payload === undefined);
}

/**
 * Adds the hook pair to each route registered after it whose config has `idempotent: true`.
 * `store` claims, completes and releases keys across processes.
 */
export function registerIdempotency<C>(app: FastifyInstance, store: IdempotencyStore<C>): void {
  const claims = new WeakMap<FastifyRequest, C>();

  const onSend: onSendHookHandler = async (request, reply, payload) => {
    const claim = claims.get(request);
    if (claim === undefined) return payload;
    claims.delete(request);
    try {
      if (storable(reply, payload)) {
        const contentType = reply.getHeader('content-type');
        await store.complete(claim, {
          status: reply.statusCode,
          contentType: contentType === undefined ? null : String(contentType),
          body: payload ?? '',
        });
      } else {
        await store.release(claim);
      }
    } catch (error) {
      // The response stands; a retry finds the key running until its lease ends, then runs again.
      request.log.warn({ err: error }, 'idempotency: the outcome of a keyed request could not be recorded');
    }
    return payload;
  };

  app.addHook('onRoute', (route) => {
    if (!route.config?.idempotent) return;
    const auth = route.config.auth;
    if (auth === undefined || auth === 'public' || auth === 'admin') {
      throw new Error(`route ${route.method} ${route.url} is idempotent, so it must be a business's (config.auth with scopes)`);
    }
    const headerNames = declaredHeaders(route.schema?.headers);
    const preHandler: preHandlerHookHandler = async (request, reply) => {
      const key = request.headers[IDEMPOTENCY_KEY_HEADER];
      if (key === undefined) return;
      if (typeof key !== 'string' || !KEY_FORMAT.test(key)) {
        throw new AppError(400, `Idempotency-Key ${KEY_FORMAT_MESSAGE}`, { fields: { 'Idempotency-Key': [KEY_FORMAT_MESSAGE] } });
      }
      const begun = await store.begin(principalOf(request).businessId, key, fingerprintOf(request, headerNames));
      switch (begun.outcome) {
        case 'claimed':
          claims.set(request, begun.claim);
          return;
        case 'replay': {
          const { status, contentType, body } = begun.response;
          if (contentType !== null) reply.header('content-type', contentType);
          reply.header(REPLAYED_HEADER, 'true').code(status).send(body);
          return reply;
        }
        case 'mismatch':
          throw new AppError(422, 'This Idempotency-Key was used with a different request; send a new key for a new request.', {
            code: 'IDEMPOTENCY_KEY_REUSED',
          });
        case 'busy':
          throw new AppError(409, 'A request with this Idempotency-Key is still running; retry shortly.', {
            code: 'IDEMPOTENCY_KEY_IN_USE',
            headers: { 'retry-after': '1' },
          });
      }
    };
    addRouteHook(route, 'preHandler', preHandler);
    addRouteHook(route, 'onSend', onSend);
  });
}
