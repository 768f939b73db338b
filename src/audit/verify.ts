/**
 * `cps audit verify`: walks each business's chain from its first entry and recomputes every link.
 * A changed row no longer matches its hash, a deleted one leaves a gap in seq or a prev_hash that
 * names no row, and deleting the newest rows leaves the chain short of its head (access_log_heads).
 */
import type { Db } from '../db/index.ts';
import { entryHash, GENESIS } from './entry.ts';
import { chainedBusinesses, chainedPage, chainHead } from './store.ts';

export interface ChainReport {
  business_id: string;
  entries: number;
  ok: boolean;
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

export async function verifyChain(db: Db, businessId: string): Promise<ChainReport> {
  const head = await chainHead(db, businessId);
  let expectedSeq = 1;
  let prev = GENESIS;
  const fail = (seq: number, entryId: string | null, reason: string): ChainReport => ({
    business_id: businessId,
    entries: expectedSeq - 1,
    ok: false,
    broken: { seq, entry_id: entryId, reason },
  });
  for (;;) {
    const rows = await chainedPage(db, businessId, expectedSeq - 1, PAGE);
    for (const row of rows) {
      if (row.seq !== expectedSeq) return fail(expectedSeq, null, `entry ${expectedSeq} is missing (the next is ${row.seq})`);
      if (row.prev_hash !== prev) return fail(row.seq, row.id, 'prev_hash is not the hash of the previous entry');
      if (entryHash(row, row.seq, row.prev_hash) !== row.hash) return fail(row.seq, row.id, 'the entry does not match its hash (changed)');
      prev = row.hash;
      expectedSeq += 1;
    }
    if (rows.length < PAGE) break;
  }
  const entries = expectedSeq - 1;
  if (!head) {
    return entries === 0 ? { business_id: businessId, entries, ok: true } : fail(1, null, 'the chain has no head record');
  }
  if (head.seq !== entries) return fail(entries + 1, null, `the chain ends at ${entries} but its head is at ${head.seq} (entries deleted)`);
  if (head.hash !== prev) return fail(entries, null, 'the last entry is not the head of the chain');
  return { business_id: businessId, entries, ok: true };
}
