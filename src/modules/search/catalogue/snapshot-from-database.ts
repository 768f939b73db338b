/**
 * Building a snapshot from the database outside a serving catalogue, in whichever process calls it:
 * the builder process's task (builder-child.ts), and `cps import`'s and `cps migrate`'s last step for
 * a large catalogue.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../../db/schema.ts';
import { rebuildDueAfter } from '../index/engine.ts';
import * as repo from '../repo.ts';
import { Catalogue, LARGE_CATALOGUE_DRUGS } from './catalogue.ts';
import { snapshotKey } from './snapshot-key.ts';

/**
 * Builds the index here from the database and writes its snapshot to the file and, for a large
 * catalogue, to the database.
 */
export async function buildSnapshot(
  db: Kysely<Database>,
  logger: Logger,
  snapshotFile: string,
  storedSnapshotMinDrugs: number | null,
  onSnapshotFileWritten?: () => void,
): Promise<void> {
  const catalogue = new Catalogue(db, logger, {
    builtin: false,
    snapshotFile,
    readSnapshot: false,
    storedSnapshotMinDrugs,
    onSnapshotFileWritten,
    pollIntervalMs: 3_600_000,
  });
  await catalogue.start();
  // Waits for the snapshot to be written.
  await catalogue.stop();
}

/**
 * After an import: when the catalogue is large and the snapshot stored in the database is missing, or
 * so far behind that a server starting from it would rebuild, builds the index and stores a new one,
 * so the next server to start reads it instead of building for seconds. Whether it did.
 */
export async function refreshStoredSnapshot(
  db: Kysely<Database>,
  logger: Logger,
  snapshotFile: string,
  minDrugs = LARGE_CATALOGUE_DRUGS,
): Promise<boolean> {
  const drugs = await repo.drugCount(db);
  if (drugs < minDrugs) return false;
  const stored = await repo.storedSnapshotVersion(db, snapshotKey());
  if (stored !== null && !rebuildDueAfter(drugs, await repo.drugCount(db, stored))) return false;
  await buildSnapshot(db, logger, snapshotFile, minDrugs);
  return true;
}
