import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { jobRow } from '../../../src/jobs/queue-repo.ts';
import { createLogger } from '../../../src/logger.ts';
import { RETENTION_JOB } from '../../../src/modules/retention/index.ts';
import { VERSION } from '../../../src/version.ts';
import { freePort } from '../../net.ts';
import { runCli } from '../../process.ts';
import { ADMIN_TOKEN, createTestApp, DIALECT, type TestApp } from '../../support.ts';

describe(`operations (${DIALECT})`, () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t.close());

  it('/health and /ready answer 200', async () => {
    assert.equal((await t.app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
    const ready = await t.app.inject({ method: 'GET', url: '/ready' });
    assert.equal(ready.statusCode, 200);
    assert.equal(ready.json().checks.database, true);
  });

  it('/ready checks the Redis of CPS_REDIS_URL when one is configured', async () => {
    assert.equal((await t.app.inject({ method: 'GET', url: '/ready' })).json().checks.redis, undefined, 'none configured, none checked');
    const up = await createTestApp({ env: { CPS_REDIS_URL: 'redis://127.0.0.1:6379' } });
    const down = await createTestApp({ env: { CPS_REDIS_URL: `redis://127.0.0.1:${await freePort()}` } });
    try {
      const ready = await up.app.inject({ method: 'GET', url: '/ready' });
      assert.deepEqual([ready.statusCode, ready.json().checks.redis], [200, true]);
      const refused = await down.app.inject({ method: 'GET', url: '/ready' });
      assert.deepEqual([refused.statusCode, refused.json().status, refused.json().checks.redis], [503, 'not ready', false]);
    } finally {
      await up.close();
      await down.close();
    }
  });

  it('/ready answers 503 while a module is not loaded', async () => {
    let loaded = false;
    t.ctx.readiness.set('probe', () => loaded);
    assert.equal((await t.app.inject({ method: 'GET', url: '/ready' })).statusCode, 503);
    loaded = true;
    assert.equal((await t.app.inject({ method: 'GET', url: '/ready' })).statusCode, 200);
    t.ctx.readiness.delete('probe');
  });

  it('/metrics has the request duration histogram by route, method and status', async () => {
    await t.app.inject({ method: 'GET', url: '/health' });
    const metrics = await t.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(metrics.statusCode, 200);
    assert.match(String(metrics.headers['content-type']), /text\/plain/);
    assert.match(metrics.body, /http_request_duration_seconds_bucket\{le="0\.005",route="\/health",method="GET",status="200"\}/);
    assert.match(metrics.body, /process_resident_memory_bytes/);
  });

  it("the admin API's operations: the queue's depth by kind and status, and retention's last run", async () => {
    const operations = () => t.app.inject({ method: 'GET', url: '/admin/v1/operations', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal((await t.app.inject({ method: 'GET', url: '/admin/v1/operations' })).statusCode, 401);
    const db = t.ctx.storage.db;
    const before = (await operations()).json();
    const count = (answer: { queue: Array<{ kind: string; status: string; count: number }> }, kind: string) =>
      answer.queue.find((row) => row.kind === kind && row.status === 'pending')?.count ?? 0;
    await db
      .insertInto('jobs')
      .values([jobRow({ kind: 'test.depth', payload: {} }), jobRow({ kind: 'test.depth', payload: {} })])
      .execute();
    const finishedAt = Date.now() - 60_000;
    await db
      .insertInto('jobs')
      .values([
        { ...jobRow({ kind: RETENTION_JOB, payload: {} }), status: 'succeeded', finished_at: finishedAt - 3_600_000 },
        { ...jobRow({ kind: RETENTION_JOB, payload: {} }), status: 'succeeded', finished_at: finishedAt },
      ])
      .execute();
    const answer = await operations();
    assert.equal(answer.statusCode, 200, answer.body);
    assert.equal(count(answer.json(), 'test.depth'), count(before, 'test.depth') + 2);
    assert.deepEqual(answer.json().retention.last_run, { status: 'succeeded', finished_at: finishedAt, last_error: null });
  });

  it("the admin API's operations: the last runs of cps backup as the command records them (on PostgreSQL, its refusal)", async () => {
    const backups = async () =>
      (await t.app.inject({ method: 'GET', url: '/admin/v1/operations', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json().backups;
    assert.deepEqual(await backups(), { runs: [], last_succeeded: null });
    const directory = mkdtempSync(path.join(tmpdir(), 'cps-ops-backup-'));
    try {
      const target = path.join(directory, 'nightly.sqlite');
      const env = { CPS_DATA_DIR: t.database.dataDir, DATABASE_URL: t.database.databaseUrl ?? '', CPS_ADMIN_TOKEN: ADMIN_TOKEN, LOG_LEVEL: 'silent' };
      const backup = await runCli(['backup', target], env);
      const { runs, last_succeeded } = await backups();
      assert.equal(runs.length, 1);
      const [run] = runs;
      assert.ok(run.started_at <= run.finished_at && run.finished_at <= Date.now());
      if (DIALECT === 'sqlite') {
        assert.equal(backup.code, 0, backup.stderr);
        assert.deepEqual(
          { ...run, started_at: 0, finished_at: 0 },
          {
            command: 'backup',
            started_at: 0,
            finished_at: 0,
            outcome: 'succeeded',
            bytes: statSync(target).size,
            file: 'nightly.sqlite',
            error: null,
          },
        );
        assert.deepEqual(last_succeeded, run);
      } else {
        assert.equal(backup.code, 1);
        assert.deepEqual(
          { ...run, started_at: 0, finished_at: 0, error: null },
          { command: 'backup', started_at: 0, finished_at: 0, outcome: 'failed', bytes: null, file: 'nightly.sqlite', error: null },
        );
        assert.match(run.error, /^cps backup copies the embedded SQLite database; with DATABASE_URL \(PostgreSQL\) use pg_dump -Fc/);
        assert.equal(last_succeeded, null);
      }
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('/openapi.json is OpenAPI 3.1 with both security schemes and the webhook', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(response.statusCode, 200);
    const doc = response.json();
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '1.0.0', "contract 9: info.version 1.0.0 (the interface's version, not the package's)");
    assert.equal(doc.info.title, 'OpenCPS — Clinical Practice Service');
    assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['authHeader', 'bearerAuth']);
    assert.ok(doc.webhooks['external_review.request'].post.requestBody);
    const login = doc.paths['/connect-auth/v1/account/login'].post;
    assert.equal(login.requestBody.content['application/json'].schema.required.length, 2);
    assert.deepEqual(doc.paths['/admin/v1/businesses'].post.security, [{ bearerAuth: [] }]);
    assert.equal(doc.paths['/metrics'], undefined);
    const operations = Object.values(doc.paths as Record<string, object>).flatMap((item) =>
      Object.keys(item).filter((method) => ['get', 'put', 'post', 'patch', 'delete'].includes(method)),
    ).length;
    const subscribe = doc.paths['/notification/v1/connect/webhook/subscriptions'].post.requestBody.content['application/json'].schema;
    assert.match(subscribe.properties.event_names.description, /Without it, only external_review\.request/);
    const readme = readFileSync(path.resolve(import.meta.dirname, '../../../CONTRIBUTING.md'), 'utf8');
    assert.equal(Number(readme.match(/for each of its (\d+) operations/)?.[1]), operations, "CONTRIBUTING.md's count of operations");
  });

  it('/docs serves an interactive reference with local assets only', async () => {
    const page = await t.app.inject({ method: 'GET', url: '/docs/' });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /swagger/i);
    assert.ok(!/https?:\/\/(?!localhost)[^"']*\.(js|css)/.test(page.body), 'no CDN assets');
    assert.match(page.body, new RegExp(`<title>OpenCPS ${VERSION.replaceAll('.', '\\.')} — API reference</title>`));
    assert.doesNotMatch(String(page.headers['content-security-policy']), /upgrade-insecure-requests/, 'assets stay on the scheme the page came by');
    const json = await t.app.inject({ method: 'GET', url: '/docs/json' });
    assert.equal(json.json().openapi, '3.1.0');
  });

  it('logs redact tokens, secrets, private keys and mobile numbers', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = createLogger('info', sink);
    logger.info(
      {
        req: { headers: { authorization: 'Bearer eyJsecret', auth: 'eyJraw' } },
        body: {
          client_secret: 'cs_secret',
          refresh_token: 'rt_secret',
          sa_key: { private_key: 'PEMSECRET' },
          patient_details: { mobile: '+919876543210' },
        },
        client_secret: 'cs_top',
        mobile: '+911234567890',
      },
      'probe',
    );
    const text = lines.join('');
    for (const secret of ['eyJsecret', 'eyJraw', 'cs_secret', 'rt_secret', 'PEMSECRET', '+919876543210', 'cs_top', '+911234567890']) {
      assert.ok(!text.includes(secret), `${secret} leaked: ${text}`);
    }
    assert.match(text, /\[redacted\]/);
  });
});
