/**
 * Every process answers from the same catalogue: an import made by `cps import` (another process)
 * reaches a running app within 10 s, without a restart. And with CPS_REDIS_URL, processes share one
 * rate-limit bucket per client.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { buildApp, createContext } from '../../../src/app.ts';
import type { App } from '../../../src/http/app-type.ts';
import { openStorage, type Storage } from '../../../src/db/index.ts';
import { createLogger } from '../../../src/logger.ts';
import { createSearchRateLimiter } from '../../../src/modules/search/ratelimit.ts';
import { bearer, createTestApp, createTestClient, testConfig, testKeys, type TestApp } from '../../support.ts';

const CLI = new URL('../../../src/cli.ts', import.meta.url).pathname;
const run = promisify(execFile);

async function searchUntil(app: App, token: string, q: string, deadlineMs: number): Promise<any> {
  const started = Date.now();
  for (;;) {
    const response = await app.inject({ url: `/medical-db/v1/drugs-and-labs?q=${encodeURIComponent(q)}`, headers: bearer(token) });
    if (response.statusCode === 200) return { body: response.json(), ms: Date.now() - started };
    if (Date.now() - started > deadlineMs) assert.fail(`"${q}" not searchable after ${deadlineMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('catalogue changes reach every process', () => {
  let t: TestApp;
  let second: { app: App; storage: Storage };
  before(async () => {
    t = await createTestApp();
    // A second server process on the same database: its own storage, context and index.
    const config = testConfig(t.database);
    const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
    const app = await buildApp(createContext(config, storage, await testKeys(), createLogger('silent')));
    await app.ready();
    second = { app, storage };
  });
  after(async () => {
    await second.app.close();
    await second.storage.destroy();
    await t.close();
  });

  it('cps import in another process shows in both running apps within 10 s', async (context) => {
    const client = await createTestClient(t.ctx, { scopes: ['search'] });
    await searchUntil(t.app, client.token, 'qqqzzz', 0).catch(() => {}); // loaded, and the name is unknown
    const dir = mkdtempSync(path.join(tmpdir(), 'cps-fresh-'));
    context.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'drugs.ndjson');
    writeFileSync(
      file,
      `${JSON.stringify({ name: 'Freshazole 20 Tablet', manufacturer_name: 'Fresh Labs', composition: [{ salt: 'Freshazole', strength: '20mg' }], discontinued: false })}\n`,
    );
    const env = {
      ...process.env,
      CPS_DATA_DIR: t.database.dataDir,
      LOG_LEVEL: 'silent',
      ...(t.database.databaseUrl ? { DATABASE_URL: t.database.databaseUrl } : {}),
    };
    const { stdout, stderr } = await run(process.execPath, [CLI, 'import', 'drugs', file], { env });
    const summary = JSON.parse(stdout);
    assert.equal(summary.inserted, 1);
    assert.match(stderr, /import drugs \(ndjson\)/, 'progress on stderr');
    for (const app of [t.app, second.app]) {
      const { body } = await searchUntil(app, client.token, 'freshazole', 10_000);
      assert.equal(body.drugs[0].name, 'Freshazole 20 Tablet');
    }
    // An update (a discontinued mark) travels the same way.
    writeFileSync(file, `${JSON.stringify({ name: 'Freshazole 20 Tablet', manufacturer_name: 'Fresh Labs', discontinued: true })}\n`);
    await run(process.execPath, [CLI, 'import', 'drugs', file], { env });
    const started = Date.now();
    for (;;) {
      const { body } = await searchUntil(second.app, client.token, 'freshazole', 10_000);
      if (body.drugs[0].include_suggestion === false) break;
      assert.ok(Date.now() - started < 10_000, 'the update arrives within 10 s');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  });
});

describe('rate limit buckets', () => {
  it('refills at the rate and holds at most the burst (in memory)', async () => {
    let now = 1_000_000;
    const bucket = createSearchRateLimiter({ rate: 2, burst: 3, redisUrl: null, logger: createLogger('silent'), now: () => now });
    const taken = [await bucket.take('c'), await bucket.take('c'), await bucket.take('c')];
    assert.deepEqual(
      taken.map((t) => t.current),
      [1, 2, 3],
    );
    assert.deepEqual(
      taken.map((t) => t.ttl),
      [500, 1000, 1500],
      'full again after one 500 ms per token used',
    );
    const refused = await bucket.take('c');
    assert.equal(refused.current, 4);
    assert.equal(refused.ttl, 500, 'one token every 500 ms at 2/s');
    now += 250;
    assert.deepEqual(await bucket.take('c'), { current: 4, ttl: 250 }, 'half a token is no token');
    now += 250;
    assert.deepEqual(await bucket.take('c'), { current: 3, ttl: 1500 });
    assert.ok((await bucket.take('other')).current <= 3, 'buckets are per key');
  });

  it('shares one bucket between processes through Redis', async () => {
    const key = `test-${process.pid}-${Date.now()}`;
    const logger = createLogger('silent');
    const a = createSearchRateLimiter({ rate: 1, burst: 3, redisUrl: 'redis://127.0.0.1:6379', logger });
    const b = createSearchRateLimiter({ rate: 1, burst: 3, redisUrl: 'redis://127.0.0.1:6379', logger });
    try {
      await Promise.all([a.connected(), b.connected()]);
      const results = [await a.take(key), await b.take(key), await a.take(key), await b.take(key)];
      assert.deepEqual(
        results.map((r) => r.current),
        [1, 2, 3, 4],
      );
      assert.ok(results[0]!.ttl > 0 && results[0]!.ttl <= 1000, 'full again within a second of one token used');
      assert.ok(results[3]!.ttl > 0 && results[3]!.ttl <= 1000);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('answers 429 across two apps sharing Redis', async () => {
    const env = { CPS_REDIS_URL: 'redis://127.0.0.1:6379', CPS_SEARCH_RATE_LIMIT: '1', CPS_SEARCH_RATE_BURST: '2' };
    const one = await createTestApp({ env });
    const config = testConfig(one.database, env);
    const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
    const two = await buildApp(createContext(config, storage, await testKeys(), createLogger('silent')));
    await two.ready();
    try {
      const client = await createTestClient(one.ctx, { scopes: ['search'] });
      await new Promise((resolve) => setTimeout(resolve, 100)); // Redis connects
      const statuses = [];
      for (const app of [one.app, two, one.app]) {
        statuses.push((await app.inject({ url: '/medical-db/v1/drugs-and-labs?q=qqqzzz', headers: bearer(client.token) })).statusCode);
      }
      assert.deepEqual(statuses, [404, 404, 429]);
    } finally {
      await two.close();
      await storage.destroy();
      await one.close();
    }
  });
});
