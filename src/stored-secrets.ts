/**
 * Every column sealed under the master key (security/encryption.ts), with its associated data. A start
 * opens one stored value of each, so a changed CPS_MASTER_KEY stops the start instead of failing every
 * webhook and push job later with a crypto message. It reads the database's tables and reseals the
 * access log's chains, so it sits above db/, access-log/ and security/ (beside server.ts and cli.ts,
 * its callers), not in security/, which both of them use.
 */
import { ChainSeal } from './access-log/seal.ts';
import { resealChains } from './access-log/store.ts';
import type { Kysely } from 'kysely';
import type { Database } from './db/schema.ts';
import { decrypt, encrypt } from './security/encryption.ts';

interface SealedColumn {
  /** What the value is, for the operator. */
  what: string;
  table: keyof Database;
  column: string;
  /** The columns the associated data is made of. */
  keys: string[];
  associatedData(row: Record<string, string>): string;
}

export const SEALED_COLUMNS: readonly SealedColumn[] = [
  { what: 'webhook signing keys', table: 'webhook_subscriptions', column: 'signing_key', keys: ['id'], associatedData: (row) => `webhook:${row.id}` },
  {
    what: 'webhook signing keys',
    table: 'webhook_subscriptions',
    column: 'previous_signing_key',
    keys: ['id'],
    associatedData: (row) => `webhook:${row.id}`,
  },
  { what: 'push service accounts', table: 'push_credentials', column: 'sealed', keys: ['business_id'], associatedData: (row) => row.business_id! },
  {
    what: 'stored Idempotency-Key answers',
    table: 'idempotency_keys',
    column: 'body',
    keys: ['business_id', 'idempotency_key'],
    associatedData: (row) => `idempotency:${row.business_id}:${row.idempotency_key}`,
  },
  {
    what: 'patient data exports',
    table: 'privacy_exports',
    column: 'document',
    keys: ['id', 'business_id'],
    associatedData: (row) => `privacy-export:${row.business_id}:${row.id}`,
  },
  {
    what: 'document file keys',
    table: 'document_file_keys',
    column: 'sealed_key',
    keys: ['storage_key'],
    associatedData: (row) => `document-file:${row.storage_key}`,
  },
];

export class MasterKeyMismatchError extends Error {
  readonly what: string;
  constructor(what: string) {
    super(
      `CPS_MASTER_KEY does not open the ${what} stored in this database: start with the key they were stored under (to change the key, see docs/4-operations.md "Rotating the master key")`,
    );
    this.what = what;
  }
}

/** Opens one stored value of each sealed column; throws MasterKeyMismatchError naming the first that fails. */
export async function assertMasterKeyOpensStoredValues(db: Kysely<Database>, masterKey: Buffer): Promise<void> {
  const any = db as unknown as Kysely<Record<string, Record<string, string | null>>>;
  for (const sealed of SEALED_COLUMNS) {
    const row = await any
      .selectFrom(sealed.table)
      .select([...sealed.keys, sealed.column])
      .where(sealed.column, 'is not', null)
      .limit(1)
      .executeTakeFirst();
    if (row === undefined) continue;
    try {
      decrypt(masterKey, row[sealed.column]!, sealed.associatedData(row as Record<string, string>));
    } catch {
      throw new MasterKeyMismatchError(sealed.what);
    }
  }
}

/**
 * Re-encrypts every stored sealed value from one master key to another, in one transaction (the
 * service stopped): all of them move, or none. Answers the values moved per kind.
 */
export async function reencryptStoredValues(db: Kysely<Database>, from: Buffer, to: Buffer): Promise<Record<string, number>> {
  const moved: Record<string, number> = {};
  await db.transaction().execute(async (trx) => {
    const any = trx as unknown as Kysely<Record<string, Record<string, string | null>>>;
    for (const sealed of SEALED_COLUMNS) {
      const rows = await any
        .selectFrom(sealed.table)
        .select([...sealed.keys, sealed.column])
        .where(sealed.column, 'is not', null)
        .execute();
      for (const row of rows) {
        const associatedData = sealed.associatedData(row as Record<string, string>);
        let plaintext: string;
        try {
          plaintext = decrypt(from, row[sealed.column]!, associatedData);
        } catch {
          throw new MasterKeyMismatchError(sealed.what);
        }
        let update = any.updateTable(sealed.table).set({ [sealed.column]: encrypt(to, plaintext, associatedData) });
        for (const key of sealed.keys) update = update.where(key, '=', row[key]!);
        await update.execute();
      }
      moved[sealed.what] = (moved[sealed.what] ?? 0) + rows.length;
    }
    // Not encrypted but keyed: the access log chains' seals (audit/seal.ts).
    moved['access log seals'] = await resealChains(trx, new ChainSeal(from), new ChainSeal(to));
  });
  return moved;
}
