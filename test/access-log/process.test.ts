/**
 * A server killed with SIGKILL right after answering loses no entry: the reads' entries (and what the
 * answer of a change adds) are in the write-ahead file before the answer goes, and the next process
 * on the data directory writes them. The killed server's batches are held back (a one-hour flush
 * interval), so only the write-ahead file can bring them.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openStorage, type Storage } from '../../src/db/index.ts';
import { runCli, startServerProcess } from '../process.ts';
import { createTestDatabase, DIALECT, type TestDatabase } from '../support.ts';

describe(`access log across a SIGKILL (${DIALECT})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let storage: Storage;
  before(async () => {
    database = await createTestDatabase();
    env = {
      CPS_DATA_DIR: database.dataDir,
      CPS_WORKERS: '0',
      LOG_LEVEL: 'warn',
      ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    };
  });
  after(async () => {
    await storage?.destroy();
    await database.drop();
  });

  it('every answered request has its entry after the restart, and the chain verifies', async () => {
    const killed = await startServerProcess({ ...env, CPS_AUDIT_FLUSH_MS: '3600000', CPS_AUDIT_FLUSH_ENTRIES: '100000' });
    const demo = JSON.parse(readFileSync(path.join(database.dataDir, 'demo-credentials.json'), 'utf8'));
    const login = await fetch(`${killed.url}/connect-auth/v1/account/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: demo.client_id, client_secret: demo.client_secret }),
    });
    const headers = {
      authorization: `Bearer ${((await login.json()) as { access_token: string }).access_token}`,
      'content-type': 'application/json',
    };
    const created = await fetch(`${killed.url}/dr/v1/patient`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ first_name: 'Meera', gender: 'F', age: 30 }),
    });
    assert.equal(created.status, 201);
    const patientId = ((await created.json()) as { patient_id: string }).patient_id;
    const answered = [created.headers.get('x-request-id')!];
    const reads = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        fetch(`${killed.url}${i % 2 ? `/dr/v1/patient/${patientId}` : '/profiles/v1/patient/minified/'}`, { headers }),
      ),
    );
    for (const response of reads) {
      assert.equal(response.status, 200);
      answered.push(response.headers.get('x-request-id')!);
    }
    killed.child.kill('SIGKILL');
    await killed.exited;

    storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
    const before = await storage.db.selectFrom('access_log').select(['request_id', 'status', 'with_change']).execute();
    // Only the change's own entry reached the database (in its transaction), without its status.
    assert.deepEqual(before, [{ request_id: answered[0], status: null, with_change: 1 }]);

    const restarted = await startServerProcess(env);
    restarted.child.kill('SIGTERM');
    assert.equal(await restarted.exited, 0);
    const after = await storage.db.selectFrom('access_log').select(['request_id', 'status', 'seq']).execute();
    const byRequest = new Map(after.map((row) => [row.request_id, row]));
    for (const id of answered) assert.ok(byRequest.get(id)?.seq !== null && byRequest.has(id), `entry of ${id}`);
    assert.equal(byRequest.get(answered[0]!)?.status, 201);
    assert.ok(after.every((row) => row.status !== null));
    const verify = await runCli(['audit', 'verify'], env);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  });
});
