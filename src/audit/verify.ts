/**
 * `cps audit verify`: walks each business's chain from its first entry and recomputes every link.
 * A changed row no longer matches its hash, a deleted one leaves a gap in seq or a prev_hash that
 * names no row, and deleting the newest rows leaves the chain short of its head (access_log_heads).
 * Once retention pruned the oldest entries, the walk starts from the last pruned one's seq and hash
 * (access_log_pruned, see prune.ts): deleting the first entry left after it is a gap like any other.
 */
import type { Db } from '../db/index.ts';
import { entryHash, GENESIS } from './entry.ts';
import { chainedBusinesses, chainedPage, chainHead, prunedAnchor } from './store.ts';

export interface ChainReport {
  business_id: string;
  /** Entries checked (those left after any pruning). */
  entries: number;
  ok: boolean;
  /** The seq of the last entry retention pruned: the chain is checked from the one after it. */
  pruned_through?: number;
  /** The first broken link: the position where the chain stops holding, and why. */
  broken?: { seq: number; entry_id: string | null; reason: string };
}

const PAGE = 1000;

export async function verifyChains(db: Db, businessId?: string): Promise<ChainReport[]> {
  const businesses = businessId === undefined ? await chainedBusinesses(db) : [businessId];
  const reports: ChainReport[] = [];
  for (const business of businesses) reports.push(await verifyChain(db, business));
  return reports;
}

/**
 * Checks the chain up to its head as read first: entries chained while the walk runs are past it and
 * wait for the next run. A prune that moves the anchor under the walk restarts it from the new anchor.
 */
export async function verifyChain(db: Db, businessId: string, restarts = 3): Promise<ChainReport> {
  const head = await chainHead(db, businessId);
  const anchor = await prunedAnchor(db, businessId);
  const first = (anchor?.seq ?? 0) + 1;
  const last = head?.seq ?? Number.POSITIVE_INFINITY;
  let expectedSeq = first;
  let prev = anchor?.hash ?? GENESIS;
  const pruned = anchor ? { pruned_through: anchor.seq } : {};
  const fail = (seq: number, entryId: string | null, reason: string): ChainReport => ({
    business_id: businessId,
    entries: expectedSeq - first,
    ok: false,
    ...pruned,
    broken: { seq, entry_id: entryId, reason },
  });
  walk: for (;;) {
    const rows = await chainedPage(db, businessId, expectedSeq - 1, PAGE);
    for (const row of rows) {
      if (row.seq > last) break walk;
      if (row.seq !== expectedSeq) {
        const moved = expectedSeq === first && restarts > 0 && (await prunedAnchor(db, businessId))?.seq !== anchor?.seq;
        if (moved) return verifyChain(db, businessId, restarts - 1);
        return fail(expectedSeq, null, `entry ${expectedSeq} is missing (the next is ${row.seq})`);
      }
      if (row.prev_hash !== prev) return fail(row.seq, row.id, 'prev_hash is not the hash of the previous entry');
      if (entryHash(row, row.seq, row.prev_hash) !== row.hash) return fail(row.seq, row.id, 'the entry does not match its hash (changed)');
      prev = row.hash;
      expectedSeq += 1;
    }
    if (rows.length < PAGE) break;
  }
  const end = expectedSeq - 1;
  const entries = expectedSeq - first;
  if (!head) {
    if (end === 0) return { business_id: businessId, entries, ok: true };
    // Chained since the head was read (a business's first entries)?
    if (restarts > 0 && (await chainHead(db, businessId))) return verifyChain(db, businessId, restarts - 1);
    return fail(1, null, 'the chain has no head record');
  }
  if (head.seq !== end) return fail(end + 1, null, `the chain ends at ${end} but its head is at ${head.seq} (entries deleted)`);
  if (head.hash !== prev) return fail(end, null, 'the last entry is not the head of the chain');
  return { business_id: businessId, entries, ok: true, ...pruned };
}
