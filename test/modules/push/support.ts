/** A test app wired to local OAuth and FCM fakes, with its logs captured. */
import { Writable } from 'node:stream';
import { buildApp, createContext } from '../../../src/app.ts';
import type { App } from '../../../src/http/app-type.ts';
import { createModules } from '../../../src/modules/index.ts';
import { openStorage } from '../../../src/db/index.ts';
import { migrateToLatest } from '../../../src/db/migrate.ts';
import { createLogger } from '../../../src/logger.ts';
import { OutboundClient } from '../../../src/security/outbound-client.ts';
import type { Resolver } from '../../../src/security/outbound.ts';
import { bearer, createTestClient, createTestDatabase, testConfig, testKeys, type TestApp, type TestClient } from '../../support.ts';
import { FakeFcm, FakeOAuth, rsaKey, saKey, type RsaKey } from './fakes.ts';

type InjectResponse = Awaited<ReturnType<TestApp['app']['inject']>>;

export interface PushTest extends TestApp {
  key: RsaKey;
  oauth: FakeOAuth;
  fcm: FakeFcm;
  /** Every log line the app wrote (level debug and up). */
  logs: string[];
  client: TestClient;
  saKey(overrides?: Record<string, unknown>): Record<string, unknown>;
  post(url: string, body: unknown, token?: string, headers?: Record<string, string>): Promise<InjectResponse>;
  get(url: string, token?: string): Promise<InjectResponse>;
  /** Runs due jobs (deliveries and their retries) until none is due. */
  deliver(): Promise<void>;
}

/**
 * `resolve` stubs the DNS answers the outbound client sees (the app's environment decides its policy);
 * `setup` may add routes before the app is ready.
 */
export async function createPushTest(
  env: Record<string, string> = {},
  options: { resolve?: Resolver; setup?: (app: App) => void } = {},
): Promise<PushTest> {
  const key = rsaKey();
  const base = saKey(key, 'http://placeholder/token');
  const oauth = await new FakeOAuth(key.publicKey, { iss: String(base.client_email), kid: String(base.private_key_id) }).start();
  const fcm = await new FakeFcm().start();
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });

  const database = await createTestDatabase();
  const config = testConfig(database, { CPS_FCM_URL: fcm.url, CPS_PUSH_RETRY_SCHEDULE: '0,0', ...env });
  const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 5 });
  await migrateToLatest(storage.db);
  const ctx = createContext(config, storage, await testKeys(), createLogger('debug', sink));
  if (options.resolve)
    ctx.outbound = new OutboundClient({ publicOnly: config.env === 'production', allow: config.outboundAllow, resolve: options.resolve });
  const modules = createModules(ctx);
  const app = await buildApp(ctx, modules);
  options.setup?.(app);
  await app.ready();
  const client = await createTestClient(ctx);

  return {
    app,
    ctx,
    modules,
    database,
    key,
    oauth,
    fcm,
    logs,
    client,
    saKey: (overrides = {}) => saKey(key, oauth.tokenUri, overrides),
    post: (url, body, token = client.token, headers = {}) =>
      app.inject({ method: 'POST', url, headers: { ...bearer(token), ...headers }, payload: body as object }),
    get: (url, token = client.token) => app.inject({ method: 'GET', url, headers: bearer(token) }),
    deliver: async () => {
      await deliverDue(ctx);
    },
    close: async () => {
      await app.close();
      await storage.destroy();
      await database.drop();
      await oauth.stop();
      await fcm.stop();
    },
  };
}

async function deliverDue(ctx: { jobs: { runDue(): Promise<number> } }): Promise<void> {
  await ctx.jobs.runDue();
}
