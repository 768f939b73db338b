/**
 * The builder process itself (the child that builder-parent.ts forks): builds the search index from
 * the database and writes its snapshot, for a server that found no usable snapshot or has a rebuild
 * to make, which then reads the file. Building a quarter of a million products takes a few hundred megabytes, most of it garbage
 * at the end; in a process of its own all of it goes back to the system when the process exits (a
 * worker thread's did not: the server stayed at 370 to 440 MB resident), and the server's event loop
 * stays free meanwhile. It writes the snapshot to the database too when the server asks (a large
 * catalogue). Its task comes as one IPC message, possibly long after it started (a spare). A builder whose server went away finishes
 * and writes the snapshot, for the next start to read; one killed while writing leaves a temporary
 * file that a later write removes.
 */
import { openStorage } from '../../../db/index.ts';
import { createLogger } from '../../../logger.ts';
import { buildSnapshot } from './snapshot-from-database.ts';
import type { IndexBuilderData } from './builder-parent.ts';

async function build(data: IndexBuilderData): Promise<void> {
  const storage = openStorage({ databaseUrl: data.databaseUrl, dataDir: data.dataDir, poolSize: 1 });
  try {
    // The server reads the file as soon as it is written; storing it in the database (a second or so
    // at 250,000 products) goes on meanwhile.
    await buildSnapshot(storage.db, createLogger(data.logLevel), data.snapshotFile, data.storedSnapshotMinDrugs, () =>
      process.send?.('snapshot file written'),
    );
  } finally {
    await storage.destroy();
  }
}

let tasked = false;
// A spare builder (forkSpareBuilder) that is let go before any task has nothing to do.
process.once('disconnect', () => {
  if (!tasked) process.exit(0);
});

process.once('message', (data: IndexBuilderData) => {
  tasked = true;
  build(data).then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`index builder: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
});
