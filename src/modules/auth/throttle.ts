/**
 * Login throttling. Each attempt takes a token from two failure budgets, its source address's and its
 * client id's; a success gives them back, so only failures spend them. A budget is a token bucket:
 * `failures` tokens, refilled evenly over the window, so after a burst of failures one more attempt is
 * allowed every window/failures seconds, and an idle budget is whole again one window later.
 *
 * The address budget is checked before any secret is hashed: an address that spent it is refused.
 * A spent client budget does not refuse before the secret is checked, or anyone who knows a client id
 * could keep its owner out by failing now and then from elsewhere: the attempt is hashed (paid for from
 * its address's budget and bounded by the hashing limit below), a correct secret logs in, and a wrong
 * one answers 429 as before. So guessing one client's secret from many addresses stays refused, and
 * each guess still costs its address.
 *
 * The hashing itself is bounded too: at most `hashConcurrency` verifications run at once, `hashQueue`
 * more wait, and any beyond that are refused at once with 503, so a flood that passes the budgets
 * (many addresses and client ids) delays a real login by at most the queue, never without bound.
 */
import pLimit, { type LimitFunction } from 'p-limit';
import type { Logger } from 'pino';
import { Counter, type Registry } from 'prom-client';
import { AppError } from '../../errors.ts';
import { addressKey, createBuckets, type BucketLimit, type Buckets } from '../../security/buckets.ts';

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

/** An admitted attempt: the budgets it took from (given back if it succeeds), and the client budget's refusal, if spent. */
export interface Admission {
  readonly taken: readonly BucketLimit[];
  readonly clientRefusal: AppError | null;
}

function tooMany(whose: string, waitMs: number): AppError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new AppError(429, `Too many failed logins ${whose}; retry in ${seconds} s`, { headers: { 'retry-after': String(seconds) } });
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

  #clientLimit(clientId: string): BucketLimit | null {
    const { clientFailures, windowSeconds } = this.#options;
    return clientFailures > 0 ? { key: `cps:login:client:${clientId}`, rate: clientFailures / windowSeconds, burst: clientFailures } : null;
  }

  #addressLimit(address: string | undefined): BucketLimit | null {
    const { addressFailures, windowSeconds } = this.#options;
    return addressFailures > 0
      ? { key: `cps:login:address:${addressKey(address)}`, rate: addressFailures / windowSeconds, burst: addressFailures }
      : null;
  }

  /**
   * Takes from the address's budget, or refuses with 429 and Retry-After; then from the client id's,
   * whose refusal is kept for a wrong secret (see the top of this file).
   */
  async admit(clientId: string, address: string | undefined): Promise<Admission> {
    const taken: BucketLimit[] = [];
    const addressLimit = this.#addressLimit(address);
    if (addressLimit) {
      const { waitMs, refusedBy } = await this.#buckets.take([addressLimit]);
      if (refusedBy >= 0) {
        this.#attempts.inc({ outcome: 'throttled' });
        throw tooMany('from this address', waitMs);
      }
      taken.push(addressLimit);
    }
    let clientRefusal: AppError | null = null;
    const clientLimit = this.#clientLimit(clientId);
    if (clientLimit) {
      const { waitMs, refusedBy } = await this.#buckets.take([clientLimit]);
      if (refusedBy >= 0) clientRefusal = tooMany('for this client', waitMs);
      else taken.push(clientLimit);
    }
    return { taken, clientRefusal };
  }

  /** A successful login costs no budget. */
  async succeeded(admission: Admission): Promise<void> {
    this.#attempts.inc({ outcome: 'succeeded' });
    await this.giveBack(admission);
  }

  /** Returns an admitted attempt's budget: it succeeded, or its secret was never tried. */
  async giveBack(admission: Admission): Promise<void> {
    if (admission.taken.length > 0) await this.#buckets.refund(admission.taken);
  }

  /** A wrong secret: the budgets stay spent; the answer is 429 if the client's budget was spent already, else 401. */
  failed(admission: Admission): AppError {
    if (admission.clientRefusal) {
      this.#attempts.inc({ outcome: 'throttled' });
      return admission.clientRefusal;
    }
    this.#attempts.inc({ outcome: 'failed' });
    return new AppError(401, 'Invalid client credentials');
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
