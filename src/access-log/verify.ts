/**
 * `cps audit verify`: walks each business's chain from its first entry and recomputes every link.
 * A changed row no longer matches its hash, a deleted one leaves a gap in seq or a prev_hash that
 * names no row, and deleting the newest rows leaves the chain short of its head (access_log_heads).
 * Once retention pruned the oldest entries, the walk starts from the last pruned one's seq and hash
 * (access_log_pruned, see prune.ts): deleting the first entry left after it is a gap like any other.
 * The head and the anchor carry seals only the master key makes (seal.ts): a head moved back over
 * deleted newest entries, or an anchor written past deleted oldest ones, does not match its seal; an
 * anchor through entries younger than the retention period is refused too. Every business of the
 * businesses table is reported; each has a head from its creation on (BusinessService opens the
 * chain), so one without a head lost it with its chain.
 */
import type { Db } from '../db/index.ts';
import { entryHash, GENESIS } from './entry.ts';
import { ChainSeal } from './seal.ts';
import { anchorSealed, chainedPage, chainHead, knownBusinesses, prunedAnchor } from './store.ts';

const DAY_MS = 86_400_000;

/** What verify checks the chains' ends with: the seal's key, and the access log's retention period. */
export interface ChainCheck {
  seal: ChainSeal;
  accessLogDays: number;
}

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

export async function verifyChains(db: Db, check: ChainCheck, businessId?: string): Promise<ChainReport[]> {
  const businesses = businessId === undefined ? await knownBusinesses(db) : [businessId];
  const reports: ChainReport[] = [];
  for (const business of businesses) reports.push(await verifyChain(db, check, business));
  return reports;
}

/**
 * Checks the chain up to its head as read first: entries chained while the walk runs are past it and
 * wait for the next run. A prune that moves the anchor under the walk restarts it from the new anchor.
 */
export async function verifyChain(db: Db, check: ChainCheck, businessId: string, restarts = 3): Promise<ChainReport> {
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
  if (anchor && !anchorSealed(check.seal, businessId, anchor)) return fail(anchor.seq, null, 'the pruning anchor does not match its seal (forged)');
  if (anchor && anchor.through_at !== null && anchor.through_at >= Date.now() - check.accessLogDays * DAY_MS) {
    return fail(anchor.seq, null, 'the pruning anchor covers entries not yet due for pruning');
  }
  walk: for (;;) {
    const rows = await chainedPage(db, businessId, expectedSeq - 1, PAGE);
    for (const row of rows) {
      if (row.seq > last) break walk;
      if (row.seq !== expectedSeq) {
        const moved = expectedSeq === first && restarts > 0 && (await prunedAnchor(db, businessId))?.seq !== anchor?.seq;
        if (moved) return verifyChain(db, check, businessId, restarts - 1);
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
    // Created since the head was read?
    if (restarts > 0 && (await chainHead(db, businessId))) return verifyChain(db, check, businessId, restarts - 1);
    return fail(end === 0 ? (anchor?.seq ?? 0) : 1, null, 'the chain has no head record (deleted, with its entries if none are left)');
  }
  if (head.seq !== end) return fail(end + 1, null, `the chain ends at ${end} but its head is at ${head.seq} (entries deleted)`);
  if (head.hash !== prev) return fail(end, null, 'the last entry is not the head of the chain');
  if (!ChainSeal.matches(head.mac, check.seal.head({ business_id: businessId, seq: head.seq, hash: head.hash }))) {
    return fail(end, null, 'the head does not match its seal (moved without the master key)');
  }
  return { business_id: businessId, entries, ok: true, ...pruned };
}
