/** SQL of the access log's writer: entries, completions, the chain, and the reads of `cps audit verify`. */
import { sql, type Kysely } from 'kysely';
import { inTransaction, writeWithNext, type Db } from '../db/index.ts';
import { isAnyOf, isPostgres } from '../db/dialect.ts';
import type { Database } from '../db/schema.ts';
import { entryHash, GENESIS, storable, type AuditCompletion, type AuditEntry, type ChainedEntry } from './entry.ts';
import { ChainSeal } from './seal.ts';

/** What a head whose seal did not match gets instead of a seal: extending it never launders the tampering. */
const TAMPERED = 'tampered';

/** Rows per statement at most: 18 columns of 256 rows stay far below both dialects' parameter limits. */
const MAX_ROWS = 256;

/**
 * Splits a batch into runs of 256, 128, ..., 1 rows: statements come in a few shapes only, so the
 * statement caches (SQLite's, PostgreSQL's prepared statements) are not flooded with one per size.
 */
function runs<T>(items: T[]): T[][] {
  const out: T[][] = [];
  let i = 0;
  for (let size = MAX_ROWS; size >= 1; size >>= 1) {
    while (items.length - i >= size) {
      out.push(items.slice(i, i + size));
      i += size;
    }
  }
  return out;
}

/** Inserts an entry in its change's transaction, sent with the transaction's next statement (writeWithNext). */
export function insertWithChange(trx: Db, entry: AuditEntry): Promise<void> {
  return writeWithNext(trx, trx.insertInto('access_log').values(storable(entry)));
}

/** Inserts entries; an entry already stored (a replayed write-ahead record) is left as it is. */
export async function insertEntries(db: Db, entries: AuditEntry[]): Promise<void> {
  for (const run of runs(entries.map(storable))) {
    await db
      .insertInto('access_log')
      .values(run)
      .onConflict((c) => c.column('id').doNothing())
      .execute();
  }
}

/**
 * Appends entries of one business to its chain as they are inserted (one pass: no later update), under
 * the head row's lock (see chainBusiness). A plain insert: an entry already stored fails the whole
 * batch rather than leave a gap in the chain, and the caller falls back to insertEntries.
 */
export async function appendChained(db: Kysely<Database>, seal: ChainSeal, businessId: string, entries: AuditEntry[]): Promise<void> {
  await inTransaction(db, async (trx) => {
    const head = await lockHead(trx, db, seal, businessId);
    let seq = head.seq;
    let prev = head.hash;
    const rows = entries.map(storable).map((entry) => {
      seq += 1;
      const hash = entryHash(entry, seq, prev);
      const row = { ...entry, seq, prev_hash: prev, hash };
      prev = hash;
      return row;
    });
    for (const run of runs(rows)) await trx.insertInto('access_log').values(run).execute();
    await moveHead(trx, seal, businessId, head.sealed, seq, prev);
  });
}

/** Moves the head, sealed again only when the seal it had matched. */
async function moveHead(trx: Db, seal: ChainSeal, businessId: string, sealed: boolean, seq: number, hash: string): Promise<void> {
  const mac = sealed ? seal.head({ business_id: businessId, seq, hash }) : TAMPERED;
  await trx.updateTable('access_log_heads').set({ seq, hash, mac }).where('business_id', '=', businessId).execute();
}

/** The chain's head, locked: the first statement writes (on SQLite this takes the write lock before anything is read). */
async function lockHead(trx: Db, db: Kysely<Database>, seal: ChainSeal, businessId: string): Promise<{ seq: number; hash: string; sealed: boolean }> {
  const genesis = { business_id: businessId, seq: 0, hash: GENESIS };
  await trx
    .insertInto('access_log_heads')
    .values({ ...genesis, mac: seal.head(genesis) })
    .onConflict((c) => c.column('business_id').doNothing())
    .execute();
  let query = trx.selectFrom('access_log_heads').select(['seq', 'hash', 'mac']).where('business_id', '=', businessId);
  if (isPostgres(db)) query = query.forUpdate();
  const head = await query.executeTakeFirstOrThrow();
  const end = { business_id: businessId, seq: Number(head.seq), hash: head.hash };
  return { seq: end.seq, hash: end.hash, sealed: ChainSeal.matches(head.mac, seal.head(end)) };
}

/**
 * Seals every head and anchor again under another master key (`cps keys rotate`), in the caller's
 * transaction. One whose seal did not match under the old key is left unmatched under the new one.
 */
export async function resealChains(trx: Db, from: ChainSeal, to: ChainSeal): Promise<number> {
  const heads = await trx.selectFrom('access_log_heads').select(['business_id', 'seq', 'hash', 'mac']).execute();
  for (const head of heads) {
    const end = { business_id: head.business_id, seq: Number(head.seq), hash: head.hash };
    const mac = ChainSeal.matches(head.mac, from.head(end)) ? to.head(end) : TAMPERED;
    await trx.updateTable('access_log_heads').set({ mac }).where('business_id', '=', head.business_id).execute();
  }
  const anchors = await trx.selectFrom('access_log_pruned').select(['business_id', 'seq', 'hash', 'through_at', 'mac']).execute();
  for (const row of anchors) {
    const anchor = { seq: Number(row.seq), hash: row.hash, through_at: row.through_at === null ? null : Number(row.through_at), mac: row.mac };
    const mac =
      anchor.through_at !== null && anchorSealed(from, row.business_id, anchor)
        ? to.anchor({ business_id: row.business_id, seq: anchor.seq, hash: anchor.hash, through_at: anchor.through_at })
        : TAMPERED;
    await trx.updateTable('access_log_pruned').set({ mac }).where('business_id', '=', row.business_id).execute();
  }
  return heads.length + anchors.length;
}

/**
 * The migrations that leave heads or anchors without seals (the seals need the master key, which
 * migrations do not hold). The process that applies one of them seals those rows right after; at any
 * other time an unsealed row is a forgery (a seal set to null), and sealing it would launder it.
 */
export const UNSEALED_BY_MIGRATIONS: readonly string[] = ['0030_access_log_seals', '0032_access_log_heads_for_every_business'];

/** Opens a new business's chain in the transaction that creates the business: a business whose head is missing later lost it. */
export async function openChain(trx: Db, seal: ChainSeal, businessId: string): Promise<void> {
  const genesis = { business_id: businessId, seq: 0, hash: GENESIS };
  await trx
    .insertInto('access_log_heads')
    .values({ ...genesis, mac: seal.head(genesis) })
    .execute();
}

/** After migrating: seals what the migrations just applied left unsealed, if any did. */
export async function sealWhatMigrationsLeft(db: Kysely<Database>, applied: readonly string[], masterKey: () => Promise<Buffer>): Promise<number> {
  if (!applied.some((name) => UNSEALED_BY_MIGRATIONS.includes(name))) return 0;
  return sealUnsealed(db, new ChainSeal(await masterKey()));
}

/** Seals heads and anchors a migration left unsealed (see UNSEALED_BY_MIGRATIONS). */
export async function sealUnsealed(db: Kysely<Database>, seal: ChainSeal): Promise<number> {
  let sealed = 0;
  await inTransaction(db, async (trx) => {
    const heads = await trx.selectFrom('access_log_heads').select(['business_id', 'seq', 'hash']).where('mac', 'is', null).execute();
    for (const head of heads) {
      await trx
        .updateTable('access_log_heads')
        .set({ mac: seal.head(head) })
        .where('business_id', '=', head.business_id)
        .where('mac', 'is', null)
        .execute();
    }
    const anchors = await trx.selectFrom('access_log_pruned').select(['business_id', 'seq', 'hash', 'pruned_at']).where('mac', 'is', null).execute();
    for (const anchor of anchors) {
      // Anchors from before through_at was kept: the entries were pruned by then at the latest.
      const through_at = Number(anchor.pruned_at);
      await trx
        .updateTable('access_log_pruned')
        .set({ through_at, mac: seal.anchor({ ...anchor, through_at }) })
        .where('business_id', '=', anchor.business_id)
        .where('mac', 'is', null)
        .execute();
    }
    sealed = heads.length + anchors.length;
  });
  return sealed;
}

/** Applies what the answers add to entries written with their changes; an entry chained meanwhile stays as chained. */
export async function completeEntries(db: Kysely<Database>, completions: AuditCompletion[]): Promise<void> {
  if (completions.length === 0) return;
  await inTransaction(db, async (trx) => {
    for (const c of completions.map(storable)) {
      await trx
        .updateTable('access_log')
        .set({ status: c.status, resource_id: c.resource_id, patient_ref: c.patient_ref, result_count: c.result_count })
        .where('id', '=', c.id)
        .where('seq', 'is', null)
        .execute();
    }
  });
}

/** Businesses with entries ready to chain: answered, or written with a change longer ago than `before`. */
export async function businessesToChain(db: Db, before: number): Promise<string[]> {
  const rows = await db
    .selectFrom('access_log')
    .select('business_id')
    .distinct()
    .where('seq', 'is', null)
    .where((eb) => eb.or([eb('status', 'is not', null), eb('at', '<', before)]))
    .limit(1000)
    .execute();
  return rows.map((row) => row.business_id);
}

/** The businesses of the unchained entries among `ids`. */
export async function businessesOf(db: Db, ids: string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .selectFrom('access_log')
    .select('business_id')
    .distinct()
    .where((eb) => isAnyOf(db, eb.ref('id'), ids))
    .where('seq', 'is', null)
    .execute();
  return rows.map((row) => row.business_id);
}

/**
 * Chains up to `limit` entries of a business stored unchained (written with their changes, or
 * replayed from a write-ahead file) and ready, in (at, id) order, after its current head, under the
 * head row's lock: PostgreSQL locks the row, SQLite's write lock serializes, so processes chaining at
 * once queue on it and each continues the chain where the previous one left it. An entry `pending`
 * holds an answer for is ready too: the answer is applied by the same update that chains the entry
 * (one row version, not two), and removed from `pending`. Returns the number chained.
 */
export async function chainBusiness(
  db: Kysely<Database>,
  businessId: string,
  before: number,
  limit: number,
  seal: ChainSeal,
  pending: Map<string, AuditCompletion> = new Map(),
): Promise<number> {
  const chained = await inTransaction(db, async (trx) => {
    const head = await lockHead(trx, db, seal, businessId);
    const answered = [...pending.keys()];
    const rows = await trx
      .selectFrom('access_log')
      .selectAll()
      .where('business_id', '=', businessId)
      .where('seq', 'is', null)
      .where((eb) =>
        eb.or([eb('status', 'is not', null), eb('at', '<', before), ...(answered.length > 0 ? [isAnyOf(db, eb.ref('id'), answered)] : [])]),
      )
      .orderBy('at')
      .orderBy('id')
      .limit(limit)
      .execute();
    if (rows.length === 0) return [];
    let seq = head.seq;
    let prev = head.hash;
    const links: Array<{ entry: AuditEntry; seq: number; prev: string; hash: string }> = [];
    for (const row of rows) {
      const answer = pending.get(row.id);
      const entry = (answer ? { ...row, ...storable(answer) } : row) as AuditEntry;
      seq += 1;
      const hash = entryHash(entry, seq, prev);
      links.push({ entry, seq, prev, hash });
      prev = hash;
    }
    for (const run of runs(links)) {
      const values = sql.join(
        run.map(
          ({ entry: e, seq, prev, hash }) =>
            sql`(${e.id}, ${seq}, ${prev}, ${hash}, ${e.status}, ${e.resource_id}, ${e.patient_ref}, ${e.result_count})`,
        ),
      );
      if (isPostgres(db)) {
        await sql`update access_log as a set seq = v.seq::bigint, prev_hash = v.prev, hash = v.hash, status = v.status::integer,
            resource_id = v.resource_id, patient_ref = v.patient_ref, result_count = v.result_count::integer
          from (values ${values}) as v(id, seq, prev, hash, status, resource_id, patient_ref, result_count) where a.id = v.id`.execute(trx);
      } else {
        await sql`with v(id, seq, prev, hash, status, resource_id, patient_ref, result_count) as (values ${values})
          update access_log set seq = v.seq, prev_hash = v.prev, hash = v.hash, status = v.status, resource_id = v.resource_id,
            patient_ref = v.patient_ref, result_count = v.result_count
          from v where access_log.id = v.id`.execute(trx);
      }
    }
    await moveHead(trx, seal, businessId, head.sealed, seq, prev);
    return links.map(({ entry }) => entry.id);
  });
  for (const id of chained) pending.delete(id);
  return chained.length;
}

/** Every business known: those of the businesses table, and any with a chain's head or anchor left. */
export async function knownBusinesses(db: Db): Promise<string[]> {
  const rows = await db
    .selectFrom('businesses')
    .select('id as business_id')
    .union(db.selectFrom('access_log_heads').select('business_id'))
    .union(db.selectFrom('access_log_pruned').select('business_id'))
    .execute();
  return rows.map((row) => row.business_id).sort();
}

export async function chainHead(db: Db, businessId: string): Promise<{ seq: number; hash: string; mac: string | null } | undefined> {
  const head = await db.selectFrom('access_log_heads').select(['seq', 'hash', 'mac']).where('business_id', '=', businessId).executeTakeFirst();
  return head && { seq: Number(head.seq), hash: head.hash, mac: head.mac };
}

/** A business's chained entries after `afterSeq`, in chain order. */
export async function chainedPage(db: Db, businessId: string, afterSeq: number, limit: number): Promise<ChainedEntry[]> {
  const rows = await db
    .selectFrom('access_log')
    .selectAll()
    .where('business_id', '=', businessId)
    .where('seq', 'is not', null)
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ ...row, seq: Number(row.seq), at: Number(row.at) }) as ChainedEntry);
}

/** The last pruned entry of a business's chain (where what is left of it begins), if any was pruned. */
export interface Anchor {
  seq: number;
  hash: string;
  through_at: number | null;
  mac: string | null;
}

export async function prunedAnchor(db: Db, businessId: string): Promise<Anchor | undefined> {
  const anchor = await db
    .selectFrom('access_log_pruned')
    .select(['seq', 'hash', 'through_at', 'mac'])
    .where('business_id', '=', businessId)
    .executeTakeFirst();
  return (
    anchor && {
      seq: Number(anchor.seq),
      hash: anchor.hash,
      through_at: anchor.through_at === null ? null : Number(anchor.through_at),
      mac: anchor.mac,
    }
  );
}

/** Whether a stored anchor carries the seal of its fields. */
export function anchorSealed(seal: ChainSeal, businessId: string, anchor: Anchor): boolean {
  if (anchor.through_at === null) return false;
  return ChainSeal.matches(anchor.mac, seal.anchor({ business_id: businessId, seq: anchor.seq, hash: anchor.hash, through_at: anchor.through_at }));
}

/**
 * Deletes a business's chained entries after `from` up to and including `to`, and records `to` as the
 * chain's new anchor, in one transaction. The anchor moves only from where the caller found it (`from`),
 * so two prunes of one chain at once cannot both apply; false when the anchor had moved.
 */
export async function deletePrefix(
  db: Kysely<Database>,
  seal: ChainSeal,
  businessId: string,
  from: { seq: number; pruned: boolean },
  to: { seq: number; hash: string; through_at: number },
): Promise<number | false> {
  return inTransaction(db, async (trx) => {
    const now = Date.now();
    const mac = seal.anchor({ business_id: businessId, ...to });
    const moved = from.pruned
      ? await trx
          .updateTable('access_log_pruned')
          .set({ seq: to.seq, hash: to.hash, pruned_at: now, through_at: to.through_at, mac })
          .where('business_id', '=', businessId)
          .where('seq', '=', from.seq)
          .executeTakeFirst()
          .then((r) => r.numUpdatedRows > 0n)
      : await trx
          .insertInto('access_log_pruned')
          .values({ business_id: businessId, seq: to.seq, hash: to.hash, pruned_at: now, through_at: to.through_at, mac })
          .onConflict((c) => c.column('business_id').doNothing())
          .returning('business_id')
          .executeTakeFirst()
          .then((row) => row !== undefined);
    if (!moved) return false;
    const deleted = await trx
      .deleteFrom('access_log')
      .where('business_id', '=', businessId)
      .where('seq', '>', from.seq)
      .where('seq', '<=', to.seq)
      .executeTakeFirst();
    return Number(deleted.numDeletedRows);
  });
}
