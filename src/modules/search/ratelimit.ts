/**
 * Search rate limit (contract section 3): a token bucket per API client, refilled at
 * CPS_SEARCH_RATE_LIMIT tokens/s up to CPS_SEARCH_RATE_BURST. The route takes a token through the
 * HTTP layer's rate-limit hook (src/http/rate-limit.ts), which answers with the headers and the 429.
 *
 * The buckets are the house's token buckets (src/security/buckets.ts): with CPS_REDIS_URL in Redis,
 * shared by every process, with a fall-back to the process's own bucket if Redis fails.
 */
import type { Logger } from 'pino';
import { createBuckets, type BucketLimit, type BucketsTake } from '../../security/buckets.ts';

export interface TakeResult {
  /** Burst used after this request; burst + 1 when refused. */
  current: number;
  /** Milliseconds until the next token (refused) or until the bucket is full again (allowed). */
  ttl: number;
}

export interface SearchRateLimiter {
  /** The in-process bucket answers at once; Redis with a promise. */
  take(key: string): TakeResult | Promise<TakeResult>;
  /** Resolves once Redis is connected (at once without Redis), or after `timeoutMs`. */
  connected(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** `now` is the in-process bucket's clock (tests move it); Redis keeps its own time. */
export function createSearchRateLimiter(options: {
  rate: number;
  burst: number;
  redisUrl: string | null;
  logger: Logger;
  now?: () => number;
}): SearchRateLimiter {
  const { rate, burst } = options;
  const buckets = createBuckets({ redisUrl: options.redisUrl, logger: options.logger, what: 'search rate limit', now: options.now });
  const limitOf = (key: string): BucketLimit[] => [{ key: `cps:search:bucket:${key}`, rate, burst }];
  const result = ({ waitMs, refusedBy, left }: BucketsTake): TakeResult =>
    refusedBy >= 0 ? { current: burst + 1, ttl: waitMs } : { current: burst - Math.floor(left), ttl: Math.ceil(((burst - left) * 1000) / rate) };
  return {
    take(key) {
      const taken = buckets.take(limitOf(key));
      return taken instanceof Promise ? taken.then(result) : result(taken);
    },
    connected: (timeoutMs = 10_000) => buckets.connected(timeoutMs),
    close: () => buckets.close(),
  };
}
