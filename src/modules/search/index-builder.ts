/**
 * Worker thread entry: builds the search index from the database and writes its snapshot, for a
 * process that found no usable snapshot or has a rebuild to make (see Catalogue). Building a quarter of a million products
 * leaves a few hundred megabytes of short-lived garbage behind; in a worker it goes when the worker
 * exits, instead of staying in the server's heap, and the server's event loop stays free meanwhile.
 */
import { workerData } from 'node:worker_threads';
import { openStorage } from '../../db/index.ts';
import { createLogger } from '../../logger.ts';
import { Catalogue } from './catalogue.ts';

export interface IndexBuilderData {
  databaseUrl: string | null;
  dataDir: string;
  snapshotFile: string;
  logLevel: string;
}

const data = workerData as IndexBuilderData;
const storage = openStorage({ databaseUrl: data.databaseUrl, dataDir: data.dataDir, poolSize: 1 });
try {
  const catalogue = new Catalogue(storage.db, createLogger(data.logLevel), { builtin: false, snapshotFile: data.snapshotFile, readSnapshot: false, pollIntervalMs: 3_600_000 });
  await catalogue.start();
  // Waits for the snapshot to be on disk.
  await catalogue.stop();
} finally {
  await storage.destroy();
}
