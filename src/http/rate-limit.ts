/**
 * A rate limit on the routes whose config says `rateLimit: true`: each request takes a token from the
 * caller's bucket in an onRequest hook of the route's own, after authentication, and the answer
 * carries the x-ratelimit-limit, -remaining and -reset headers; a refused request fails with the
 * caller's error (a 429 with Retry-After, the wait for the next token). The buckets are the
 * limiter's (a module's): this layer only asks it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { addRouteHook } from './route-hooks.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Take a token from the caller's bucket before the handler runs (registerRateLimit). */
    rateLimit?: boolean;
  }
}

export interface RateLimitTake {
  /** Burst used after this request; burst + 1 when refused. */
  current: number;
  /** Milliseconds until the next token (refused) or until the bucket is full again (allowed). */
  ttl: number;
}

export interface RateLimiter {
  /** A token from `key`'s bucket: at once, or with a promise (a shared store). */
  take(key: string): RateLimitTake | Promise<RateLimitTake>;
}

export interface RateLimitOptions {
  limiter: RateLimiter;
  /** The bucket size, sent as x-ratelimit-limit. */
  burst: number;
  /** Whose bucket the request takes from (authentication has run). */
  key(request: FastifyRequest): string;
  /** The error of a refused request, given the seconds until the next token (sent as Retry-After). */
  refused(retryAfterSeconds: number): Error;
}

/**
 * Adds the rate-limit hook to each route registered after it whose config has `rateLimit: true`.
 * A route hook rather than an instance hook, so it runs after the app's authentication hook; and a
 * callback-style one, so a request answered by the in-process bucket costs no promise.
 */
export function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): void {
  const { limiter, burst } = options;

  function answer(reply: FastifyReply, { current, ttl }: RateLimitTake): Error | undefined {
    const seconds = Math.ceil(ttl / 1000);
    reply.header('x-ratelimit-limit', burst);
    reply.header('x-ratelimit-remaining', Math.max(0, burst - current));
    reply.header('x-ratelimit-reset', seconds);
    // `current` is how much of the burst is used: more than all of it means no token was left.
    return current > burst ? options.refused(Math.max(1, seconds)) : undefined;
  }

  const hook: onRequestHookHandler = (request, reply, done) => {
    const taken = limiter.take(options.key(request));
    if (taken instanceof Promise) taken.then((result) => done(answer(reply, result)), done);
    else done(answer(reply, taken));
  };

  app.addHook('onRoute', (route) => {
    if (route.config?.rateLimit) addRouteHook(route, 'onRequest', hook);
  });
}
