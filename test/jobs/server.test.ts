/** The workers in real `cps serve` processes: started by CPS_WORKERS, one process per SQLite file, stopped by SIGTERM. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, DIALECT, type TestDatabase } from '../support.ts';
import { startServerProcess } from '../process.ts';
import { until } from './support.ts';

describe(`job workers in cps serve (${DIALECT})`, () => {
  let database: TestDatabase;
  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => database.drop());

  it('start in every process (on SQLite in one, the other says why) and stop on SIGTERM', async () => {
    const env = { CPS_DATA_DIR: database.dataDir, CPS_WORKERS: '1', ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}) };
    const first = await startServerProcess(env);
    await until(() => first.output().includes('job workers started'));
    const second = await startServerProcess(env);
    if (DIALECT === 'sqlite') {
      await until(() => second.output().includes('another process runs the job workers for this SQLite database; this one does not'));
      assert.ok(!second.output().includes('job workers started'));
    } else {
      await until(() => second.output().includes('job workers started'));
    }
    for (const server of [first, second]) server.child.kill('SIGTERM');
    assert.deepEqual(await Promise.all([first.exited, second.exited]), [0, 0]);
  });
});
