import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseEnv } from 'node:util';
import { ConfigError, configWarnings, loadConfig } from '../src/config.ts';
import { loadKeys } from '../src/security/keys.ts';

const ed25519Pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
const production = {
  CPS_ENV: 'production',
  CPS_JWT_PRIVATE_KEY: ed25519Pem,
  CPS_MASTER_KEY: randomBytes(32).toString('base64'),
  CPS_ADMIN_TOKEN: randomBytes(32).toString('base64'),
  CPS_PUBLIC_URL: 'https://cps.example.org',
};

function failsNaming(env: Record<string, string>, variable: string): void {
  assert.throws(
    () => loadConfig(env),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, String(error));
      assert.equal(error.variable, variable);
      assert.ok(error.message.startsWith(variable));
      return true;
    },
  );
}

describe('config', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    assert.equal(config.env, 'development');
    assert.equal(config.port, 8080);
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.databaseUrl, null);
    assert.equal(config.dataDir, path.resolve('./data'));
    assert.equal(config.publicUrl, 'http://127.0.0.1:8080');
    assert.equal(config.timezone, 'Asia/Kolkata');
    assert.equal(config.accessTokenTtl, 1800);
    assert.equal(config.refreshTokenTtl, 30 * 86400);
    assert.equal(config.searchRateLimit, 50);
    assert.equal(config.searchRateBurst, 100);
    assert.equal(config.casesPageSize, 50);
    assert.equal(config.fcmUrl, 'https://fcm.googleapis.com');
    assert.deepEqual(config.webhookRetrySchedule, [5, 300, 1800, 7200, 18000, 36000, 36000]);
    assert.equal(config.adminToken, null);
    assert.equal(config.loginClientFailures, 10);
    assert.equal(config.loginAddressFailures, 100);
    assert.equal(config.loginFailureWindowSeconds, 60);
    assert.equal(config.loginHashConcurrency, 4);
    assert.equal(config.loginHashQueue, 64);
  });

  it('parses every variable', () => {
    const config = loadConfig({
      ...production,
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u:p@db:5432/cps',
      CPS_DATA_DIR: '/tmp/x',
      CPS_TIMEZONE: 'UTC',
      CPS_ACCESS_TOKEN_TTL: '600',
      CPS_REFRESH_TOKEN_TTL: '86400',
      CPS_SEARCH_RATE_LIMIT: '5',
      CPS_SEARCH_RATE_BURST: '10',
      CPS_REDIS_URL: 'redis://127.0.0.1:6379',
      CPS_CASES_PAGE_SIZE: '20',
      CPS_FCM_URL: 'http://127.0.0.1:9999/',
      CPS_WEBHOOK_RETRY_SCHEDULE: '1, 2,3',
      CPS_MASTER_KEY: 'ab'.repeat(32),
      CPS_LOGIN_CLIENT_FAILURES: '0',
      CPS_LOGIN_ADDRESS_FAILURES: '500',
      CPS_LOGIN_FAILURE_WINDOW_SECONDS: '300',
      CPS_LOGIN_HASH_CONCURRENCY: '0',
      CPS_LOGIN_HASH_QUEUE: '8',
    });
    assert.equal(config.loginClientFailures, 0);
    assert.equal(config.loginAddressFailures, 500);
    assert.equal(config.loginFailureWindowSeconds, 300);
    assert.equal(config.loginHashConcurrency, 0);
    assert.equal(config.loginHashQueue, 8);
    assert.equal(config.port, 9000);
    assert.equal(config.databaseUrl, 'postgres://u:p@db:5432/cps');
    assert.equal(config.masterKey?.length, 32);
    assert.equal(config.fcmUrl, 'http://127.0.0.1:9999');
    assert.deepEqual(config.webhookRetrySchedule, [1, 2, 3]);
    assert.equal(config.redisUrl, 'redis://127.0.0.1:6379');
    assert.equal(config.publicUrl, 'https://cps.example.org');
  });

  it('names the variable of a bad value', () => {
    failsNaming({ PORT: 'eighty' }, 'PORT');
    failsNaming({ PORT: '70000' }, 'PORT');
    failsNaming({ CPS_ENV: 'staging' }, 'CPS_ENV');
    failsNaming({ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL');
    failsNaming({ CPS_MASTER_KEY: 'short' }, 'CPS_MASTER_KEY');
    failsNaming({ CPS_JWT_PRIVATE_KEY: 'not a pem' }, 'CPS_JWT_PRIVATE_KEY');
    failsNaming({ CPS_TIMEZONE: 'Mars/Olympus' }, 'CPS_TIMEZONE');
    failsNaming({ CPS_WEBHOOK_RETRY_SCHEDULE: '5,soon' }, 'CPS_WEBHOOK_RETRY_SCHEDULE');
    // A delay past 30 days (one past what a due time can hold made the settle fail and the attempt run again).
    failsNaming({ CPS_WEBHOOK_RETRY_SCHEDULE: '5,9999999999999999' }, 'CPS_WEBHOOK_RETRY_SCHEDULE');
    failsNaming({ CPS_PUSH_RETRY_SCHEDULE: '2592001' }, 'CPS_PUSH_RETRY_SCHEDULE');
    failsNaming({ CPS_SEARCH_RATE_LIMIT: '0' }, 'CPS_SEARCH_RATE_LIMIT');
    failsNaming({ CPS_PUBLIC_URL: 'ftp://x' }, 'CPS_PUBLIC_URL');
    failsNaming({ CPS_ADMIN_TOKEN: 'short' }, 'CPS_ADMIN_TOKEN');
    failsNaming({ CPS_LOGIN_CLIENT_FAILURES: '-1' }, 'CPS_LOGIN_CLIENT_FAILURES');
    failsNaming({ CPS_LOGIN_ADDRESS_FAILURES: 'many' }, 'CPS_LOGIN_ADDRESS_FAILURES');
    failsNaming({ CPS_LOGIN_FAILURE_WINDOW_SECONDS: '0' }, 'CPS_LOGIN_FAILURE_WINDOW_SECONDS');
    failsNaming({ CPS_LOGIN_HASH_CONCURRENCY: '1.5' }, 'CPS_LOGIN_HASH_CONCURRENCY');
    failsNaming({ CPS_LOGIN_HASH_QUEUE: '100001' }, 'CPS_LOGIN_HASH_QUEUE');
  });

  it('reads the retention periods, keeps the access log at least a year, and refuses a bad period', () => {
    assert.deepEqual(loadConfig({}).retention, {
      accessLogDays: 365,
      jobsDays: 7,
      failedJobsDays: 30,
      eventsDays: 30,
      pushDays: 30,
      refreshTokensDays: 7,
      idempotencyKeysDays: 0,
      caseTombstonesDays: 180,
      documentTombstonesDays: 180,
      scheduleTokensDays: 90,
      intervalMinutes: 60,
      batchSize: 500,
    });
    const set = loadConfig({
      CPS_RETENTION_ACCESS_LOG_DAYS: '730',
      CPS_RETENTION_JOBS_DAYS: '2',
      CPS_RETENTION_FAILED_JOBS_DAYS: '14',
      CPS_RETENTION_EVENTS_DAYS: '90',
      CPS_RETENTION_PUSH_DAYS: '10',
      CPS_RETENTION_REFRESH_TOKENS_DAYS: '0',
      CPS_RETENTION_IDEMPOTENCY_KEYS_DAYS: '3',
      CPS_RETENTION_CASE_TOMBSTONES_DAYS: '365',
      CPS_RETENTION_SCHEDULE_TOKENS_DAYS: '30',
      CPS_RETENTION_INTERVAL_MINUTES: '15',
      CPS_RETENTION_BATCH: '1000',
    }).retention;
    assert.deepEqual(
      [set.accessLogDays, set.jobsDays, set.failedJobsDays, set.eventsDays, set.pushDays, set.refreshTokensDays, set.idempotencyKeysDays],
      [730, 2, 14, 90, 10, 0, 3],
    );
    assert.deepEqual([set.caseTombstonesDays, set.scheduleTokensDays, set.intervalMinutes, set.batchSize], [365, 30, 15, 1000]);
    failsNaming({ CPS_RETENTION_ACCESS_LOG_DAYS: '364' }, 'CPS_RETENTION_ACCESS_LOG_DAYS');
    failsNaming({ CPS_RETENTION_JOBS_DAYS: '0' }, 'CPS_RETENTION_JOBS_DAYS');
    failsNaming({ CPS_RETENTION_EVENTS_DAYS: 'thirty' }, 'CPS_RETENTION_EVENTS_DAYS');
    failsNaming({ CPS_RETENTION_CASE_TOMBSTONES_DAYS: '-1' }, 'CPS_RETENTION_CASE_TOMBSTONES_DAYS');
    failsNaming({ CPS_RETENTION_BATCH: '5' }, 'CPS_RETENTION_BATCH');
    failsNaming({ CPS_RETENTION_INTERVAL_MINUTES: '0' }, 'CPS_RETENTION_INTERVAL_MINUTES');
  });

  it('reads CPS_TRUST_PROXY as proxy addresses and ranges, and refuses anything else', () => {
    assert.equal(loadConfig({}).trustProxy, false);
    assert.deepEqual(loadConfig({ CPS_TRUST_PROXY: '10.0.0.1, 10.1.0.0/16,::1' }).trustProxy, ['10.0.0.1', '10.1.0.0/16', '::1']);
    for (const bad of ['true', 'proxy.local', '10.0.0.0/33', '::/129', '10.0.0.0/x']) failsNaming({ CPS_TRUST_PROXY: bad }, 'CPS_TRUST_PROXY');
  });

  it('reads CPS_OUTBOUND_ALLOW as addresses, ranges and host names, and refuses anything else', () => {
    assert.deepEqual(loadConfig({}).outboundAllow, []);
    assert.deepEqual(loadConfig({ CPS_OUTBOUND_ALLOW: '192.168.1.0/24, hooks.clinic.lan,fd00::/8' }).outboundAllow, [
      '192.168.1.0/24',
      'hooks.clinic.lan',
      'fd00::/8',
    ]);
    for (const bad of ['10.0.0.0/33', 'http://hooks.lan', 'a b']) failsNaming({ CPS_OUTBOUND_ALLOW: bad }, 'CPS_OUTBOUND_ALLOW');
  });

  it('reports every missing or bad setting at once, a line each', () => {
    assert.throws(
      () => loadConfig({ CPS_ENV: 'production', PORT: 'eighty', CPS_TIMEZONE: 'Mars/Olympus', CPS_WEBHOOK_RETRY_SCHEDULE: 'soon' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(
          error.problems.map((problem) => problem.variable),
          ['PORT', 'CPS_JWT_PRIVATE_KEY', 'CPS_MASTER_KEY', 'CPS_ADMIN_TOKEN', 'CPS_PUBLIC_URL', 'CPS_TIMEZONE', 'CPS_WEBHOOK_RETRY_SCHEDULE'],
        );
        assert.equal(error.variable, 'PORT');
        const lines = error.message.split('\n');
        assert.equal(lines.length, 7);
        assert.ok(
          lines.every((line, i) => line.startsWith(`${error.problems[i]!.variable}: `)),
          error.message,
        );
        assert.match(error.message, /CPS_MASTER_KEY: is required in production; `cps init` writes one/);
        return true;
      },
    );
  });

  it('warns when CPS_PUBLIC_URL is plain http in production, and only then', () => {
    const [warning] = configWarnings(loadConfig({ ...production, CPS_PUBLIC_URL: 'http://192.168.1.5:8080' }));
    assert.match(String(warning), /^CPS_PUBLIC_URL is http \(http:\/\/192\.168\.1\.5:8080\) in production: .*TLS reverse proxy/);
    assert.deepEqual(configWarnings(loadConfig({ ...production, CPS_PUBLIC_URL: 'https://cps.clinic.test' })), []);
    assert.deepEqual(configWarnings(loadConfig({ CPS_PUBLIC_URL: 'http://192.168.1.5:8080' })), []);
  });

  it('the example environment file names only known variables and loads once its placeholders are filled', () => {
    const example = parseEnv(readFileSync(path.resolve(import.meta.dirname, '../cps.env.example'), 'utf8'));
    const config = loadConfig(
      {
        ...example,
        CPS_MASTER_KEY: production.CPS_MASTER_KEY!,
        CPS_ADMIN_TOKEN: randomBytes(32).toString('base64'),
        CPS_JWT_PRIVATE_KEY_FILE: 'jwt.pem',
      },
      () => production.CPS_JWT_PRIVATE_KEY!,
    );
    assert.equal(config.publicUrl, 'https://cps.clinic.example');
    assert.deepEqual(config.trustProxy, ['127.0.0.1']);
  });

  it('refuses a production admin token that is easy to guess, however long', () => {
    for (const weak of ['aaaaaaaaaaaaaaaa', 'abcdefghijklmnopqrstuvwxyz012345', 'admin-token-admin-token-admin-token', '1234567890123456']) {
      failsNaming({ ...production, CPS_ADMIN_TOKEN: weak }, 'CPS_ADMIN_TOKEN');
      assert.equal(loadConfig({ CPS_ADMIN_TOKEN: weak }).adminToken, weak, 'development takes it');
    }
    for (const strong of [randomBytes(32).toString('hex'), randomBytes(32).toString('base64'), randomBytes(24).toString('base64url')]) {
      assert.equal(loadConfig({ ...production, CPS_ADMIN_TOKEN: strong }).adminToken, strong);
    }
    assert.equal(loadConfig({}).adminFailures, 10);
    assert.equal(loadConfig({ CPS_ADMIN_FAILURES: '0' }).adminFailures, 0);
    failsNaming({ CPS_ADMIN_FAILURES: '-1' }, 'CPS_ADMIN_FAILURES');
  });

  it('refuses production without keys, admin token or public URL', () => {
    for (const variable of ['CPS_JWT_PRIVATE_KEY', 'CPS_MASTER_KEY', 'CPS_ADMIN_TOKEN', 'CPS_PUBLIC_URL']) {
      const env: Record<string, string> = { ...production };
      delete env[variable];
      failsNaming(env, variable);
    }
    assert.equal(loadConfig(production).env, 'production');
  });

  it('reads the signing key from CPS_JWT_PRIVATE_KEY_FILE', () => {
    const config = loadConfig({ CPS_JWT_PRIVATE_KEY_FILE: '/keys/jwt.pem' }, () => ed25519Pem);
    assert.equal(config.jwtPrivateKey, ed25519Pem);
    failsNaming({ CPS_JWT_PRIVATE_KEY_FILE: '/nonexistent/key.pem' }, 'CPS_JWT_PRIVATE_KEY_FILE');
  });

  it('creates development keys once, mode 0600, and reuses them', async (context) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-keys-'));
    context.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const config = loadConfig({ CPS_DATA_DIR: dataDir });
    const first = await loadKeys(config);
    const second = await loadKeys(config);
    assert.equal(first.signing.kid, second.signing.kid);
    assert.deepEqual(first.masterKey, second.masterKey);
    assert.equal(first.signing.alg, 'EdDSA');
    for (const file of ['jwt-signing-key.pem', 'master.key']) {
      assert.equal(statSync(path.join(dataDir, file)).mode & 0o777, 0o600, file);
    }
    assert.match(readFileSync(path.join(dataDir, 'jwt-signing-key.pem'), 'utf8'), /BEGIN PRIVATE KEY/);
  });

  it('stores documents as files in the data directory with SQLite, in the database with PostgreSQL, unless CPS_DOCUMENTS_STORE says', () => {
    assert.equal(loadConfig({}).documents.store, 'files');
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://cps@127.0.0.1/cps' }).documents.store, 'database');
    assert.equal(loadConfig({ CPS_DOCUMENTS_STORE: 'database' }).documents.store, 'database');
    assert.equal(loadConfig({ DATABASE_URL: 'postgres://cps@127.0.0.1/cps', CPS_DOCUMENTS_STORE: 'files' }).documents.store, 'files');
    failsNaming({ CPS_DOCUMENTS_STORE: 'disk' }, 'CPS_DOCUMENTS_STORE');
  });

  it('makes thumbnails of JPEG, PNG, HEIF and PDF files unless CPS_DOCUMENTS_THUMBNAILS names fewer, or none', () => {
    const types = (env: Record<string, string>) => [...loadConfig(env).documents.thumbnailTypes].sort();
    assert.deepEqual(types({}), ['application/pdf', 'image/heic', 'image/heif', 'image/jpeg', 'image/png']);
    assert.deepEqual(types({ CPS_DOCUMENTS_THUMBNAILS: 'jpeg, pdf' }), ['application/pdf', 'image/jpeg']);
    assert.deepEqual(types({ CPS_DOCUMENTS_THUMBNAILS: 'none' }), []);
    failsNaming({ CPS_DOCUMENTS_THUMBNAILS: 'jpeg,gif' }, 'CPS_DOCUMENTS_THUMBNAILS');
    failsNaming({ CPS_DOCUMENTS_THUMBNAILS: 'constructor' }, 'CPS_DOCUMENTS_THUMBNAILS');
  });

  it('accepts a P-256 key as ES256', async () => {
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const keys = await loadKeys(loadConfig({ ...production, CPS_JWT_PRIVATE_KEY: pem }));
    assert.equal(keys.signing.alg, 'ES256');
  });

  it('rejects an RSA signing key', async () => {
    const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    await assert.rejects(loadKeys(loadConfig({ ...production, CPS_JWT_PRIVATE_KEY: pem })), /Ed25519 or P-256/);
  });
});
