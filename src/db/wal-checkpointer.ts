/**
 * SQLite: folds the write-ahead log into the database file from a worker thread. better-sqlite3
 * runs on the event loop, and a checkpoint started by a commit (every 1000 pages by default) writes
 * and fsyncs megabytes while every request waits: with document files in the database that was the
 * largest cost of an upload. The serving connection leaves checkpoints to this thread, which runs a
 * PASSIVE one (it never blocks a writer) every CHECK_EVERY_MS; the serving connection keeps a far
 * larger automatic limit as a backstop (WAL_BACKSTOP_PAGES) should this thread fall behind or fail.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Pages of log the serving connection lets build before it checkpoints itself. */
export const WAL_BACKSTOP_PAGES = 16_384;
const CHECK_EVERY_MS = 100;

// Plain JavaScript, so that the thread loads no TypeScript support: it costs memory in each isolate.
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const SQLite = require(workerData.driver);
const database = new SQLite(workerData.file);
database.pragma('busy_timeout = 1000');
const timer = setInterval(() => {
  try { database.pragma('wal_checkpoint(PASSIVE)'); } catch {}
}, ${CHECK_EVERY_MS});
parentPort.once('close', () => { clearInterval(timer); database.close(); });
`;

/** Starts the checkpointing thread for `file`; stop() ends it. */
export function startWalCheckpointer(file: string): { stop(): Promise<void> } {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(THREAD, { eval: true, workerData: { file, driver }, resourceLimits: { maxOldGenerationSizeMb: 16 } });
  worker.unref();
  // A failing thread leaves the backstop in place; nothing else depends on it.
  worker.on('error', () => {});
  return {
    stop: async () => {
      await worker.terminate();
    },
  };
}
