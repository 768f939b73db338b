/**
 * The catalogue as one process serves it: the built-in catalogue imported on first start, then every
 * drug and lab test loaded from the database into the in-memory indexes. A timer polls the catalogue
 * version (one row) and applies what changed since, so an import made by `cps import` or by any other
 * process reaches this one within seconds, without a restart.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import module from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../db/schema.ts';
import { errorLogFields } from '../../db/unavailable.ts';
import { FIELD_ALT, FIELD_FORM, FIELD_GENERIC, FIELD_NAME, rebuildDueAfter, SearchIndex, type IndexedFields } from './engine.ts';
import { drugRecordFromRow, Interner, labRecordFromRow, type DrugRecord, type LabRecord } from './model.ts';
import * as repo from './repo.ts';
import { decodeSnapshot, encodeSnapshot, readSnapshotFile, writeSnapshotFile } from './snapshot.ts';
import { ArrayStore, DrugStore } from './store.ts';
import { importDrugs, importLabs } from './service.ts';
import { openDrugSource, openLabSource } from './sources.ts';

export const BUILTIN_DIR = fileURLToPath(new URL('../../../catalogue/', import.meta.url));
export const POLL_INTERVAL_MS = 2000;
const BUILDER_SCRIPT = fileURLToPath(new URL('./index-builder.ts', import.meta.url));

/** The task the catalogue sends to the builder process (index-builder.ts), as its one IPC message. */
export interface IndexBuilderData {
  databaseUrl: string | null;
  dataDir: string;
  snapshotFile: string;
  logLevel: string;
  storedSnapshotMinDrugs: number | null;
}
const PAGE = 5000;
/** Changed drugs applied to a serving index in one go (about 35 ms at 250,000 products). */
const UPSERT_SLICE = 1000;
/**
 * Catalogues from this size up are built in a process of their own (seconds of work, and its garbage)
 * and keep their index snapshot in the database too, so that a server without a snapshot file reads
 * it instead of building.
 */
export const LARGE_CATALOGUE_DRUGS = 20_000;

export function describeDrug(record: DrugRecord): IndexedFields {
  return {
    names: [record.name],
    fields: [[FIELD_NAME, record.name], [FIELD_GENERIC, record.generic_name], [FIELD_GENERIC, record.common_name], [FIELD_FORM, record.product_type]],
    demoted: record.discontinued,
    nameLength: record.name.length,
    parts: record.parts,
  };
}

export function describeLab(record: LabRecord): IndexedFields {
  return {
    names: [record.name, ...record.abbreviations],
    fields: [[FIELD_NAME, record.name], [FIELD_ALT, record.abbreviations.join(' ')], [FIELD_FORM, record.category ?? '']],
    // Bare LOINC orders (no description) come after the curated tests prescribers usually mean.
    demoted: record.description === null,
    nameLength: record.name.length,
    parts: 1,
  };
}

/**
 * Imports catalogue/drugs.ndjson and catalogue/labs.ndjson when they differ from what this database
 * last imported (their hash is kept in catalogue_meta), so a new database searches out of the box and a
 * release with a newer catalogue updates it. Imports are idempotent, so processes racing here is harmless.
 */
export async function ensureBuiltinCatalogue(db: Kysely<Database>, logger: Logger, dir = BUILTIN_DIR): Promise<boolean> {
  let drugs: Buffer;
  let labs: Buffer;
  try {
    [drugs, labs] = await Promise.all([readFile(`${dir}/drugs.ndjson`), readFile(`${dir}/labs.ndjson`)]);
  } catch {
    logger.warn({ dir }, 'built-in catalogue not found; search serves only imported data');
    return false;
  }
  const hash = createHash('sha256').update(drugs).update('\0').update(labs).digest('hex');
  if ((await repo.builtinHash(db)) === hash) return false;
  const labSource = await openLabSource(`${dir}/labs.ndjson`);
  const labSummary = await importLabs(db, labSource.rows, labSource.layout);
  const drugSource = await openDrugSource(`${dir}/drugs.ndjson`);
  const drugSummary = await importDrugs(db, drugSource.rows, drugSource.layout);
  await repo.setBuiltinHash(db, hash);
  logger.info({ drugs: drugSummary, labs: labSummary }, 'built-in catalogue imported');
  return true;
}

export interface CatalogueOptions {
  pollIntervalMs?: number;
  /** Import the built-in catalogue when it changed (default true). */
  builtin?: boolean;
  builtinDir?: string;
  /** Index snapshot file (see snapshot.ts); none when null or absent. */
  snapshotFile?: string | null;
  /** Start from the snapshot file when it is usable (default true); false always builds, then writes it. */
  readSnapshot?: boolean;
  /**
   * With a snapshot file: when there is no usable snapshot and the catalogue holds at least
   * `minDrugs` drugs, build the index in a process of its own (index-builder.ts) and read the snapshot
   * it writes; later rebuilds of such a catalogue (after many changes) run there as well.
   */
  builder?: { databaseUrl: string | null; dataDir: string; minDrugs: number; logLevel: string } | null;
  /**
   * With a snapshot file: catalogues of at least this many drugs also keep their snapshot in the
   * database, written with the file, and read from there when the file is not usable.
   */
  storedSnapshotMinDrugs?: number | null;
  /** Called once a snapshot file is written, before it is stored in the database. */
  onSnapshotFileWritten?: () => void;
}

/**
 * The files whose code shapes a snapshot: rows read, records from rows, tokenising, fields, the
 * index's and the store's layout, the file format. A snapshot made by other code in these is ignored
 * rather than trusted; a release that changes only the rest of the module (routes, importers) keeps
 * using it.
 */
const SNAPSHOT_SOURCES = ['catalogue.ts', 'derive.ts', 'engine.ts', 'model.ts', 'normalize.ts', 'repo.ts', 'snapshot.ts', 'store.ts'];
let sourceHash: string | null = null;
function sourceHashOf(): string {
  if (sourceHash === null) {
    const dir = fileURLToPath(new URL('.', import.meta.url));
    const hash = createHash('sha256');
    for (const file of SNAPSHOT_SOURCES) hash.update(file).update(readFileSync(path.join(dir, file)));
    sourceHash = hash.digest('hex');
  }
  return sourceHash;
}

/** The snapshot file of one database, in the data directory (the database URL is hashed, never written). */
export function snapshotFileFor(dataDir: string, databaseUrl: string | null): string {
  const database = createHash('sha256').update(databaseUrl ?? path.resolve(dataDir)).digest('hex').slice(0, 16);
  return path.join(dataDir, `search-index-${database}.bin`);
}

interface SnapshotFields {
  source: string;
  version: number;
  /** The newest drug and lab ids of the database the snapshot was made from: a different database lacks them. */
  lastDrugId: string | null;
  lastLabId: string | null;
}

export class Catalogue {
  readonly drugs = new SearchIndex<DrugRecord>(describeDrug, () => new DrugStore());
  readonly labs = new SearchIndex<LabRecord>(describeLab);
  /** Catalogue version applied to the indexes; -1 before the first load. */
  version = -1;
  loaded = false;
  /**
   * Where the first load came from: the snapshot file, the snapshot stored in the database, the
   * builder process's snapshot, or the database's rows built here.
   */
  loadedFrom: 'snapshot' | 'stored snapshot' | 'builder' | 'database' | null = null;
  private readonly db: Kysely<Database>;
  private readonly logger: Logger;
  private readonly options: CatalogueOptions;
  private readonly interner = new Interner();
  private loading: Promise<void> | null = null;
  private refreshing: Promise<void> | null = null;
  private nextRefresh: Promise<void> | null = null;
  private snapshotting: Promise<void> | null = null;
  private builder: ChildProcess | null = null;
  /** A rebuild running in the builder process (see rebuildInBuilder). */
  private rebuilding: Promise<void> | null = null;
  /** The builder finished a rebuild: the next refresh reads its snapshot first. */
  private rebuilt = false;
  /** A rebuild in the builder failed: later rebuilds run here. */
  private builderFailed = false;
  private timer: NodeJS.Timeout | null = null;
  /** The last poll's refresh failed (the database is away): its recovery is logged. */
  private refreshFailing = false;
  private stopped = false;

  constructor(db: Kysely<Database>, logger: Logger, options: CatalogueOptions = {}) {
    this.db = db;
    this.logger = logger;
    this.options = options;
  }

  /** Loads once (later calls share the same promise) and starts polling. */
  start(): Promise<void> {
    this.loading ??= (async () => {
      const started = performance.now();
      this.loadedFrom = 'database';
      const file = this.options.snapshotFile;
      let building: Promise<boolean> | null = null;
      if (file && this.options.readSnapshot !== false) {
        if (await this.restoreSnapshot(file)) {
          this.loadedFrom = 'snapshot';
        } else {
          // The stored snapshot and the builder process are for large catalogues.
          const drugs = await repo.drugCount(this.db);
          if (await this.restoreStoredSnapshot(file, drugs)) this.loadedFrom = 'stored snapshot';
          else building = this.buildInBuilder(file, drugs);
        }
      }
      // The built-in catalogue's changes, if any, are applied by the refresh below, as any change after
      // a snapshot's version is; a build in the builder process goes on meanwhile.
      if (this.options.builtin !== false) await ensureBuiltinCatalogue(this.db, this.logger, this.options.builtinDir);
      if (building && (await building)) this.loadedFrom = 'builder';
      // Stopped while the builder ran: nothing to load for.
      if (this.stopped) return;
      await this.refresh();
      this.loaded = true;
      this.logger.info({ drugs: this.drugs.size, lab_tests: this.labs.size, version: this.version, load_ms: Math.round(performance.now() - started) }, 'search catalogue loaded');
      if (!this.stopped) this.schedule();
    })();
    // A failed load (database briefly away) is retried by the next caller.
    this.loading.catch(() => { this.loading = null; });
    return this.loading;
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      this.refresh().then(() => {
        if (this.refreshFailing) this.logger.info('catalogue refresh works again');
        this.refreshFailing = false;
      }, (error: unknown) => {
        // Once per outage: the poll goes on at its interval until the database answers.
        if (!this.refreshFailing) this.logger.warn(errorLogFields(error), 'catalogue refresh failed; will retry');
        this.refreshFailing = true;
      }).finally(() => { if (!this.stopped) this.schedule(); });
    }, this.options.pollIntervalMs ?? POLL_INTERVAL_MS);
    this.timer.unref();
  }

  /**
   * Applies every change since the last applied version. A call made while a refresh runs waits for
   * it and then for one more run, shared by every call made meanwhile: the running one may have read
   * the version before a change the caller just committed.
   */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.nextRefresh ??= this.refreshing.catch(() => {}).then(() => {
        this.nextRefresh = null;
        return this.stopped ? undefined : this.refresh();
      });
      return this.nextRefresh;
    }
    this.refreshing = this.applyChanges().finally(() => { this.refreshing = null; });
    return this.refreshing;
  }

  private async applyChanges(): Promise<void> {
    const file = this.options.snapshotFile;
    if (this.rebuilt && file) {
      // The builder finished a rebuild: its snapshot replaces the indexes, then what changed since applies.
      this.rebuilt = false;
      if (!(await this.restoreSnapshot(file))) {
        this.builderFailed = true;
        this.logger.warn({ file }, 'the snapshot of a rebuild in the builder process was not usable; rebuilding here from now on');
      }
    }
    const version = await repo.catalogueVersion(this.db);
    if (version === this.version) return;
    const after = this.version;
    // Changes that would make a rebuild due go to the builder process at once: upserting a large import
    // here first would hold the event loop for seconds. The current index serves until it is done.
    if (after >= 0 && this.rebuildsInBuilder() && this.drugs.wouldRebuildWith(await repo.drugCount(this.db, after))) {
      this.rebuildInBuilder();
      return;
    }
    // A first load goes straight into a columnar store: no array of a quarter of a million records.
    const store = after < 0 ? new DrugStore() : null;
    const changed: DrugRecord[] = [];
    for (let from: repo.ChangesCursor = { seq: after, id: '' }; ;) {
      const page = await repo.drugsChangedAfter(this.db, after, from, PAGE);
      for (const row of page) {
        const record = drugRecordFromRow(row, this.interner);
        if (store) store.add(record);
        else changed.push(record);
      }
      if (page.length < PAGE) break;
      const last = page[page.length - 1]!;
      from = { seq: Number(last.seq), id: last.id };
    }
    // In id order (the pages come by version): equally ranked updated products are laid out, and so
    // tied, in that order, as before the pages came by version.
    changed.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    // A slice at a time, letting requests in between: 10,000 changes at once held the event loop 340 ms.
    for (let i = 0; i < changed.length; i += UPSERT_SLICE) {
      this.drugs.upsert(changed.slice(i, i + UPSERT_SLICE));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const labs = (await repo.labsChangedAfter(this.db, after)).map(labRecordFromRow);
    const builds = this.drugs.builds;
    if (store) {
      this.drugs.build(store);
      this.labs.build(labs);
    } else {
      if (labs.length > 0) this.labs.upsert(labs);
      this.logger.info({ version, drugs: changed.length, lab_tests: labs.length }, 'search catalogue updated');
      if (this.drugs.rebuildDue || this.labs.rebuildDue) {
        if (this.rebuildsInBuilder()) {
          this.rebuildInBuilder();
        } else {
          this.drugs.build(this.drugs.all());
          this.labs.build(this.labs.all());
        }
      }
    }
    this.version = version;
    // A fresh build (the first load, or a rebuild here after many changes) is what the next start should read.
    if (this.drugs.builds !== builds) this.saveSnapshot(version);
  }

  /** Whether rebuilds run in the builder process: a large enough catalogue, and no builder failure so far. */
  private rebuildsInBuilder(): boolean {
    const builder = this.options.builder;
    return !!builder && !!this.options.snapshotFile && !this.builderFailed && !this.stopped && this.drugs.size >= builder.minDrugs;
  }

  /** Starts a rebuild in the builder process unless one is running; the refresh after it takes the result. */
  private rebuildInBuilder(): void {
    const file = this.options.snapshotFile!;
    this.rebuilding ??= (async () => {
      const started = performance.now();
      try {
        await this.runBuilder(file);
        this.rebuilt = true;
        this.logger.info({ build_ms: Math.round(performance.now() - started) }, 'search index rebuilt in the builder process');
      } catch (error) {
        if (this.stopped) return;
        this.builderFailed = true;
        this.logger.warn({ err: error }, 'search index rebuild in the builder process failed; rebuilding here from now on');
      } finally {
        this.rebuilding = null;
      }
      // Applied now rather than at the next poll; a refresh already running did not see the result.
      if (!this.stopped) await this.refresh();
      if (this.rebuilt && !this.stopped) await this.refresh();
    })().catch((error: unknown) => this.logger.warn({ err: error }, 'catalogue refresh failed; will retry'));
  }

  /** Stops polling and waits for a load or refresh in progress, so the database can close after. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.builder?.kill();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await Promise.allSettled([this.loading, this.refreshing, this.nextRefresh, this.rebuilding]);
    await this.snapshotting;
  }

  /**
   * Takes the indexes from the snapshot file when it was made by this code from this database, at a
   * version not newer than the database's; refresh() then applies what changed since. False when it did not.
   */
  private async restoreSnapshot(file: string, from = file): Promise<boolean> {
    // No file: decided at once, so a start that has to build forks the builder before the rest of the
    // start (building the app) takes the event loop, instead of after it (0.4 s measured).
    if (!existsSync(file)) return false;
    const bytes = await readSnapshotFile(file);
    return bytes !== null && (await this.restore(bytes, from));
  }

  /**
   * Takes the indexes from the snapshot stored in the database when the catalogue (`drugs`) is large
   * enough to keep one (see storedSnapshotMinDrugs): copies it to the file a part at a time, then
   * reads the file as a restart does. Holding the parts and their join as well kept a quarter of a
   * million products' server at 356 MB resident, against 244 to 307.
   */
  private async restoreStoredSnapshot(file: string, drugs: number): Promise<boolean> {
    const minDrugs = this.options.storedSnapshotMinDrugs;
    if (minDrugs == null || drugs < minDrugs) return false;
    const source = sourceHashOf();
    if ((await repo.storedSnapshotVersion(this.db, source)) === null) return false;
    try {
      await writeSnapshotFile(file, repo.storedSnapshotParts(this.db, source));
    } catch (error) {
      this.logger.warn({ err: error, file }, 'search index snapshot stored in the database not copied; building');
      return false;
    }
    return this.restoreSnapshot(file, 'the database');
  }

  private async restore(bytes: Buffer, from: string): Promise<boolean> {
    const started = performance.now();
    try {
      const snapshot = decodeSnapshot(bytes);
      if (!snapshot) {
        this.logger.warn({ from }, 'search index snapshot damaged; ignored');
        return false;
      }
      const fields = snapshot.fields as unknown as SnapshotFields;
      const current = await repo.catalogueVersion(this.db);
      if (fields.source !== sourceHashOf() || fields.version > current || !(await repo.catalogueHolds(this.db, fields.lastDrugId, fields.lastLabId))) {
        this.logger.info({ from }, 'search index snapshot is from other code or another database; ignored');
        return false;
      }
      const { drugs, drugRecords, labs, labRecords } = snapshot.sections;
      this.drugs.restore(drugs!, DrugStore.restore(drugRecords!));
      this.labs.restore(labs!, ArrayStore.restore<LabRecord>(labRecords!));
      this.version = fields.version;
      this.logger.info({ from, version: fields.version, drugs: this.drugs.size, read_ms: Math.round(performance.now() - started) }, 'search index snapshot read');
      return true;
    } catch (error) {
      this.logger.warn({ err: error, from }, 'search index snapshot unreadable; ignored');
      return false;
    }
  }

  /**
   * Builds the index in the builder process (see index-builder.ts) when the catalogue (`drugs`) is
   * large enough to be worth it, then reads the snapshot it wrote. False when it did not (the caller builds here).
   */
  private async buildInBuilder(file: string, drugs: number): Promise<boolean> {
    const builder = this.options.builder;
    if (!builder || drugs < builder.minDrugs) return false;
    const started = performance.now();
    try {
      await this.runBuilder(file);
    } catch (error) {
      if (!this.stopped) this.logger.warn({ err: error }, 'search index builder failed; building here');
      return false;
    }
    if (this.stopped || !(await this.restoreSnapshot(file))) return false;
    this.logger.info({ build_ms: Math.round(performance.now() - started) }, 'search index built in the builder process');
    return true;
  }

  /**
   * Runs index-builder.ts in a process of its own: it builds from the database and writes the snapshot
   * file. Settles once the file is written: the builder may go on storing it in the database.
   */
  private async runBuilder(file: string): Promise<void> {
    const builder = this.options.builder!;
    const data: IndexBuilderData = {
      databaseUrl: builder.databaseUrl, dataDir: builder.dataDir, snapshotFile: file, logLevel: builder.logLevel,
      storedSnapshotMinDrugs: this.options.storedSnapshotMinDrugs ?? null,
    };
    try {
      await new Promise<void>((resolve, reject) => {
        // Node's memory flags (npm start's), not a test runner's; the task (with the database URL) over IPC,
        // not argv; this process's compile cache (bin/cps.js), if any, for its modules.
        const cacheDir = module.getCompileCacheDir?.();
        const child = fork(BUILDER_SCRIPT, [], {
          execArgv: process.execArgv.filter((flag) => flag.startsWith('--max-')),
          env: cacheDir ? { ...process.env, NODE_COMPILE_CACHE: cacheDir } : process.env,
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        });
        this.builder = child;
        child.once('error', reject);
        child.once('message', () => resolve());
        child.once('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`index builder exited with ${signal ?? `code ${code}`}`))));
        child.send(data);
      });
    } finally {
      this.builder = null;
    }
  }

  /** Settles once a snapshot being written is on disk (or failed). */
  async snapshotWritten(): Promise<void> {
    await this.snapshotting;
  }

  /** Writes the indexes as just built, in the background (they are captured now, before any upsert). */
  private saveSnapshot(version: number): void {
    const file = this.options.snapshotFile;
    if (!file || this.snapshotting) return;
    let drugs: ReturnType<SearchIndex<DrugRecord>['snapshot']>;
    let labs: ReturnType<SearchIndex<LabRecord>['snapshot']>;
    try {
      drugs = this.drugs.snapshot();
      labs = this.labs.snapshot();
    } catch (error) {
      // Serving goes on; the next start builds from the database.
      this.logger.warn({ err: error, file }, 'search index snapshot not taken');
      return;
    }
    const minDrugs = this.options.storedSnapshotMinDrugs;
    const store = minDrugs != null && this.drugs.size >= minDrugs;
    this.snapshotting = (async () => {
      const last = await repo.lastCatalogueIds(this.db);
      const fields: SnapshotFields = { source: sourceHashOf(), version, lastDrugId: last.drug, lastLabId: last.lab };
      const pieces = encodeSnapshot({ ...fields }, { drugs: drugs.index, drugRecords: drugs.records, labs: labs.index, labRecords: labs.records });
      await writeSnapshotFile(file, pieces);
      this.options.onSnapshotFileWritten?.();
      if (!store) return;
      try {
        if (await repo.storeSnapshot(this.db, fields.source, version, Buffer.concat(pieces))) this.logger.info({ version }, 'search index snapshot stored in the database');
      } catch (error) {
        this.logger.warn({ err: error }, 'search index snapshot not stored in the database; the file is written');
      }
    })().catch((error: unknown) => this.logger.warn({ err: error, file }, 'search index snapshot not written'))
      .finally(() => { this.snapshotting = null; });
  }
}

/**
 * Builds the index here from the database and writes its snapshot to the file and, for a large
 * catalogue, to the database: the builder process's task, and `cps import`'s after a large import.
 */
export async function buildSnapshot(db: Kysely<Database>, logger: Logger, snapshotFile: string, storedSnapshotMinDrugs: number | null, onSnapshotFileWritten?: () => void): Promise<void> {
  const catalogue = new Catalogue(db, logger, { builtin: false, snapshotFile, readSnapshot: false, storedSnapshotMinDrugs, onSnapshotFileWritten, pollIntervalMs: 3_600_000 });
  await catalogue.start();
  // Waits for the snapshot to be written.
  await catalogue.stop();
}

/**
 * After an import: when the catalogue is large and the snapshot stored in the database is missing, or
 * so far behind that a server starting from it would rebuild, builds the index and stores a new one,
 * so the next server to start reads it instead of building for seconds. Whether it did.
 */
export async function refreshStoredSnapshot(db: Kysely<Database>, logger: Logger, snapshotFile: string, minDrugs = LARGE_CATALOGUE_DRUGS): Promise<boolean> {
  const drugs = await repo.drugCount(db);
  if (drugs < minDrugs) return false;
  const stored = await repo.storedSnapshotVersion(db, sourceHashOf());
  if (stored !== null && !rebuildDueAfter(drugs, await repo.drugCount(db, stored))) return false;
  await buildSnapshot(db, logger, snapshotFile, minDrugs);
  return true;
}
