/** SQL of the console's sessions. */
import type { Db } from '../../db/index.ts';
import type { ConsoleSessionsTable } from '../../db/schema.ts';

export interface SessionRow extends ConsoleSessionsTable {
  /** The client's business, scopes and state (null for an operator's session or a deleted client). */
  business_id: string | null;
  business_name: string | null;
  scopes: string | null;
  disabled_at: number | null;
}

export async function insertSession(db: Db, row: ConsoleSessionsTable): Promise<void> {
  await db.insertInto('console_sessions').values(row).execute();
}

/** The session stored under any of `tokenHashes` (a token's possible digests). */
export async function findSession(db: Db, tokenHashes: string[]): Promise<SessionRow | undefined> {
  return db
    .selectFrom('console_sessions')
    .leftJoin('api_clients', 'api_clients.id', 'console_sessions.client_id')
    .leftJoin('businesses', 'businesses.id', 'api_clients.business_id')
    .select([
      'console_sessions.token_hash',
      'console_sessions.kind',
      'console_sessions.client_id',
      'console_sessions.created_at',
      'console_sessions.last_seen_at',
      'api_clients.business_id',
      'api_clients.scopes',
      'api_clients.disabled_at',
      'businesses.name as business_name',
    ])
    .where('console_sessions.token_hash', 'in', tokenHashes)
    .executeTakeFirst();
}

export async function touchSession(db: Db, tokenHash: string, now: number): Promise<void> {
  await db.updateTable('console_sessions').set({ last_seen_at: now }).where('token_hash', '=', tokenHash).execute();
}

export async function deleteSession(db: Db, tokenHash: string): Promise<void> {
  await db.deleteFrom('console_sessions').where('token_hash', '=', tokenHash).execute();
}

/** Sessions idle since before `idleSince`, or begun before `bornSince`. */
export async function deleteEndedSessions(db: Db, idleSince: number, bornSince: number): Promise<void> {
  await db
    .deleteFrom('console_sessions')
    .where((eb) => eb.or([eb('last_seen_at', '<', idleSince), eb('created_at', '<', bornSince)]))
    .execute();
}
