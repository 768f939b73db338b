import type { Db } from '../../db/index.ts';
import type { RefreshTokensTable } from '../../db/schema.ts';

export async function insertRefreshToken(db: Db, row: RefreshTokensTable): Promise<void> {
  await db.insertInto('refresh_tokens').values(row).execute();
}

export async function findRefreshToken(db: Db, tokenHash: string): Promise<RefreshTokensTable | undefined> {
  return db.selectFrom('refresh_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Marks the token spent; false when another request spent it first. */
export async function spendRefreshToken(db: Db, id: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('refresh_tokens')
    .set({ used_at: now })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Revokes every refresh token of a login, in passes until one finds none left: a refresh committing
 * while a pass waited for its row stored a successor that pass cannot see (PostgreSQL re-checks only
 * the rows a statement began with) and the next one does.
 */
export async function revokeFamily(db: Db, familyId: string, now: number): Promise<void> {
  for (;;) {
    const result = await db
      .updateTable('refresh_tokens')
      .set({ revoked_at: now })
      .where('family_id', '=', familyId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    if (Number(result.numUpdatedRows) === 0) return;
  }
}

/** Revokes every refresh token of a client: the client was disabled. */
export async function revokeClientTokens(db: Db, clientId: string, now: number): Promise<void> {
  await db.updateTable('refresh_tokens').set({ revoked_at: now }).where('client_id', '=', clientId).where('revoked_at', 'is', null).execute();
}
