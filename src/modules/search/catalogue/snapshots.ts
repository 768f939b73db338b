/**
 * The catalogue's index snapshots: written to a file in the data directory after a fresh build and,
 * for a large catalogue, stored in the database too; read back at the next start instead of building
 * (see index/snapshot.ts for the format). A snapshot is used only when it was made by this code
 * (snapshot-key.ts) from this database, at a version not newer than the database's.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../../db/schema.ts';
import type { SearchIndex } from '../index/engine.ts';
import type { DrugRecord, LabRecord } from '../index/model.ts';
import { encodeSnapshot, readSnapshot, releaseBytes, writeSnapshotFile } from '../index/snapshot.ts';
import { ArrayStore, DrugStore } from '../index/store.ts';
import * as repo from '../repo.ts';
import { snapshotKey } from './snapshot-key.ts';

/** The snapshot file of one database, in the data directory (the database URL is hashed, never written). */
export function snapshotFileFor(dataDir: string, databaseUrl: string | null): string {
  const database = createHash('sha256')
    .update(databaseUrl ?? path.resolve(dataDir))
    .digest('hex')
    .slice(0, 16);
  return path.join(dataDir, `search-index-${database}.bin`);
}

/** The parts, each freed once the writer asks for the next (it has written this one). */
async function* releasedOnceWritten(parts: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  for await (const part of parts) {
    yield part;
    releaseBytes(part);
  }
}

/** The drug index's and store's columns that upserts append to. */
const GROWING = new Set([
  'drugs.rowOf',
  'drugs.info',
  'drugs.fwd',
  'drugs.fwdStart',
  ...['manufacturer_name', 'product_type', 'product_sku', 'generic_name', 'generic_id', 'common_name', 'actionClass', 'otc', 'flags', 'parts'].map(
    (column) => `drugRecords.${column}`,
  ),
]);

/**
 * Room for an eighth more after each column that upserts append to: the changes applied after a
 * restore (the built-in catalogue's, an import's) then grow them in place, instead of copying 18 MB of
 * them at 250,000 products and leaving the old copies to the garbage collector.
 */
function roomToGrow(section: string, key: string, length: number): number {
  return GROWING.has(`${section}.${key}`) ? length >>> 3 : 0;
}

/** The indexes a snapshot holds. */
export interface CatalogueIndexes {
  readonly drugs: SearchIndex<DrugRecord>;
  readonly labs: SearchIndex<LabRecord>;
}

interface SnapshotFields {
  source: string;
  version: number;
  /** The newest drug and lab ids of the database the snapshot was made from: a different database lacks them. */
  lastDrugId: string | null;
  lastLabId: string | null;
}

export interface IndexSnapshotsOptions {
  file: string;
  /** Catalogues of at least this many drugs also keep their snapshot in the database; none when null. */
  storedSnapshotMinDrugs: number | null;
  /** Called once a snapshot file is written, before it is stored in the database. */
  onFileWritten?: () => void;
}

export class IndexSnapshots {
  readonly file: string;
  private readonly db: Kysely<Database>;
  private readonly logger: Logger;
  private readonly options: IndexSnapshotsOptions;
  private writing: Promise<void> | null = null;

  constructor(db: Kysely<Database>, logger: Logger, options: IndexSnapshotsOptions) {
    this.db = db;
    this.logger = logger;
    this.options = options;
    this.file = options.file;
  }

  /**
   * Takes the indexes from the snapshot file when it was made by this code from this database, at a
   * version not newer than the database's. The version it holds; null when it did not.
   */
  async restore(indexes: CatalogueIndexes, from = this.file): Promise<number | null> {
    // No file: decided at once, so a start that has to build forks the builder before the rest of the
    // start (building the app) takes the event loop, instead of after it (0.4 s measured).
    if (!existsSync(this.file)) return null;
    return this.restoreFrom(indexes, from);
  }

  /**
   * Takes the indexes from the snapshot stored in the database when the catalogue (`drugs`) is large
   * enough to keep one: copies it to the file a part at a time, then reads the file as a restart
   * does. Holding the parts and their join as well kept a quarter of a million products' server at
   * 356 MB resident, against 244 to 307.
   */
  async restoreStored(indexes: CatalogueIndexes, drugs: number): Promise<number | null> {
    const minDrugs = this.options.storedSnapshotMinDrugs;
    if (minDrugs == null || drugs < minDrugs) return null;
    const source = snapshotKey();
    if ((await repo.storedSnapshotVersion(this.db, source)) === null) return null;
    try {
      await writeSnapshotFile(this.file, releasedOnceWritten(repo.storedSnapshotParts(this.db, source)));
    } catch (error) {
      this.logger.warn({ err: error, file: this.file }, 'search index snapshot stored in the database not copied; building');
      return null;
    }
    return this.restore(indexes, 'the database');
  }

  private async restoreFrom(indexes: CatalogueIndexes, from: string): Promise<number | null> {
    const started = performance.now();
    try {
      const snapshot = await readSnapshot(this.file, roomToGrow);
      if (!snapshot) {
        this.logger.warn({ from }, 'search index snapshot damaged; ignored');
        return null;
      }
      const fields = snapshot.fields as unknown as SnapshotFields;
      const current = await repo.catalogueVersion(this.db);
      if (fields.source !== snapshotKey() || fields.version > current || !(await repo.catalogueHolds(this.db, fields.lastDrugId, fields.lastLabId))) {
        this.logger.info({ from }, 'search index snapshot is from other code or another database; ignored');
        return null;
      }
      const { drugs, drugRecords, labs, labRecords } = snapshot.sections;
      indexes.drugs.restore(drugs!, DrugStore.restore(drugRecords!));
      indexes.labs.restore(labs!, ArrayStore.restore<LabRecord>(labRecords!));
      this.logger.info(
        { from, version: fields.version, drugs: indexes.drugs.size, read_ms: Math.round(performance.now() - started) },
        'search index snapshot read',
      );
      return fields.version;
    } catch (error) {
      this.logger.warn({ err: error, from }, 'search index snapshot unreadable; ignored');
      return null;
    }
  }

  /** Writes the indexes as just built, in the background (they are captured now, before any upsert). */
  save(indexes: CatalogueIndexes, version: number): void {
    const file = this.file;
    if (this.writing) return;
    let drugs: ReturnType<SearchIndex<DrugRecord>['snapshot']>;
    let labs: ReturnType<SearchIndex<LabRecord>['snapshot']>;
    try {
      drugs = indexes.drugs.snapshot();
      labs = indexes.labs.snapshot();
    } catch (error) {
      // Serving goes on; the next start builds from the database.
      this.logger.warn({ err: error, file }, 'search index snapshot not taken');
      return;
    }
    const minDrugs = this.options.storedSnapshotMinDrugs;
    const store = minDrugs != null && indexes.drugs.size >= minDrugs;
    this.writing = (async () => {
      const last = await repo.lastCatalogueIds(this.db);
      const fields: SnapshotFields = { source: snapshotKey(), version, lastDrugId: last.drug, lastLabId: last.lab };
      const pieces = encodeSnapshot({ ...fields }, { drugs: drugs.index, drugRecords: drugs.records, labs: labs.index, labRecords: labs.records });
      await writeSnapshotFile(file, pieces);
      this.options.onFileWritten?.();
      if (!store) return;
      try {
        if (await repo.storeSnapshot(this.db, fields.source, version, Buffer.concat(pieces)))
          this.logger.info({ version }, 'search index snapshot stored in the database');
      } catch (error) {
        this.logger.warn({ err: error }, 'search index snapshot not stored in the database; the file is written');
      }
    })()
      .catch((error: unknown) => this.logger.warn({ err: error, file }, 'search index snapshot not written'))
      .finally(() => {
        this.writing = null;
      });
  }

  /** Settles once a snapshot being written is on disk (or failed). */
  async written(): Promise<void> {
    await this.writing;
  }
}
