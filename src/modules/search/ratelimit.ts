/**
 * Search rate limit (contract section 3): a token bucket per API client, refilled at
 * CPS_SEARCH_RATE_LIMIT tokens/s up to CPS_SEARCH_RATE_BURST. The route takes a token through the
 * HTTP layer's rate-limit hook (src/http/rate-limit.ts), which answers with the headers and the 429.
 *
 * With CPS_REDIS_URL the bucket lives in Redis and one Lua script refills and takes atomically, so
 * every process shares it. If Redis fails the process falls back to its own bucket rather than
 * refusing or letting everything through.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { connectRedis, whenConnected } from '../../security/buckets.ts';

export interface TakeResult {
  /** Burst used after this request; burst + 1 when refused. */
  current: number;
  /** Milliseconds until the next token (refused) or until the bucket is full again (allowed). */
  ttl: number;
}

export class MemoryTokenBucket {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly rate: number;
  private readonly burst: number;

  constructor(rate: number, burst: number) {
    this.rate = rate;
    this.burst = burst;
  }

  private sweptAt = 0;

  take(key: string, now = Date.now()): TakeResult {
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) * this.rate) / 1000);
    bucket.at = now;
    // At most one sweep a second: with many active clients a sweep frees little, and must not run per request.
    if (this.buckets.size > 10_000 && now - this.sweptAt > 1000) this.sweep(now);
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { current: this.burst - Math.floor(bucket.tokens), ttl: Math.ceil(((this.burst - bucket.tokens) * 1000) / this.rate) };
    }
    return { current: this.burst + 1, ttl: Math.max(1, Math.ceil(((1 - bucket.tokens) * 1000) / this.rate)) };
  }

  /** Forgets buckets that have refilled: they hold nothing a fresh bucket would not. */
  private sweep(now: number): void {
    this.sweptAt = now;
    for (const [key, bucket] of this.buckets) {
      if (bucket.tokens + ((now - bucket.at) * this.rate) / 1000 >= this.burst) this.buckets.delete(key);
    }
  }
}

// KEYS[1] bucket; ARGV rate (tokens/s), burst. Redis time, so processes with skewed clocks agree.
const TOKEN_BUCKET_LUA = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local current
local ttl
if tokens >= 1 then
  tokens = tokens - 1
  current = burst - math.floor(tokens)
  ttl = math.ceil((burst - tokens) * 1000 / rate)
else
  current = burst + 1
  ttl = math.max(1, math.ceil((1 - tokens) * 1000 / rate))
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {current, ttl}
`;

type RedisWithBucket = Redis & { cpsTokenBucket(key: string, rate: number, burst: number): Promise<[number, number]> };

export interface SearchRateLimiter {
  /** The in-process bucket answers at once; Redis with a promise. */
  take(key: string): TakeResult | Promise<TakeResult>;
  /** Resolves once Redis is connected (at once without Redis), or after `timeoutMs`. */
  connected(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export function createSearchRateLimiter(options: { rate: number; burst: number; redisUrl: string | null; logger: Logger }): SearchRateLimiter {
  const memory = new MemoryTokenBucket(options.rate, options.burst);
  if (!options.redisUrl) {
    return { take: (key) => memory.take(key), connected: async () => {}, close: async () => {} };
  }
  const redis = connectRedis(options.redisUrl, options.logger, 'search rate limit') as RedisWithBucket;
  redis.defineCommand('cpsTokenBucket', { numberOfKeys: 1, lua: TOKEN_BUCKET_LUA });
  return {
    async take(key) {
      try {
        const [current, ttl] = await redis.cpsTokenBucket(`cps:search:bucket:${key}`, options.rate, options.burst);
        return { current: Number(current), ttl: Number(ttl) };
      } catch {
        return memory.take(key);
      }
    },
    connected: (timeoutMs = 10_000) => whenConnected(redis, timeoutMs),
    async close() {
      redis.disconnect();
    },
  };
}
