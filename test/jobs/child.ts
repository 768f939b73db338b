/**
 * A worker process for the multi-process tests: a queue over CHILD_DATABASE_URL (or the SQLite file
 * in CHILD_DATA_DIR) with two kinds. Writes `ready`, `ran <id>` and `started <id>` lines on stdout,
 * its JSON log on stderr, and stops on SIGTERM.
 */
import { Registry } from 'prom-client';
import { openStorage } from '../../src/db/index.ts';
import { JobQueue } from '../../src/jobs/queue.ts';
import { createLogger } from '../../src/logger.ts';
import pino from 'pino';

const env = process.env;
const storage = openStorage({ databaseUrl: env.CHILD_DATABASE_URL || null, dataDir: env.CHILD_DATA_DIR!, poolSize: 5 });
const logger = createLogger('info', pino.destination(2));
const queue = new JobQueue(storage, logger, new Registry(), {
  pollMs: Number(env.CHILD_POLL_MS ?? 200),
  lockTtlMs: Number(env.CHILD_LOCK_TTL_MS ?? 1000),
});
const leaseMs = Number(env.CHILD_LEASE_MS ?? 1000);

queue.register(
  'test.count',
  async ({ job }) => {
    await new Promise((resolve) => setTimeout(resolve, 2));
    process.stdout.write(`ran ${job.id}\n`);
  },
  { leaseMs },
);

queue.register(
  'test.block',
  async ({ job, signal }) => {
    process.stdout.write(`started ${job.id}\n`);
    await new Promise((resolve) => signal.addEventListener('abort', resolve));
    throw new Error('aborted');
  },
  { leaseMs },
);

await queue.start();
process.stdout.write(`ready working=${queue.working}\n`);

process.once('SIGTERM', async () => {
  await queue.stop(5000);
  await storage.destroy();
  process.exit(0);
});
