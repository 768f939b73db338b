/**
 * An access log entry and its link in the chain. Each business's entries form one chain: entry n
 * holds the hash of entry n-1 (prev_hash) and its own hash over every field and that link, so that
 * changing or deleting a row breaks the chain at that row.
 */
import { createHash } from 'node:crypto';
import type { AccessLogTable } from '../db/schema.ts';

/** The chain of the operator's accesses that name no business (the admin API across businesses). */
export const OPERATOR_CHAIN = '*';

/** The prev_hash of a chain's first entry. */
export const GENESIS = '0'.repeat(64);

export type AuditAction = 'read' | 'list' | 'search' | 'create' | 'update' | 'delete' | 'merge' | 'send' | 'export' | 'erase';

/** An entry as written, before it is chained (the chain's columns come with the chaining). */
export type AuditEntry = Omit<AccessLogTable, 'seq' | 'prev_hash' | 'hash' | 'action' | 'with_change'> & {
  action: AuditAction;
  with_change: number;
};

/** What the answer adds to an entry written in the transaction of its change. */
export interface AuditCompletion {
  id: string;
  status: number;
  resource_id: string | null;
  patient_ref: string | null;
  result_count: number | null;
}

export interface ChainedEntry extends AuditEntry {
  seq: number;
  prev_hash: string;
  hash: string;
}

/**
 * `record` with every string made storable as it is: a lone surrogate, which the databases would store
 * as U+FFFD, and NUL, which PostgreSQL's text cannot hold, become U+FFFD, so what is hashed is what is
 * stored. Entries are built from what requests sent, refused ones included.
 */
export function storable<T extends object>(record: T): T {
  let copy: Record<string, unknown> | null = null;
  for (const [key, value] of Object.entries(record)) {
    if (typeof value !== 'string') continue;
    const clean = value.toWellFormed().replaceAll('\u0000', '\uFFFD');
    if (clean !== value) (copy ??= { ...(record as Record<string, unknown>) })[key] = clean;
  }
  return (copy ?? record) as T;
}

const HASH_VERSION = 1;

/** The hash of an entry at position `seq` after `prevHash`: every stored field, in a fixed order. */
export function entryHash(entry: AuditEntry, seq: number, prevHash: string): string {
  const fields = [
    HASH_VERSION,
    entry.business_id,
    seq,
    prevHash,
    entry.id,
    entry.at,
    entry.client_id,
    entry.operation,
    entry.action,
    entry.resource_type,
    entry.resource_id,
    entry.patient_ref,
    entry.status,
    entry.request_id,
    entry.source_address,
    entry.filter,
    entry.result_count,
    entry.with_change,
  ];
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex');
}
