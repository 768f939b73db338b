/**
 * Token buckets shared by several keys at once: a take succeeds only if every bucket named holds a
 * token, and then takes one from each; a refund puts one back (never above the burst). The login
 * failure budgets use them (per client id and per source address), the admin token's and the webhook
 * replays' budgets, and the search rate limit (one bucket per API client, whose headers read `left`).
 *
 * With a Redis URL the buckets live in Redis and one Lua script checks and takes atomically, so every
 * process shares them. If Redis fails the process falls back to its own buckets rather than refusing
 * or letting everything through.
 */
import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

// ioredis (CommonJS) is loaded by the first connection: a process without CPS_REDIS_URL never holds it.
const require = createRequire(import.meta.url);

export interface BucketLimit {
  key: string;
  /** Tokens added per second. */
  rate: number;
  burst: number;
}

export interface BucketsTake {
  /** 0 when taken; else milliseconds until every named bucket holds a token again. */
  waitMs: number;
  /** The first bucket that had no token (its index in the limits), or -1. */
  refusedBy: number;
  /** The fewest tokens a named bucket holds after the take (before it, when refused): a fraction while refilling. */
  left: number;
}

/** A Redis connection for a limiter: fails fast, queues nothing offline, warns at most once a minute. */
export function connectRedis(url: string, logger: Logger, what: string): Redis {
  const { Redis: RedisClient } = require('ioredis') as typeof import('ioredis');
  const redis = new RedisClient(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000 });
  let lastWarning = 0;
  redis.on('error', (error: Error) => {
    if (Date.now() - lastWarning > 60_000) {
      lastWarning = Date.now();
      logger.warn({ err: { message: error.message } }, `${what}: Redis unavailable, using the in-process bucket`);
    }
  });
  return redis;
}

/** Resolves once `redis` is connected, or after `timeoutMs` (a limiter uses its in-process bucket until then). */
export function whenConnected(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, timeoutMs);
    function done() {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    }
    redis.once('ready', done);
  });
}

/** A Unix socket listener gives no source address: all its callers share this budget. */
const NO_ADDRESS = 'local';

/**
 * The budget key of a source address: IPv4 as it is, IPv4-mapped IPv6 as its IPv4, other IPv6 by
 * its /64, since one host usually holds a whole /64 and could otherwise rotate through it.
 */
export function addressKey(address: string | undefined): string {
  if (address === undefined || address === '') return NO_ADDRESS;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail = ''] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = address.includes('::') && tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right] : left;
  return `${groups
    .slice(0, 4)
    .map((g) => (parseInt(g, 16) || 0).toString(16))
    .join(':')}::/64`;
}

/** Buckets idle long enough to be full again are forgotten once there are this many. */
const SWEEP_ABOVE = 10_000;

export class MemoryBuckets {
  readonly #buckets = new Map<string, { tokens: number; at: number; rate: number; burst: number }>();
  #sweptAt = 0;

  #refill(limit: BucketLimit, now: number) {
    const bucket = this.#buckets.get(limit.key);
    if (!bucket) return { tokens: limit.burst, at: now, rate: limit.rate, burst: limit.burst };
    bucket.tokens = Math.min(limit.burst, bucket.tokens + (Math.max(0, now - bucket.at) * limit.rate) / 1000);
    bucket.at = now;
    return bucket;
  }

  take(limits: readonly BucketLimit[], now: number): BucketsTake {
    const buckets = limits.map((limit) => this.#refill(limit, now));
    let waitMs = 0;
    let refusedBy = -1;
    buckets.forEach((bucket, i) => {
      if (bucket.tokens >= 1) return;
      if (refusedBy < 0) refusedBy = i;
      waitMs = Math.max(waitMs, Math.max(1, Math.ceil(((1 - bucket.tokens) * 1000) / limits[i]!.rate)));
    });
    if (refusedBy >= 0) return { waitMs, refusedBy, left: Math.min(...buckets.map((bucket) => bucket.tokens)) };
    // At most one sweep a second: with many active clients a sweep frees little, and must not run per take.
    if (this.#buckets.size > SWEEP_ABOVE && now - this.#sweptAt > 1000) this.#sweep(now);
    buckets.forEach((bucket, i) => {
      bucket.tokens -= 1;
      this.#buckets.set(limits[i]!.key, bucket);
    });
    return { waitMs: 0, refusedBy: -1, left: Math.min(...buckets.map((bucket) => bucket.tokens)) };
  }

  refund(limits: readonly BucketLimit[], now: number): void {
    for (const limit of limits) {
      const bucket = this.#buckets.get(limit.key);
      if (!bucket) continue;
      this.#refill(limit, now);
      bucket.tokens = Math.min(limit.burst, bucket.tokens + 1);
    }
  }

  get size(): number {
    return this.#buckets.size;
  }

  /** Forgets buckets that have refilled: they hold nothing a fresh bucket would not. At most once a second. */
  #sweep(now: number): void {
    this.#sweptAt = now;
    for (const [key, bucket] of this.#buckets) {
      if (bucket.tokens + ((now - bucket.at) * bucket.rate) / 1000 >= bucket.burst) this.#buckets.delete(key);
    }
  }
}

// KEYS: the buckets; ARGV: cost (1 takes, -1 refunds), then rate and burst of each key. Redis time,
// so processes with skewed clocks agree. Returns {wait ms, 1-based index of the first empty bucket,
// the fewest tokens left as a string} (a Lua number would reach the caller truncated to an integer;
// %.17g gives the double back exactly).
const BUCKETS_LUA = `
local cost = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tokens = {}
local wait = 0
local refused = 0
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[i * 2])
  local burst = tonumber(ARGV[i * 2 + 1])
  local state = redis.call('HMGET', key, 'tokens', 'at')
  local tk = tonumber(state[1])
  local at = tonumber(state[2])
  if tk == nil or at == nil then
    tk = burst
    at = now
  end
  tk = math.min(burst, tk + math.max(0, now - at) * rate / 1000)
  tokens[i] = tk
  if cost > 0 and tk < cost then
    if refused == 0 then refused = i end
    wait = math.max(wait, math.max(1, math.ceil((cost - tk) * 1000 / rate)))
  end
end
local left = math.huge
if refused > 0 then
  for i = 1, #tokens do left = math.min(left, tokens[i]) end
  return {wait, refused, string.format('%.17g', left)}
end
for i, key in ipairs(KEYS) do
  local rate = tonumber(ARGV[i * 2])
  local burst = tonumber(ARGV[i * 2 + 1])
  local tk = math.min(burst, tokens[i] - cost)
  left = math.min(left, tk)
  if tk >= burst then
    redis.call('DEL', key)
  else
    redis.call('HSET', key, 'tokens', tostring(tk), 'at', tostring(now))
    redis.call('PEXPIRE', key, math.ceil((burst - tk) * 1000 / rate) + 1000)
  end
end
return {0, 0, string.format('%.17g', left)}
`;

type RedisWithBuckets = Redis & { cpsBuckets(...args: Array<string | number>): Promise<[number, number, string]> };

export interface Buckets {
  /** The in-process buckets answer at once; Redis with a promise. */
  take(limits: readonly BucketLimit[]): BucketsTake | Promise<BucketsTake>;
  refund(limits: readonly BucketLimit[]): void | Promise<void>;
  /** Resolves once Redis is connected (at once without Redis), or after `timeoutMs`; until then takes use the in-process buckets. */
  connected(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/** `now` is the in-process buckets' clock (tests move it); Redis keeps its own time. */
export function createBuckets(options: { redisUrl: string | null; logger: Logger; what: string; now?: () => number }): Buckets {
  const now = options.now ?? Date.now;
  const memory = new MemoryBuckets();
  if (!options.redisUrl) {
    return {
      take: (limits) => memory.take(limits, now()),
      refund: (limits) => memory.refund(limits, now()),
      connected: async () => {},
      close: async () => {},
    };
  }
  const redis = connectRedis(options.redisUrl, options.logger, options.what) as RedisWithBuckets;
  redis.defineCommand('cpsBuckets', { lua: BUCKETS_LUA });
  const run = (limits: readonly BucketLimit[], cost: number) =>
    redis.cpsBuckets(limits.length, ...limits.map((l) => l.key), cost, ...limits.flatMap((l) => [l.rate, l.burst]));
  return {
    async take(limits) {
      try {
        const [waitMs, refused, left] = await run(limits, 1);
        return { waitMs: Number(waitMs), refusedBy: Number(refused) - 1, left: Number(left) };
      } catch {
        return memory.take(limits, now());
      }
    },
    async refund(limits) {
      try {
        await run(limits, -1);
      } catch {
        memory.refund(limits, now());
      }
    },
    connected: (timeoutMs) => whenConnected(redis, timeoutMs),
    async close() {
      redis.disconnect();
    },
  };
}
