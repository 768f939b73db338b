/**
 * The catalogue as one process serves it: the built-in catalogue imported on first start, then every
 * drug and lab test loaded into the in-memory indexes, from a snapshot when there is a usable one
 * (snapshots.ts), else from the database, in the builder process for a large catalogue (builder-parent.ts).
 * A poll (poll.ts) reads the catalogue version (one row) and applies what changed since
 * (changes.ts), so an import made by `cps import` or by any other process reaches this one within
 * seconds, without a restart.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../../db/schema.ts';
import { SearchIndex } from '../index/engine.ts';
import { describeDrug, describeLab } from '../index/fields.ts';
import type { DrugRecord, LabRecord } from '../index/model.ts';
import { DrugStore } from '../index/store.ts';
import { ensureBuiltinCatalogue } from '../ingest/builtin.ts';
import * as repo from '../repo.ts';
import { IndexBuilder, releaseSpareBuilder, type IndexBuilderOptions } from './builder-parent.ts';
import { ChangeReader } from './changes.ts';
import { Poller } from './poll.ts';
import { IndexSnapshots } from './snapshots.ts';

export const POLL_INTERVAL_MS = 2000;
/** Changed drugs applied to a serving index in one go (about 35 ms at 250,000 products). */
const UPSERT_SLICE = 1000;
/**
 * Catalogues from this size up are built in a process of their own (seconds of work, and its garbage)
 * and keep their index snapshot in the database too, so that a server without a snapshot file reads
 * it instead of building.
 */
export const LARGE_CATALOGUE_DRUGS = 20_000;

export interface CatalogueOptions {
  pollIntervalMs?: number;
  /** Import the built-in catalogue when it changed (default true). */
  builtin?: boolean;
  builtinDir?: string;
  /** Index snapshot file (see snapshots.ts); none when null or absent. */
  snapshotFile?: string | null;
  /** Start from the snapshot file when it is usable (default true); false always builds, then writes it. */
  readSnapshot?: boolean;
  /**
   * With a snapshot file: when there is no usable snapshot and the catalogue holds at least
   * `minDrugs` drugs, build the index in a process of its own (builder-child.ts) and read the snapshot
   * it writes; later rebuilds of such a catalogue (after many changes) run there as well.
   */
  builder?: IndexBuilderOptions | null;
  /**
   * With a snapshot file: catalogues of at least this many drugs also keep their snapshot in the
   * database, written with the file, and read from there when the file is not usable.
   */
  storedSnapshotMinDrugs?: number | null;
  /** Called once a snapshot file is written, before it is stored in the database. */
  onSnapshotFileWritten?: () => void;
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
  private readonly changes: ChangeReader;
  private readonly poller: Poller;
  private readonly snapshots: IndexSnapshots | null;
  private readonly builder: IndexBuilder | null;
  private loading: Promise<void> | null = null;
  private refreshing: Promise<void> | null = null;
  private nextRefresh: Promise<void> | null = null;
  private stopped = false;

  constructor(db: Kysely<Database>, logger: Logger, options: CatalogueOptions = {}) {
    this.db = db;
    this.logger = logger;
    this.options = options;
    this.changes = new ChangeReader(db);
    this.poller = new Poller(() => this.refresh(), options.pollIntervalMs ?? POLL_INTERVAL_MS, logger);
    const file = options.snapshotFile;
    const storedSnapshotMinDrugs = options.storedSnapshotMinDrugs ?? null;
    this.snapshots = file ? new IndexSnapshots(db, logger, { file, storedSnapshotMinDrugs, onFileWritten: options.onSnapshotFileWritten }) : null;
    this.builder = file && options.builder ? new IndexBuilder(options.builder, { file, storedSnapshotMinDrugs }, logger) : null;
  }

  /** Loads once (later calls share the same promise) and starts polling. */
  start(): Promise<void> {
    this.loading ??= (async () => {
      const started = performance.now();
      this.loadedFrom = 'database';
      let building: Promise<boolean> | null = null;
      if (this.snapshots && this.options.readSnapshot !== false) {
        if (this.took(await this.snapshots.restore(this))) {
          this.loadedFrom = 'snapshot';
        } else {
          // The stored snapshot and the builder process are for large catalogues.
          const drugs = await repo.drugCount(this.db);
          if (this.took(await this.snapshots.restoreStored(this, drugs))) this.loadedFrom = 'stored snapshot';
          else building = this.buildInBuilder(drugs);
        }
      }
      // The built-in catalogue's changes, if any, are applied by the refresh below, as any change after
      // a snapshot's version is; a build in the builder process goes on meanwhile.
      if (this.options.builtin !== false) await ensureBuiltinCatalogue(this.db, this.logger, this.options.builtinDir);
      if (building && (await building)) this.loadedFrom = 'builder';
      releaseSpareBuilder();
      // Stopped while the builder ran: nothing to load for.
      if (this.stopped) return;
      await this.refresh();
      this.loaded = true;
      this.logger.info(
        { drugs: this.drugs.size, lab_tests: this.labs.size, version: this.version, load_ms: Math.round(performance.now() - started) },
        'search catalogue loaded',
      );
      this.poller.start();
    })();
    // A failed load (database briefly away) is retried by the next caller.
    this.loading.catch(() => {
      this.loading = null;
    });
    return this.loading;
  }

  /** Takes the version of a restored snapshot; whether there was one. */
  private took(version: number | null): boolean {
    if (version === null) return false;
    this.version = version;
    return true;
  }

  /**
   * Applies every change since the last applied version. A call made while a refresh runs waits for
   * it and then for one more run, shared by every call made meanwhile: the running one may have read
   * the version before a change the caller just committed.
   */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.nextRefresh ??= this.refreshing
        .catch(() => {})
        .then(() => {
          this.nextRefresh = null;
          return this.stopped ? undefined : this.refresh();
        });
      return this.nextRefresh;
    }
    this.refreshing = this.applyChanges().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async applyChanges(): Promise<void> {
    if (this.builder?.takeRebuilt() && this.snapshots) {
      // The builder finished a rebuild: its snapshot replaces the indexes, then what changed since applies.
      if (!this.took(await this.snapshots.restore(this))) {
        this.builder.fail();
        this.logger.warn(
          { file: this.snapshots.file },
          'the snapshot of a rebuild in the builder process was not usable; rebuilding here from now on',
        );
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
    await this.changes.drugsAfter(after, store ? (record) => store.add(record) : (record) => changed.push(record));
    // In id order (the pages come by version): equally ranked updated products are laid out, and so
    // tied, in that order, as before the pages came by version.
    changed.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    // A slice at a time, letting requests in between: 10,000 changes at once held the event loop 340 ms.
    for (let i = 0; i < changed.length; i += UPSERT_SLICE) {
      this.drugs.upsert(changed.slice(i, i + UPSERT_SLICE));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const labs = await this.changes.labsAfter(after);
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
    if (this.drugs.builds !== builds) this.snapshots?.save(this, version);
  }

  private rebuildsInBuilder(): boolean {
    return !!this.builder && !this.stopped && this.builder.rebuilds(this.drugs.size);
  }

  /** Starts a rebuild in the builder process unless one is running; the refresh after it takes the result. */
  private rebuildInBuilder(): void {
    this.builder!.rebuild(() => this.refresh());
  }

  /**
   * Builds the index in the builder process when the catalogue (`drugs`) is large enough to be worth
   * it, then reads the snapshot it wrote. False when it did not (the caller builds here).
   */
  private async buildInBuilder(drugs: number): Promise<boolean> {
    const builder = this.builder;
    if (!builder || !this.snapshots || drugs < builder.minDrugs) return false;
    const started = performance.now();
    try {
      await builder.run();
    } catch (error) {
      if (!this.stopped) this.logger.warn({ err: error }, 'search index builder failed; building here');
      return false;
    }
    if (this.stopped || !this.took(await this.snapshots.restore(this))) return false;
    this.logger.info({ build_ms: Math.round(performance.now() - started) }, 'search index built in the builder process');
    return true;
  }

  /** Settles once a snapshot being written is on disk (or failed). */
  async snapshotWritten(): Promise<void> {
    await this.snapshots?.written();
  }

  /** Stops polling and waits for a load or refresh in progress, so the database can close after. */
  async stop(): Promise<void> {
    this.stopped = true;
    releaseSpareBuilder();
    this.poller.stop();
    await Promise.allSettled([this.loading, this.refreshing, this.nextRefresh, this.builder?.stop()]);
    await this.snapshotWritten();
  }
}
