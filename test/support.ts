/**
 * Test support. Every storage test runs on SQLite by default and on PostgreSQL when
 * CPS_TEST_DATABASE_URL is set (npm run test:pg); each test app gets a database of its own
 * (a temp SQLite file, or a fresh PostgreSQL database dropped afterwards).
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from 'pino';
import { buildApp, createContext } from '../src/app.ts';
import type { App } from '../src/http/app-type.ts';
import { loadConfig, type Config } from '../src/config.ts';
import type { AppContext } from '../src/context.ts';
import { openStorage } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { createLogger } from '../src/logger.ts';
import { BusinessService } from '../src/modules/businesses/index.ts';
import { createModules, type Modules } from '../src/modules/index.ts';
import { signingKeyFromPem, type Keys } from '../src/security/keys.ts';

export const PG_URL = process.env.CPS_TEST_DATABASE_URL ?? null;
export const DIALECT = PG_URL ? 'postgres' : 'sqlite';

/** Eka's published OpenAPI documents, read-only in ../shared beside the repository. */
export const EKA_REFERENCE = path.resolve(import.meta.dirname, '../../shared/reference/eka');

export interface TestDatabase {
  /** DATABASE_URL for the app (null: SQLite in dataDir). */
  databaseUrl: string | null;
  dataDir: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'cps-test-'));
  if (!PG_URL) {
    return { databaseUrl: null, dataDir, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const name = `cps_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect(); // Fails loudly when PostgreSQL is unreachable: never skipped.
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    databaseUrl: url.toString(),
    dataDir,
    drop: async () => {
      const client = new pg.Client({ connectionString: PG_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

let sharedKeys: Promise<Keys> | null = null;
export function testKeys(): Promise<Keys> {
  sharedKeys ??= (async () => ({
    signing: await signingKeyFromPem(generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()),
    masterKey: randomBytes(32),
  }))();
  return sharedKeys;
}

/** Strong enough for a production test app (config.ts's check). */
export const ADMIN_TOKEN = 'test-admin-Jq8vN3xK7pW2mR9tL4sZ6yB1cH5f';

export function testConfig(database: TestDatabase, env: Record<string, string> = {}): Config {
  return loadConfig({
    CPS_DATA_DIR: database.dataDir,
    CPS_ADMIN_TOKEN: ADMIN_TOKEN,
    CPS_PUBLIC_URL: 'http://cps.test',
    CPS_WORKERS: '0',
    LOG_LEVEL: 'silent',
    ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    ...env,
  });
}

export interface TestApp {
  app: App;
  ctx: AppContext;
  modules: Modules;
  database: TestDatabase;
  close(): Promise<void>;
}

/**
 * `context` may replace parts of the context (e.g. the outbound client with a stubbed resolver)
 * before the app is built; `setup` may add routes (e.g. probes of each error family) before it is ready.
 */
export async function createTestApp(
  options: {
    env?: Record<string, string>;
    keys?: Keys;
    /** The app's logger (default: silent); tests of what is logged pass one writing to a sink. */
    logger?: Logger;
    context?: (ctx: AppContext) => void;
    setup?: (app: App) => void | Promise<void>;
    /** Another app's database (a second process on it); that app drops it. */
    database?: TestDatabase;
  } = {},
): Promise<TestApp> {
  const database = options.database ?? (await createTestDatabase());
  const config = testConfig(database, options.env);
  const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 5 });
  await migrateToLatest(storage.db);
  const ctx = createContext(config, storage, options.keys ?? (await testKeys()), options.logger ?? createLogger('silent'));
  options.context?.(ctx);
  const modules = createModules(ctx);
  const app = await buildApp(ctx, modules);
  await options.setup?.(app);
  await app.ready();
  return {
    app,
    ctx,
    modules,
    database,
    close: async () => {
      await app.close();
      await storage.destroy();
      if (!options.database) await database.drop();
    },
  };
}

export interface TestClient {
  businessId: string;
  clientId: string;
  clientSecret: string;
  token: string;
}

/** A business (or another client of `businessId`) with a signed access token. */
export async function createTestClient(ctx: AppContext, options: { scopes?: string[]; businessId?: string } = {}): Promise<TestClient> {
  const businesses = new BusinessService({ db: ctx.storage.db, chainSeal: ctx.audit.chainSeal });
  const created = options.businessId
    ? await businesses.createClient(options.businessId, options.scopes)
    : options.scopes
      ? await businesses.createClient((await businesses.createBusiness('Test Business')).business_id, options.scopes)
      : await businesses.createBusiness('Test Business');
  const scopes = options.scopes && options.scopes.length > 0 ? options.scopes : (await import('../src/auth/scopes.ts')).SCOPES;
  return {
    businessId: created.business_id,
    clientId: created.client_id,
    clientSecret: created.client_secret,
    token: await ctx.tokens.issue(created.client_id, created.business_id, [...scopes]),
  };
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}
