/**
 * Request logs: every line a request writes carries its id (the x-request-id header), whatever the
 * level, and no token reaches the log.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { errorCodes } from 'fastify';
import { after, before, describe, it } from 'node:test';
import { buildApp, createContext } from '../../src/app.ts';
import type { App } from '../../src/http/app-type.ts';
import { openStorage, type Storage } from '../../src/db/index.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';
import { createLogger } from '../../src/logger.ts';
import { bearer, createTestClient, createTestDatabase, DIALECT, testConfig, testKeys, type TestDatabase } from '../support.ts';

interface LoggedApp {
  app: App;
  lines: Array<Record<string, unknown>>;
  token: string;
  close(): Promise<void>;
}

async function loggedApp(level: string): Promise<LoggedApp> {
  const database: TestDatabase = await createTestDatabase();
  const config = testConfig(database);
  const storage: Storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
  await migrateToLatest(storage.db);
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  const ctx = createContext(config, storage, await testKeys(), createLogger(level, sink));
  const app = await buildApp(ctx);
  app.get('/probe/crash', { config: { auth: { anyOf: [] } } }, async () => {
    throw new Error('probe failure');
  });
  // A header Node refuses to write: Fastify's own error lines then log the request.
  app.get('/probe/bad-header', { config: { auth: { anyOf: [] } } }, async (_request, reply) => reply.header('x-name', '\u6587').send('x'));
  // An answer, then a value returned besides: Fastify warns of the second reply, naming the request.
  app.get('/probe/sent-twice/:ref', { config: { auth: { anyOf: [] } } }, async (_request, reply) => {
    reply.send('once');
    return 'twice';
  });
  await app.ready();
  const token = (await createTestClient(ctx, { scopes: ['search'] })).token;
  return {
    app,
    lines,
    token,
    close: async () => {
      await app.close();
      await storage.destroy();
      await database.drop();
    },
  };
}

describe(`request logs (${DIALECT})`, () => {
  let info: LoggedApp;
  let error: LoggedApp;
  before(async () => {
    [info, error] = await Promise.all([loggedApp('info'), loggedApp('error')]);
  });
  after(async () => {
    await Promise.all([info.close(), error.close()]);
  });

  it('at info, each request logs one line under its id: route pattern, status and time, without the token or the query', async () => {
    info.lines.length = 0;
    const responses = [
      await info.app.inject({ url: '/health' }),
      await info.app.inject({ url: '/medical-db/v1/drugs-and-labs?q=x', headers: bearer(info.token) }),
      await info.app.inject({ url: '/medical-db/v1/drugs-and-labs?q=x', headers: bearer('not-a-valid-token-secret') }),
      await info.app.inject({ url: '/probe/crash', headers: bearer(info.token) }),
    ];
    for (const response of responses) {
      const id = response.headers['x-request-id'];
      const mine = info.lines.filter((line) => line.reqId === id);
      assert.deepEqual(
        mine.map((line) => line.msg).filter((msg) => msg !== 'request failed'),
        ['request completed'],
        JSON.stringify(info.lines),
      );
      const completed = mine.find((line) => line.msg === 'request completed')!;
      assert.equal(completed.statusCode, response.statusCode);
      assert.equal(typeof completed.responseTime, 'number');
    }
    const urls = responses.map(
      (response) => info.lines.find((line) => line.reqId === response.headers['x-request-id'] && line.msg === 'request completed')!.url,
    );
    assert.deepEqual(urls, ['/health', '/medical-db/v1/drugs-and-labs', '/medical-db/v1/drugs-and-labs', '/probe/crash']);
    const unmatched = await info.app.inject({ url: '/no/such/route?secret=1' });
    const line = info.lines.find((entry) => entry.reqId === unmatched.headers['x-request-id'])!;
    assert.deepEqual([line.method, line.url, line.statusCode], ['GET', '/no/such/route', 404]);
    assert.equal(info.lines.filter((entry) => entry.reqId === unmatched.headers['x-request-id']).length, 1);
    assert.ok(!JSON.stringify(info.lines).includes('secret=1'), 'no query string in the log');
    // A token in an address no route matches (another method, a suffix) is masked.
    const token = 'rvw_SECRETREVIEWTOKEN0123456789';
    for (const [method, url] of [
      ['DELETE', `/reviews/${token}`],
      ['GET', `/reviews/${token}/x`],
    ] as const) {
      const refused = await info.app.inject({ method, url });
      const logged = info.lines.find((entry) => entry.reqId === refused.headers['x-request-id'])!;
      assert.equal(logged.url, url.replace(token, '*'));
    }
    assert.ok(!JSON.stringify(info.lines).includes('SECRETREVIEWTOKEN'));
    assert.ok(info.lines.some((line) => line.msg === 'request failed' && line.reqId === responses[3]!.headers['x-request-id']));
    const text = JSON.stringify(info.lines);
    assert.ok(!text.includes(info.token) && !text.includes('not-a-valid-token-secret'), 'no token in the log');
  });

  it("Fastify's own error lines show a request by its route's pattern, never its query (a download link's token)", async () => {
    info.lines.length = 0;
    const failed = await info.app.inject({ url: '/probe/bad-header?link=SECRETLINKTOKEN&pt=patient-ref', headers: bearer(info.token) });
    assert.equal(failed.statusCode, 500);
    const mine = info.lines.filter((line) => line.req !== undefined);
    assert.ok(mine.length > 0, JSON.stringify(info.lines));
    for (const line of mine) assert.equal((line.req as { url: string }).url, '/probe/bad-header');
    const text = JSON.stringify(info.lines);
    assert.ok(!text.includes('SECRETLINKTOKEN') && !text.includes('patient-ref'), text);
  });

  it("Fastify's warning of a second reply leaves the request's address out (its request id leads to its route)", async () => {
    info.lines.length = 0;
    const answered = await info.app.inject({ url: '/probe/sent-twice/PATIENTREF0042?link=SECRETLINKTOKEN', headers: bearer(info.token) });
    assert.equal(answered.body, 'once');
    const warning = info.lines.find((line) => (line.err as { code?: string } | undefined)?.code === 'FST_ERR_REP_ALREADY_SENT');
    assert.ok(warning, JSON.stringify(info.lines));
    assert.match((warning.err as { message: string }).message, / in "\*" \(GET\)\?$/);
    assert.equal(warning.reqId, answered.headers['x-request-id']);
    // Its other form, a message of its own, when the headers went out before the reply's.
    info.app.log.warn(
      'Reply was already sent, did you forget to "return reply" in the "/probe/sent-twice/PATIENTREF0042?link=SECRETLINKTOKEN" (GET) route?',
    );
    assert.match(String(info.lines.at(-1)!.msg), /in the "\*" \(GET\) route\?$/);
    // An address with a quote in it, or in absolute form (Node accepts both, and Fastify routes the latter).
    for (const address of [
      '/probe/sent-twice/x"PATIENTREF0042?link=SECRETLINKTOKEN',
      'http://host/probe/sent-twice/PATIENTREF0042?link=SECRETLINKTOKEN',
    ]) {
      info.app.log.warn({ err: new errorCodes.FST_ERR_REP_ALREADY_SENT(address, 'GET') });
      assert.match((info.lines.at(-1)!.err as { message: string }).message, / in "\*" \(GET\)\?$/);
      info.app.log.warn(`Reply was already sent, did you forget to "return reply" in the "${address}" (GET) route?`);
      assert.match(String(info.lines.at(-1)!.msg), /in the "\*" \(GET\) route\?$/);
    }
    const text = JSON.stringify(info.lines);
    assert.ok(!text.includes('SECRETLINKTOKEN') && !text.includes('PATIENTREF0042'), text);
  });

  it('above info, only the lines written appear, still with the request id', async () => {
    error.lines.length = 0;
    await error.app.inject({ url: '/health' });
    assert.equal(error.lines.length, 0);
    const crash = await error.app.inject({ url: '/probe/crash', headers: bearer(error.token) });
    assert.equal(crash.statusCode, 500);
    assert.equal(error.lines.length, 1);
    assert.equal(error.lines[0]!.msg, 'request failed');
    assert.equal(error.lines[0]!.reqId, crash.headers['x-request-id']);
  });
});
