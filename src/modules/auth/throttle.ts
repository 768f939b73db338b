/**
 * Login throttling. Each attempt takes a token from two failure budgets, its client id's and its
 * source address's, before any secret is hashed; a success gives both back, so only failures spend
 * them. A budget is a token bucket: `failures` tokens, refilled evenly over the window, so after a
 * burst of failures one more attempt is allowed every window/failures seconds, and an idle budget is
 * whole again one window later. An attempt refused by one budget takes from neither: a flood aimed at
 * one client id does not spend its address's budget, so other clients behind the same address (a NAT)
 * still log in; spraying many client ids from one address does spend it.
 *
 * The hashing itself is bounded too: at most `hashConcurrency` verifications run at once, `hashQueue`
 * more wait, and any beyond that are refused at once with 503, so a flood that passes the budgets
 * (many addresses and client ids) delays a real login by at most the queue, never without bound.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { AppError } from '../../errors.ts';
import { createBuckets, type BucketLimit, type Buckets } from '../../security/buckets.ts';

export interface LoginGuardOptions {
  clientFailures: number;
  addressFailures: number;
  windowSeconds: number;
  hashConcurrency: number;
  hashQueue: number;
  redisUrl: string | null;
  logger: Logger;
  metrics?: Registry;
}

/** An admitted attempt: the budgets it took from, given back if it succeeds. */
export type Admission = readonly BucketLimit[];

/**
 * The budget key of a source address: IPv4 as it is, IPv4-mapped IPv6 as its IPv4, other IPv6 by
 * its /64, since one host usually holds a whole /64 and could otherwise rotate through it.
 */
export function addressKey(address: string): string {
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

export class LoginGuard {
  /** The in-process budgets' clock (Redis keeps its own time); tests move it. */
  now: () => number = Date.now;
  readonly #options: LoginGuardOptions;
  readonly #buckets: Buckets;
  readonly #limit: LimitFunction | null;
  readonly #attempts: Counter<'outcome'>;
  readonly #verifications: Counter;

  constructor(options: LoginGuardOptions) {
    this.#options = options;
    this.#buckets = createBuckets({ redisUrl: options.redisUrl, logger: options.logger, what: 'login throttling', now: () => this.now() });
    this.#limit = options.hashConcurrency > 0 ? pLimit(options.hashConcurrency) : null;
    const registers = options.metrics ? [options.metrics] : [];
    this.#attempts = new Counter({
      name: 'cps_login_attempts_total',
      help: 'Login attempts by outcome (succeeded, failed, throttled, busy)',
      labelNames: ['outcome'],
      registers,
    });
    this.#verifications = new Counter({
      name: 'cps_login_secret_verifications_total',
      help: 'Client secrets hashed (scrypt) to verify a login',
      registers,
    });
  }

  #limits(clientId: string, address: string): BucketLimit[] {
    const { clientFailures, addressFailures, windowSeconds } = this.#options;
    const limits: BucketLimit[] = [];
    if (clientFailures > 0) limits.push({ key: `cps:login:client:${clientId}`, rate: clientFailures / windowSeconds, burst: clientFailures });
    if (addressFailures > 0)
      limits.push({ key: `cps:login:address:${addressKey(address)}`, rate: addressFailures / windowSeconds, burst: addressFailures });
    return limits;
  }

  /** Takes from the attempt's budgets, or refuses it with 429 and Retry-After. */
  async admit(clientId: string, address: string): Promise<Admission> {
    const limits = this.#limits(clientId, address);
    if (limits.length === 0) return limits;
    const { waitMs, refusedBy } = await this.#buckets.take(limits);
    if (refusedBy < 0) return limits;
    this.#attempts.inc({ outcome: 'throttled' });
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    const whose = limits[refusedBy]!.key.startsWith('cps:login:client:') ? 'for this client' : 'from this address';
    throw new AppError(429, `Too many failed logins ${whose}; retry in ${seconds} s`, { headers: { 'retry-after': String(seconds) } });
  }

  /** A successful login costs no budget. */
  async succeeded(admission: Admission): Promise<void> {
    this.#attempts.inc({ outcome: 'succeeded' });
    await this.giveBack(admission);
  }

  /** Returns an admitted attempt's budget: it succeeded, or its secret was never tried. */
  async giveBack(admission: Admission): Promise<void> {
    if (admission.length > 0) await this.#buckets.refund(admission);
  }

  failed(): void {
    this.#attempts.inc({ outcome: 'failed' });
  }

  /** Runs a secret verification in a free slot, or after the ones queued; refuses with 503 when the queue is full. */
  async verify(work: () => Promise<boolean>): Promise<boolean> {
    const counted = () => {
      this.#verifications.inc();
      return work();
    };
    if (!this.#limit) return counted();
    if (this.#limit.activeCount + this.#limit.pendingCount >= this.#options.hashConcurrency + this.#options.hashQueue) {
      this.#attempts.inc({ outcome: 'busy' });
      throw new AppError(503, 'Too many logins in progress; retry in 1 s', { headers: { 'retry-after': '1' } });
    }
    return this.#limit(counted);
  }

  /** Resolves once the shared budgets' Redis is connected (see Buckets.connected). */
  connected(timeoutMs = 10_000): Promise<void> {
    return this.#buckets.connected(timeoutMs);
  }

  close(): Promise<void> {
    return this.#buckets.close();
  }
}
