/** Config, storage, migrations, app, listen, and a graceful shutdown on SIGTERM and SIGINT. */
import { createServer } from 'node:net';
import type { Logger } from 'pino';
import { buildApp, createContext } from './app.ts';
import type { App } from './http/app-type.ts';
import { configWarnings, type Config } from './config.ts';
import type { AppContext } from './context.ts';
import { DatabaseContactError, prepareDatabase } from './db/first-contact.ts';
import { openStorage, SERVER_STATEMENT_TIMEOUT_MS, type Storage } from './db/index.ts';
import { migrateToLatest } from './db/migrate.ts';
import { watchIssuers } from './auth/issuers.ts';
import { releaseStartupMemory } from './garbage-collection.ts';
import { sealWhatMigrationsLeft } from './access-log/store.ts';
import { createLogger } from './logger.ts';
import { createDemoBusiness } from './modules/businesses/index.ts';
import { createModules } from './modules/index.ts';
import { warnAboutWideModes } from './security/data-dir.ts';
import { loadKeys } from './security/keys.ts';
import { assertMasterKeyOpensStoredValues, MasterKeyMismatchError } from './stored-secrets.ts';

export interface RunningServer {
  app: App;
  ctx: AppContext;
  url: string;
  close(): Promise<void>;
}

/** A start refused for a reason the operator fixes: the command prints its message alone, no stack. */
export class StartError extends Error {}

function portRefusal(host: string, port: number, code: string | undefined): StartError | null {
  if (code === 'EADDRINUSE') {
    return new StartError(
      `port ${port} on ${host} is already in use by another process: stop it, or choose another port, e.g. PORT=${port === 8080 ? 8081 : 8080}`,
    );
  }
  if (code === 'EACCES')
    return new StartError(`port ${port} on ${host} needs privileges this process lacks: choose a port above 1023, e.g. PORT=8080`);
  if (code === 'EADDRNOTAVAIL') return new StartError(`HOST=${host} is not an address of this machine`);
  return null;
}

/** Whether HOST:PORT can be listened on, checked before the seconds a start takes. */
async function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (error: NodeJS.ErrnoException) => reject(portRefusal(host, port, error.code) ?? error));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

/** Migrations may run long statements (an index over the catalogue): on PostgreSQL, without the statement timeout. */
async function migrate(config: Config, storage: Storage): Promise<string[]> {
  if (storage.dialect !== 'postgres') return migrateToLatest(storage.db);
  const untimed = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
  try {
    return await migrateToLatest(untimed.db);
  } finally {
    await untimed.destroy();
  }
}

export async function startServer(config: Config, logger: Logger = createLogger(config.logLevel)): Promise<RunningServer> {
  const started = performance.now();
  // Before anything is created, so the warnings are about what an operator or an older version left.
  warnAboutWideModes(config.dataDir, logger);
  await assertPortFree(config.host, config.port);
  for (const warning of configWarnings(config)) logger.warn(warning);
  if (config.databaseUrl) {
    const { created } = await prepareDatabase(config.databaseUrl).catch((error: unknown) => {
      throw error instanceof DatabaseContactError ? new StartError(error.message) : error;
    });
    if (created) logger.info('the PostgreSQL database did not exist: created it');
  }
  const keys = await loadKeys(config);
  const storage = openStorage({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.dbPoolSize,
    statementTimeoutMs: SERVER_STATEMENT_TIMEOUT_MS,
    checkpointInBackground: true,
  });
  try {
    const applied = await migrate(config, storage);
    if (applied.length > 0) logger.info({ applied }, 'migrations applied');
    await assertMasterKeyOpensStoredValues(storage.db, keys.masterKey).catch((error: unknown) => {
      throw error instanceof MasterKeyMismatchError ? new StartError(error.message) : error;
    });
    const sealed = await sealWhatMigrationsLeft(storage.db, applied, async () => keys.masterKey);
    if (sealed > 0) logger.info({ sealed }, 'access log heads and anchors sealed');
    const ctx = createContext(config, storage, keys, logger);
    const modules = createModules(ctx);
    // The search index takes longest to load: it starts now, and building the app goes on meanwhile
    // (the app's onReady awaits the same promise).
    for (const module of Object.values(modules)) void module.start?.();
    await createDemoBusiness(ctx);
    const app = await buildApp(ctx, modules);
    // Before listening, so the signal handlers (installed once this returns) follow closely.
    if (config.workers) await ctx.jobs.start();
    const issuers = await watchIssuers(storage.db, config.publicUrl, keys.signing.kid, logger);
    const url = await (async () => {
      // Loaded (the search index too: the app's onReady waits for it), so what starting left behind
      // goes back before any request could wait for the collection.
      await app.ready();
      releaseStartupMemory();
      return app.listen({ port: config.port, host: config.host });
    })().catch(async (error: NodeJS.ErrnoException) => {
      issuers.stop();
      await app.close();
      throw portRefusal(config.host, config.port, error.code) ?? error;
    });
    logger.info({ url, database: storage.dialect, startup_ms: Math.round(performance.now() - started) }, 'OpenCPS listening');
    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= (async () => {
        // app.close stops accepting and lets requests in flight finish while running jobs finish
        // alongside (both within the grace period, app.ts); then the database closes.
        issuers.stop();
        await app.close();
        await storage.destroy();
      })());
    return { app, ctx, url, close };
  } catch (error) {
    await storage.destroy();
    throw error;
  }
}

export function closeOnSignals(server: RunningServer, logger: Logger, graceSeconds: number): void {
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) return;
    signalled = true;
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error({ grace_seconds: graceSeconds }, 'shutdown grace period over; exiting');
      process.exit(1);
    }, graceSeconds * 1000);
    timer.unref();
    server.close().then(
      () => {
        logger.info('shut down cleanly');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  // on, not once: a repeated signal (a terminal's Ctrl-C reaches a wrapping bin/cps.js too) is the same request.
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
