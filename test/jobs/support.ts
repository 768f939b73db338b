/** Shared by the jobs tests: a storage of its own per test, and a queue over it. */
import { Registry } from 'prom-client';
import { openStorage, type Storage } from '../../src/db/index.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/logger.ts';
import { JobQueue, type JobQueueOptions } from '../../src/jobs/queue.ts';
import { randomBytes } from 'node:crypto';
import { ChainSeal } from '../../src/access-log/seal.ts';
import { BusinessService } from '../../src/modules/businesses/index.ts';
import { createTestDatabase, type TestDatabase } from '../support.ts';

export interface JobsFixture {
  database: TestDatabase;
  storage: Storage;
  registry: Registry;
  /** A fresh queue per test (see reset). */
  queue: JobQueue;
  businessId: string;
  /** Stops the queue, empties the jobs and events tables and starts over with a new queue. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** One database per test file (creating a PostgreSQL database is slow); `reset` between tests. */
export async function createJobsFixture(options: JobQueueOptions = {}): Promise<JobsFixture> {
  const database = await createTestDatabase();
  const storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir, poolSize: 5 });
  await migrateToLatest(storage.db);
  const { business_id: businessId } = await new BusinessService({ db: storage.db, chainSeal: new ChainSeal(randomBytes(32)) }).createBusiness(
    'Jobs Test',
  );
  const newQueue = () => {
    const registry = new Registry();
    return { registry, queue: new JobQueue(storage, createLogger('silent'), registry, { pollMs: 100, ...options }) };
  };
  const fixture: JobsFixture = {
    database,
    storage,
    ...newQueue(),
    businessId,
    reset: async () => {
      await fixture.queue.stop(0);
      await storage.db.deleteFrom('jobs').execute();
      await storage.db.deleteFrom('events').execute();
      await storage.db.deleteFrom('job_locks').execute();
      Object.assign(fixture, newQueue());
    },
    close: async () => {
      await fixture.queue.stop(0);
      await storage.destroy();
      await database.drop();
    },
  };
  return fixture;
}

/** Waits (without a deadline of its own: the test's timeout bounds it) until `check` holds. */
export async function until(check: () => Promise<boolean> | boolean, everyMs = 20): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, everyMs));
}

/** A promise with its resolver, for handlers the test releases. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
