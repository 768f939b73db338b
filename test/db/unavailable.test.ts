/**
 * A request that cannot use the database answers 503 in its family's body with Retry-After, is
 * logged once at warn, and the app serves again when the database does: on SQLite a write lock held
 * elsewhere (SQLITE_BUSY), on PostgreSQL an outage played by a TCP proxy (refused, then stalled).
 * The process-level faults (backends terminated under load, recovery of jobs and search) are in
 * outage.test.ts.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import type { InjectOptions } from 'fastify';
import { sql } from 'kysely';
import path from 'node:path';
import { buildApp, createContext } from '../../src/app.ts';
import type { App } from '../../src/http/app-type.ts';
import type { AppContext } from '../../src/context.ts';
import { openStorage } from '../../src/db/index.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { describeDatabaseError, isDatabaseUnavailable } from '../../src/db/unavailable.ts';
import { createLogger } from '../../src/logger.ts';
import {
  ADMIN_TOKEN,
  bearer,
  createTestClient,
  createTestDatabase,
  DIALECT,
  PG_URL,
  testConfig,
  testKeys,
  type TestClient,
  type TestDatabase,
} from '../support.ts';
import { startTcpProxy, type TcpProxy } from './proxy.ts';

const errorWith = (message: string, fields: Record<string, unknown> = {}) => Object.assign(new Error(message), fields);

describe('which database errors mean "unavailable"', () => {
  it('recognises connection loss, refusal, timeouts, shutdown and resource errors of both drivers', () => {
    const refused = new AggregateError([errorWith('connect ECONNREFUSED ::1:5432', { code: 'ECONNREFUSED' })], '');
    const unavailable = [
      errorWith('connect ECONNREFUSED 127.0.0.1:5432', { code: 'ECONNREFUSED' }),
      refused,
      errorWith('read ECONNRESET', { code: 'ECONNRESET' }),
      errorWith('Connection terminated unexpectedly'),
      errorWith('Connection terminated due to connection timeout'),
      errorWith('timeout exceeded when trying to connect'),
      errorWith('Query read timeout'),
      errorWith('Client has encountered a connection error and is not queryable'),
      errorWith('terminating connection due to administrator command', { code: '57P01' }),
      errorWith('the database system is starting up', { code: '57P03' }),
      errorWith('canceling statement due to statement timeout', { code: '57014' }),
      errorWith('sorry, too many clients already', { code: '53300' }),
      errorWith('could not extend file: No space left on device', { code: '53100' }),
      errorWith('connection failure', { code: '08006' }),
      errorWith('cannot execute INSERT in a read-only transaction', { code: '25006' }),
      errorWith('Failed query', { cause: errorWith('Connection terminated unexpectedly') }),
      new SQLite.SqliteError('database is locked', 'SQLITE_BUSY'),
      new SQLite.SqliteError('database is locked', 'SQLITE_BUSY_SNAPSHOT'),
      new SQLite.SqliteError('disk I/O error', 'SQLITE_IOERR_WRITE'),
      new SQLite.SqliteError('database or disk is full', 'SQLITE_FULL'),
      new SQLite.SqliteError('attempt to write a readonly database', 'SQLITE_READONLY'),
      new TypeError('The database connection is not open'),
    ];
    for (const error of unavailable)
      assert.equal(isDatabaseUnavailable(error), true, (error as Error).message || String((error as AggregateError).errors));

    const others = [
      errorWith('duplicate key value violates unique constraint', { code: '23505' }),
      errorWith('syntax error at or near "selec"', { code: '42601' }),
      errorWith('invalid byte sequence for encoding "UTF8": 0x00', { code: '22021' }),
      new SQLite.SqliteError('UNIQUE constraint failed: businesses.id', 'SQLITE_CONSTRAINT_UNIQUE'),
      new TypeError("Cannot read properties of undefined (reading 'id')"),
      new Error('probe failure'),
      null,
      undefined,
      'Connection terminated unexpectedly',
    ];
    for (const error of others) assert.equal(isDatabaseUnavailable(error), false, String((error as Error)?.message ?? error));
  });

  it('describes an error by its code and message only: never the client (and its password) a pool error carries', () => {
    const error = errorWith('Connection terminated unexpectedly', { client: { connectionParameters: { password: 's3cret' } } });
    assert.deepEqual(describeDatabaseError(error), { message: 'Connection terminated unexpectedly' });
    assert.deepEqual(describeDatabaseError(errorWith('x', { code: '57P01' })), { code: '57P01', message: 'x' });
    const refused = Object.assign(new AggregateError([errorWith('connect ECONNREFUSED 127.0.0.1:1')], ''), { code: 'ECONNREFUSED' });
    assert.deepEqual(describeDatabaseError(refused), { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' });
  });
});

/** Starts and ends an outage of the app's database. */
interface Outage {
  begin(): Promise<void>;
  end(): Promise<void>;
}

describe(`a request that cannot use the database (${DIALECT})`, () => {
  let database: TestDatabase;
  let ctx: AppContext;
  let app: App;
  let proxy: TcpProxy | null = null;
  let outage: Outage;
  let client: TestClient;
  let other: SQLite.Database | null = null;
  const lines: Array<Record<string, unknown>> = [];

  before(async () => {
    database = await createTestDatabase();
    let databaseUrl = database.databaseUrl;
    if (databaseUrl) {
      const target = new URL(databaseUrl);
      proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
      databaseUrl = proxy.urlFor(databaseUrl);
    }
    const config = testConfig(database, databaseUrl ? { DATABASE_URL: databaseUrl } : {});
    // A short statement timeout (the server's is 30 s) so the stalled case below ends soon.
    const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 4, statementTimeoutMs: 1000 });
    await migrateToLatest(storage.db);
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)));
        done();
      },
    });
    ctx = createContext(config, storage, await testKeys(), createLogger('warn', sink));
    app = await buildApp(ctx);
    await app.ready();
    client = await createTestClient(ctx);
    outage = proxy
      ? { begin: () => proxy!.cut(), end: () => proxy!.restore() }
      : {
          // Another connection holds the write lock; the app's writes fail at once instead of waiting.
          begin: async () => {
            await sql`pragma busy_timeout = 0`.execute(ctx.storage.db);
            other = new SQLite(path.join(database.dataDir, 'cps.sqlite'));
            other.exec('BEGIN IMMEDIATE');
          },
          end: async () => {
            other?.exec('ROLLBACK');
            other?.close();
            other = null;
            await sql`pragma busy_timeout = 5000`.execute(ctx.storage.db);
          },
        };
  });
  after(async () => {
    other?.close();
    await proxy?.restore();
    await app.close();
    await ctx.storage.destroy();
    await proxy?.close();
    await database.drop();
  });

  /** One write per error family, each of which needs the database. */
  const writes = () => {
    const auth = { auth: client.token };
    const n = `${Date.now()}${Math.random().toString(36).slice(2, 6)}`;
    return [
      {
        family: 'standard',
        request: { method: 'POST', url: '/admin/v1/businesses', headers: bearer(ADMIN_TOKEN), payload: { name: `Outage ${n}` } },
      },
      {
        family: 'auth',
        request: {
          method: 'POST',
          url: '/connect-auth/v1/account/login',
          payload: { client_id: client.clientId, client_secret: client.clientSecret },
        },
      },
      {
        family: 'clinics',
        request: { method: 'POST', url: '/cdr/v1/doctor', headers: auth, payload: { firstname: 'Asha', lastname: 'Rao', partner_id: `pd-${n}` } },
      },
      {
        family: 'cases',
        request: {
          method: 'POST',
          url: '/mr/api/v1/cases',
          headers: { ...bearer(client.token), 'x-pt-id': 'pt-outage' },
          payload: { id: `c-${n}`, display_name: 'Case', occurred_at: 1_700_000_000 },
        },
      },
      {
        family: 'notifications',
        request: {
          method: 'POST',
          url: '/notification/add-device',
          headers: bearer(client.token),
          payload: {
            devicePayload: {
              did: `d-${n}`,
              'fcm-id': `fcm-token-${n}-0123456789abcdefghijklmnopqrstuvwxyz`,
              'app-version': '1',
              'app-platform': 'android',
              lang: 'en',
            },
          },
        },
      },
    ] as const;
  };

  const MESSAGE = 'The service is temporarily unavailable; retry shortly.';
  const BODIES: Record<string, unknown> = {
    standard: { error: { code: 'SERVICE_UNAVAILABLE', message: MESSAGE } },
    auth: { code: 503, error: MESSAGE },
    clinics: { message: [MESSAGE] },
    cases: { error: MESSAGE, code: 'SERVICE_UNAVAILABLE' },
    notifications: { message: MESSAGE, error_code: 503 },
  };

  it('answers 503 in the family body with Retry-After, logs one warning without a stack, and serves again after', async () => {
    const before = lines.length;
    await outage.begin();
    try {
      for (const { family, request } of writes()) {
        const response = await app.inject(request as InjectOptions);
        assert.equal(response.statusCode, 503, `${family}: ${response.body}`);
        assert.deepEqual(response.json(), BODIES[family], family);
        assert.equal(response.headers['retry-after'], '5');
        assert.equal(response.headers['cache-control'], 'no-store');
        assert.ok(response.headers['x-request-id']);
      }
    } finally {
      await outage.end();
    }
    const logged = lines.slice(before);
    assert.equal(logged.filter((line) => (line.level as number) >= 50).length, 0, 'nothing at level error');
    const warnings = logged.filter((line) => line.msg === 'database unavailable; answered 503');
    assert.equal(warnings.length, writes().length, 'one warning per request');
    for (const warning of warnings) {
      assert.equal(warning.level, 40);
      assert.equal(warning.err, undefined, 'no error object (nor its stack)');
      assert.equal(typeof (warning.database_error as { message: string }).message, 'string');
    }

    for (const { family, request } of writes()) {
      const response = await app.inject(request as InjectOptions);
      assert.ok(response.statusCode === 200 || response.statusCode === 201, `${family} after the outage: ${response.statusCode} ${response.body}`);
    }
  });

  it('keeps a write acknowledged before the outage', async () => {
    const created = await app.inject({
      method: 'POST',
      url: '/cdr/v1/doctor',
      headers: { auth: client.token },
      payload: { firstname: 'Kept', lastname: 'Before', partner_id: `pd-kept-${Date.now()}` },
    });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().svcid as string;
    await outage.begin();
    await outage.end();
    // As a client honouring Retry-After would: a connection that died with the outage may not be
    // known dead yet, and its request answers 503 once.
    let read = await app.inject({ method: 'GET', url: `/cdr/v1/doctor/${id}`, headers: { auth: client.token } });
    for (let retries = 0; read.statusCode === 503 && retries < 10; retries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      read = await app.inject({ method: 'GET', url: `/cdr/v1/doctor/${id}`, headers: { auth: client.token } });
    }
    assert.equal(read.statusCode, 200, read.body);
    assert.equal(read.json().doctor.firstname, 'Kept');
  });

  it('/ready answers 503 while PostgreSQL refuses connections, and 200 once it is back', {
    skip: !PG_URL && 'PostgreSQL only: an SQLite file is always reachable',
  }, async () => {
    assert.equal((await app.inject({ url: '/ready' })).statusCode, 200);
    await proxy!.cut();
    try {
      const ready = await app.inject({ url: '/ready' });
      assert.equal(ready.statusCode, 503);
      assert.equal(ready.json().checks.database, false);
    } finally {
      await proxy!.restore();
    }
    assert.equal((await app.inject({ url: '/ready' })).statusCode, 200);
  });

  it('never hangs when PostgreSQL stops answering: requests answer 503 (read and connect timeouts), /ready 503', {
    skip: !PG_URL && 'PostgreSQL only',
  }, async () => {
    // Warm connections first, so that some requests wait on an open connection that goes silent
    // (the read timeout ends them) and others on a new connection (the connect timeout).
    await Promise.all(Array.from({ length: 4 }, () => app.inject({ url: '/cdr/v1/doctor', headers: { auth: client.token } })));
    proxy!.stall();
    try {
      const [ready, ...reads] = await Promise.all([
        app.inject({ url: '/ready' }),
        ...Array.from({ length: 6 }, () => app.inject({ url: '/cdr/v1/doctor', headers: { auth: client.token } })),
      ]);
      assert.equal(ready!.statusCode, 503);
      for (const read of reads) {
        assert.equal(read.statusCode, 503, read.body);
        assert.deepEqual(read.json(), BODIES.clinics);
      }
    } finally {
      await proxy!.restore();
    }
    const after = await app.inject({ url: '/cdr/v1/doctor', headers: { auth: client.token } });
    assert.equal(after.statusCode, 200, after.body);
    assert.equal((await app.inject({ url: '/ready' })).statusCode, 200);
  });
});
