/**
 * The erasure record (docs/4-operations.md "Backups"): an append-only file in the data directory,
 * outside the database, so that a restore of an older copy (cps restore, pg_restore) can erase again
 * the patients erased after it. A line is written and fsync'd inside the erasure's transaction, before
 * it commits: a crash between the two leaves a line for an erasure that was asked for and not done,
 * which re-applying does (erasing is idempotent). It names no one: the business, the patients'
 * service and partner ids as keyed digests, when, and which client asked.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { makePrivateDir, PRIVATE_FILE_MODE } from '../../security/data-dir.ts';

export const ERASURE_RECORD_FILE = 'erasures.log';

export interface ErasureRecordLine {
  business_id: string;
  client_id: string;
  /** ms */
  erased_at: number;
  /** Keyed digests (HMAC-SHA-256 under a key derived from the master key) of the service ids erased. */
  patient_refs: string[];
  /** Keyed digests of the partner ids they had: the markers the database keeps (patients.erased_ref). */
  partner_refs: string[];
  /** The digest of a fixed text under the same key: a line written under another master key is told apart. */
  key_check: string;
}

export function erasureRecordPath(dataDir: string): string {
  return path.join(dataDir, ERASURE_RECORD_FILE);
}

/** Appends one line and fsyncs it (and the directory when the file is new). */
export function appendErasureRecord(dataDir: string, line: ErasureRecordLine): void {
  makePrivateDir(dataDir);
  const file = erasureRecordPath(dataDir);
  const created = !existsSync(file);
  const fd = openSync(file, 'a', PRIVATE_FILE_MODE);
  try {
    writeSync(fd, `${JSON.stringify(line)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (created) {
    const dir = openSync(dataDir, 'r');
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
}

/** Every whole line of the record, oldest first; a line torn by a crash while it was written is skipped. */
export function readErasureRecord(dataDir: string): ErasureRecordLine[] {
  const file = erasureRecordPath(dataDir);
  if (!existsSync(file)) return [];
  const lines: ErasureRecordLine[] = [];
  for (const text of readFileSync(file, 'utf8').split('\n')) {
    if (text.trim() === '') continue;
    try {
      const line = JSON.parse(text) as ErasureRecordLine;
      if (typeof line.business_id === 'string' && Array.isArray(line.patient_refs)) lines.push(line);
    } catch {
      // A torn last line: its erasure had not committed (the line is written before the commit).
    }
  }
  return lines;
}
