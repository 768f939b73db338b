/**
 * Retention of the access log: each business's chain loses its oldest entries, a prefix at a time, and
 * keeps the last pruned entry's seq and hash as its anchor (access_log_pruned), from which `cps audit
 * verify` starts; an entry deleted after the anchor still breaks the chain. A prefix is pruned only
 * as far as its links hold (seq without gaps, prev_hash, hash), so pruning never erases the evidence of
 * a broken link: the chain stops being pruned at that link, and the break is reported.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.ts';
import { entryHash, GENESIS, type ChainedEntry } from './entry.ts';
import type { ChainSeal } from './seal.ts';
import { anchorSealed, chainedPage, deletePrefix, prunedAnchor } from './store.ts';

const BUSINESSES_PER_PAGE = 500;

/** A link found broken while pruning: the chain is not pruned past it. */
export interface BrokenLink {
  businessId: string;
  seq: number;
}

/**
 * Deletes every business's entries older than `cutoff`, at most `batchSize` per transaction; yields the
 * number deleted by each transaction (the caller yields to the event loop and checks its signal there).
 */
export async function* pruneChains(
  db: Kysely<Database>,
  seal: ChainSeal,
  cutoff: number,
  batchSize: number,
  onBroken: (link: BrokenLink) => void,
): AsyncGenerator<number> {
  let after = '';
  for (;;) {
    const page = await db
      .selectFrom('access_log_heads')
      .select('business_id')
      .where('business_id', '>', after)
      .orderBy('business_id')
      .limit(BUSINESSES_PER_PAGE)
      .execute();
    for (const { business_id } of page) yield* pruneChain(db, seal, business_id, cutoff, batchSize, onBroken);
    if (page.length < BUSINESSES_PER_PAGE) return;
    after = page.at(-1)!.business_id;
  }
}

async function* pruneChain(
  db: Kysely<Database>,
  seal: ChainSeal,
  businessId: string,
  cutoff: number,
  batchSize: number,
  onBroken: (link: BrokenLink) => void,
): AsyncGenerator<number> {
  for (;;) {
    const anchor = await prunedAnchor(db, businessId);
    // A forged anchor is not pruned past: the next one would carry a valid seal.
    if (anchor && !anchorSealed(seal, businessId, anchor)) {
      onBroken({ businessId, seq: anchor.seq });
      return;
    }
    const from = { seq: anchor?.seq ?? 0, pruned: anchor !== undefined };
    const rows = await chainedPage(db, businessId, from.seq, batchSize);
    let prev = anchor?.hash ?? GENESIS;
    let last: ChainedEntry | null = null;
    let broken = false;
    for (const row of rows) {
      if (row.at >= cutoff) break;
      const expected = (last?.seq ?? from.seq) + 1;
      if (row.seq !== expected || row.prev_hash !== prev || entryHash(row, row.seq, row.prev_hash) !== row.hash) {
        onBroken({ businessId, seq: expected });
        broken = true;
        break;
      }
      last = row;
      prev = row.hash;
    }
    if (last === null) return;
    const deleted = await deletePrefix(db, seal, businessId, from, { seq: last.seq, hash: last.hash, through_at: last.at });
    // false: another prune of this chain moved the anchor meanwhile; it goes on from there.
    if (deleted === false) return;
    yield deleted;
    if (broken || last !== rows.at(-1) || rows.length < batchSize) return;
  }
}
