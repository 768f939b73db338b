/**
 * Idempotency keys: the first request with a key claims it (a row inserted in its own statement, so
 * one request of any process wins), runs, and stores its response for 24 hours; a later request with
 * the key and the same request fingerprint gets that response, one with another fingerprint is told
 * so, and one that arrives while the first runs waits for it (bounded). A claim is held by a lease
 * renewed while its request runs, so a process that dies frees its keys once the lease runs out.
 * The HTTP layer (src/http/idempotency.ts) decides what a request and a response are. Expired keys
 * are deleted by the retention module (CPS_RETENTION_IDEMPOTENCY_KEYS_DAYS after they expire).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { Database } from '../../db/schema.ts';
import { decrypt, encrypt } from '../../security/encryption.ts';
import { randomToken } from '../../security/secrets.ts';
import { completeClaim, deleteClaim, deleteKeys, findKey, insertClaim, renewClaim, storedAnswers, takeOver } from './repo.ts';

/** Stored answers decrypted per page when a patient's are forgotten. */
const ANSWER_PAGE = 500;

/** How long a stored response is replayed. */
export const KEY_TTL_MS = 24 * 60 * 60 * 1000;
/** A claim lasts this long without renewal; renewed every third of it while its request runs. */
export const CLAIM_LEASE_MS = 30_000;
/** A request is not held longer than this: past it, its claim is left to lapse. */
const MAX_HOLD_MS = 10 * 60 * 1000;
/** The wait between looks at a key another request is running: doubles from the first to the last. */
const FIRST_POLL_MS = 5;
const LAST_POLL_MS = 100;

export interface StoredResponse {
  status: number;
  contentType: string | null;
  body: string;
}

/** A key held by the request that runs; complete or release it. */
export class Claim {
  readonly businessId: string;
  readonly key: string;
  readonly token: string;
  #renewal: NodeJS.Timeout | null = null;

  constructor(businessId: string, key: string, token: string) {
    this.businessId = businessId;
    this.key = key;
    this.token = token;
  }

  /** Renews the lease every third of it until stopped, for at most MAX_HOLD_MS. */
  hold(renew: (claim: Claim) => Promise<boolean>): void {
    const until = Date.now() + MAX_HOLD_MS;
    const next = () => {
      this.#renewal = Date.now() + CLAIM_LEASE_MS / 3 > until ? null : setTimeout(tick, CLAIM_LEASE_MS / 3).unref();
    };
    const tick = () => {
      renew(this).then(
        (held) => (held && this.#renewal !== null ? next() : this.stop()),
        () => this.#renewal !== null && next(),
      );
    };
    next();
  }

  stop(): void {
    if (this.#renewal) clearTimeout(this.#renewal);
    this.#renewal = null;
  }
}

/** The associated data of a stored body: a body moved to another business or key fails to decrypt. */
function sealedUnder(businessId: string, key: string): string {
  return `idempotency:${businessId}:${key}`;
}

export type Begun =
  | { outcome: 'claimed'; claim: Claim }
  | { outcome: 'replay'; response: StoredResponse }
  /** The key was used with another request. */
  | { outcome: 'mismatch' }
  /** The key's first request still runs after the wait. */
  | { outcome: 'busy' };

export interface IdempotencyServiceDeps {
  db: Kysely<Database>;
  /** Stored bodies are encrypted with it: they may hold a signing key or a patient's details. */
  masterKey: Buffer;
  /** How long a request waits for the running request that holds its key before it is refused. */
  waitMs: number;
}

export class IdempotencyService {
  readonly #deps: IdempotencyServiceDeps;
  constructor(deps: IdempotencyServiceDeps) {
    this.#deps = deps;
  }

  /** Claims `key` for a request with `fingerprint`, or answers why not (replay, mismatch, busy). */
  async begin(businessId: string, key: string, fingerprint: string): Promise<Begun> {
    const { db, waitMs } = this.#deps;
    const deadline = Date.now() + waitMs;
    let poll = FIRST_POLL_MS;
    for (;;) {
      const now = Date.now();
      const row = {
        business_id: businessId,
        idempotency_key: key,
        fingerprint,
        claim: randomToken(12),
        claimed_until: now + CLAIM_LEASE_MS,
        status: null,
        content_type: null,
        body: null,
        created_at: now,
        expires_at: now + KEY_TTL_MS,
      };
      const claimed = () => {
        const claim = new Claim(businessId, key, row.claim);
        claim.hold((c) => renewClaim(db, c.businessId, c.key, c.token, Date.now() + CLAIM_LEASE_MS));
        return { outcome: 'claimed' as const, claim };
      };
      if (await insertClaim(db, row)) return claimed();
      const existing = await findKey(db, businessId, key);
      if (!existing) {
        // Released (its request failed) between the two statements: claim it afresh.
      } else if (existing.expires_at <= now) {
        if (await takeOver(db, row, { expiredBy: now })) return claimed();
      } else if (existing.fingerprint !== fingerprint) {
        return { outcome: 'mismatch' };
      } else if (existing.status !== null) {
        const body = decrypt(this.#deps.masterKey, existing.body ?? '', sealedUnder(businessId, key));
        return { outcome: 'replay', response: { status: existing.status, contentType: existing.content_type, body } };
      } else if (existing.claimed_until !== null && existing.claimed_until <= now) {
        // Its process stopped without answering: the request runs again here.
        if (await takeOver(db, row, { abandonedClaim: existing.claim ?? '', leaseEndedBy: now })) return claimed();
      } else {
        if (now >= deadline) return { outcome: 'busy' };
        await sleep(Math.min(poll, deadline - now));
        poll = Math.min(poll * 2, LAST_POLL_MS);
        continue;
      }
      if (Date.now() >= deadline) return { outcome: 'busy' };
    }
  }

  /** Stores the response of a claimed key for KEY_TTL_MS; false when the claim was lost. */
  async complete(claim: Claim, response: StoredResponse): Promise<boolean> {
    claim.stop();
    const { db } = this.#deps;
    return completeClaim(db, claim.businessId, claim.key, claim.token, {
      status: response.status,
      content_type: response.contentType,
      body: encrypt(this.#deps.masterKey, response.body, sealedUnder(claim.businessId, claim.key)),
    });
  }

  /** Frees a claimed key without a response: the next request with it runs. */
  async release(claim: Claim): Promise<void> {
    claim.stop();
    await deleteClaim(this.#deps.db, claim.businessId, claim.key, claim.token);
  }

  /**
   * Deletes the business's keys whose stored answer holds any of `needles` (a patient's ids, name or
   * number, as JSON strings: see modules/privacy), in the caller's transaction; answers how many. The
   * answers are decrypted here, a page at a time; a request repeated with such a key runs again.
   */
  async forgetAnswersNaming(trx: Db, businessId: string, needles: string[]): Promise<number> {
    if (needles.length === 0) return 0;
    let after = '';
    let forgotten = 0;
    for (;;) {
      const page = await storedAnswers(trx, businessId, after, ANSWER_PAGE);
      const naming: string[] = [];
      for (const row of page) {
        let body: string;
        try {
          body = decrypt(this.#deps.masterKey, row.body, sealedUnder(businessId, row.idempotency_key));
        } catch {
          continue;
        }
        if (needles.some((needle) => body.includes(needle))) naming.push(row.idempotency_key);
      }
      await deleteKeys(trx, businessId, naming);
      forgotten += naming.length;
      if (page.length < ANSWER_PAGE) return forgotten;
      after = page[page.length - 1]!.idempotency_key;
    }
  }
}
