/** The real process: migrations from empty, the demo business, the CLI, readiness and SIGTERM. */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createTestDatabase, DIALECT, type TestDatabase } from './support.ts';
import { runCli, startServerProcess } from './process.ts';

describe(`cps process (${DIALECT})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  before(async () => {
    database = await createTestDatabase();
    env = { CPS_DATA_DIR: database.dataDir, CPS_WORKERS: '0', ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}) };
  });
  after(async () => database.drop());

  it('migrates from empty, twice without harm', async () => {
    const first = await runCli(['migrate'], env);
    assert.equal(first.code, 0, first.stderr);
    const applied = JSON.parse(first.stdout).applied as string[];
    assert.ok(applied.includes('0001_foundation'));
    assert.equal(JSON.parse(first.stdout).database, DIALECT);
    // A catalogue this small keeps no index snapshot in the database.
    assert.equal(JSON.parse(first.stdout).index_snapshot_stored, false);
    const second = await runCli(['migrate'], env);
    assert.deepEqual(JSON.parse(second.stdout).applied, []);
  });

  it('creates businesses and clients from the CLI, printing JSON', async () => {
    const business = await runCli(['business', 'create', '--name', 'CLI Clinic'], env);
    assert.equal(business.code, 0, business.stderr);
    const created = JSON.parse(business.stdout);
    assert.match(created.business_id, /^biz_/);
    assert.match(created.client_secret, /^cs_/);
    const client = await runCli(['client', 'create', '--business', created.business_id, '--scope', 'search', '--scope', 'cases:read'], env);
    assert.equal(client.code, 0, client.stderr);
    assert.deepEqual(JSON.parse(client.stdout).scopes, ['search', 'cases:read']);
    const bad = await runCli(['client', 'create', '--business', created.business_id, '--scope', 'nope'], env);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /Unknown scope/);
    const usage = await runCli(['business', 'create'], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--name/);
  });

  it('stops with a message naming a bad variable', async () => {
    const result = await runCli(['serve'], { ...env, PORT: 'abc' });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /PORT/);
    const production = await runCli(['serve'], { ...env, CPS_ENV: 'production' });
    assert.equal(production.code, 1);
    assert.match(production.stderr, /CPS_JWT_PRIVATE_KEY/);
  });

  it('serves, logs in with the demo credentials when the database is empty, and shuts down on SIGTERM', async () => {
    const fresh = await createTestDatabase();
    try {
      const server = await startServerProcess({
        CPS_DATA_DIR: fresh.dataDir,
        CPS_WORKERS: '0',
        ...(fresh.databaseUrl ? { DATABASE_URL: fresh.databaseUrl } : {}),
      });
      const file = path.join(fresh.dataDir, 'demo-credentials.json');
      assert.ok(existsSync(file));
      assert.equal(statSync(file).mode & 0o777, 0o600);
      const demo = JSON.parse(readFileSync(file, 'utf8'));
      assert.ok(!server.output().includes(demo.client_secret), 'the secret is not logged');
      const login = await fetch(`${server.url}/connect-auth/v1/account/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: demo.client_id, client_secret: demo.client_secret }),
      });
      assert.equal(login.status, 200);
      const pair = (await login.json()) as { access_token: string; refresh_token: string };
      // A slow request in flight when SIGTERM arrives still completes.
      const inFlight = fetch(`${server.url}/connect-auth/v1/account/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: demo.client_id, client_secret: demo.client_secret }),
      });
      await new Promise((resolve) => setTimeout(resolve, 5));
      server.child.kill('SIGTERM');
      assert.equal((await inFlight).status, 200);
      assert.equal(await server.exited, 0);
      const log = server.output();
      assert.match(log, /shut down cleanly/);
      for (const secret of [pair.access_token, pair.refresh_token, demo.client_secret]) assert.ok(!log.includes(secret));
      for (const line of log.trim().split('\n')) JSON.parse(line);
    } finally {
      await fresh.drop();
    }
  });
});

describe(`several processes on one database (${DIALECT})`, () => {
  it('start together on an empty database: migrations run once, one demo business', async () => {
    const database = await createTestDatabase();
    try {
      const env = { CPS_DATA_DIR: database.dataDir, CPS_WORKERS: '0', ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}) };
      const servers = await Promise.all([startServerProcess(env), startServerProcess(env), startServerProcess(env)]);
      const { openStorage } = await import('../src/db/index.ts');
      const storage = openStorage({ databaseUrl: database.databaseUrl, dataDir: database.dataDir });
      try {
        const businesses = await storage.db.selectFrom('businesses').selectAll().execute();
        assert.equal(businesses.length, 1);
        assert.equal(businesses[0]!.name, 'Demo Clinic');
        const clients = await storage.db.selectFrom('api_clients').selectAll().execute();
        assert.equal(clients.length, 1);
        const demo = JSON.parse(readFileSync(path.join(database.dataDir, 'demo-credentials.json'), 'utf8'));
        assert.equal(demo.client_id, clients[0]!.id);
        // Left at the default CPS_PUBLIC_URL (http://HOST:PORT), each has its own issuer: the later starts say so.
        const warned = servers.filter((server) => server.output().includes('different CPS_PUBLIC_URL with the same signing key'));
        assert.ok(warned.length >= 1, servers.map((server) => server.output()).join('\n'));
      } finally {
        await storage.destroy();
      }
      for (const server of servers) server.child.kill('SIGTERM');
      assert.deepEqual(await Promise.all(servers.map((s) => s.exited)), [0, 0, 0]);
    } finally {
      await database.drop();
    }
  });
});
