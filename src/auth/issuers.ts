/**
 * Processes sharing a database must share CPS_PUBLIC_URL, the tokens' issuer, or each refuses the others'
 * tokens (401). Each process announces its issuer and signing key id in the database at start and every
 * minute; a process that sees another issuer announced with the same key within the last few minutes
 * warns, once per issuer, at its start or when the other appears. (AccessTokens also warns when it
 * refuses such a token.)
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../db/schema.ts';

const ANNOUNCE_EVERY_MS = 60_000;
/** An issuer not announced for this long belongs to no running process (a changed CPS_PUBLIC_URL, a stopped one). */
const LIVE_WITHIN_MS = 3 * ANNOUNCE_EVERY_MS;

/** Issuers unseen for a day are deleted: the table holds the issuers of the current deployment only. */
const FORGOTTEN_AFTER_MS = 86_400_000;

export interface IssuerWatch {
  stop(): void;
}

/** Announces the issuer now, then every minute, and warns about live issuers that differ. */
export async function watchIssuers(db: Kysely<Database>, issuer: string, keyId: string, logger: Logger): Promise<IssuerWatch> {
  const warned = new Set<string>();
  const announce = async () => {
    for (const other of await announceIssuer(db, issuer, keyId, Date.now())) {
      if (warned.has(other)) continue;
      warned.add(other);
      logger.warn(
        { issuer, other_issuer: other },
        "another process on this database issues tokens under a different CPS_PUBLIC_URL with the same signing key: each refuses the other's tokens; give every process the same CPS_PUBLIC_URL",
      );
    }
  };
  await announce();
  const timer = setInterval(() => {
    announce().catch((error: unknown) => logger.warn({ err: error }, 'could not announce the token issuer'));
  }, ANNOUNCE_EVERY_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** Records the issuer as seen at `now`; answers the other issuers of the same key seen recently. */
export async function announceIssuer(db: Kysely<Database>, issuer: string, keyId: string, now: number): Promise<string[]> {
  await db
    .insertInto('token_issuers')
    .values({ issuer, key_id: keyId, seen_at: now })
    .onConflict((c) => c.column('issuer').doUpdateSet({ key_id: keyId, seen_at: now }))
    .execute();
  await db
    .deleteFrom('token_issuers')
    .where('seen_at', '<', now - FORGOTTEN_AFTER_MS)
    .execute();
  const others = await db
    .selectFrom('token_issuers')
    .select('issuer')
    .where('issuer', '!=', issuer)
    .where('key_id', '=', keyId)
    .where('seen_at', '>=', now - LIVE_WITHIN_MS)
    .orderBy('issuer')
    .execute();
  return others.map((row) => row.issuer);
}
