/**
 * The catalogue as one process serves it: the built-in catalogue imported on first start, then every
 * drug and lab test loaded from the database into the in-memory indexes. A timer polls the catalogue
 * version (one row) and applies what changed since, so an import made by `cps import` or by any other
 * process reaches this one within seconds, without a restart.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../db/schema.ts';
import { FIELD_ALT, FIELD_FORM, FIELD_GENERIC, FIELD_NAME, SearchIndex, type IndexedFields } from './engine.ts';
import { drugRecordFromRow, Interner, labRecordFromRow, type DrugRecord, type LabRecord } from './model.ts';
import * as repo from './repo.ts';
import { DrugStore } from './store.ts';
import { importDrugs, importLabs } from './service.ts';
import { openDrugSource, openLabSource } from './sources.ts';

export const BUILTIN_DIR = fileURLToPath(new URL('../../../catalogue/', import.meta.url));
export const POLL_INTERVAL_MS = 2000;
const PAGE = 5000;

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
}

export class Catalogue {
  readonly drugs = new SearchIndex<DrugRecord>(describeDrug, () => new DrugStore());
  readonly labs = new SearchIndex<LabRecord>(describeLab);
  /** Catalogue version applied to the indexes; -1 before the first load. */
  version = -1;
  loaded = false;
  private readonly db: Kysely<Database>;
  private readonly logger: Logger;
  private readonly options: CatalogueOptions;
  private readonly interner = new Interner();
  private loading: Promise<void> | null = null;
  private refreshing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
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
      if (this.options.builtin !== false) await ensureBuiltinCatalogue(this.db, this.logger, this.options.builtinDir);
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
      this.refresh().catch((error: unknown) => this.logger.warn({ err: error }, 'catalogue refresh failed; will retry'))
        .finally(() => { if (!this.stopped) this.schedule(); });
    }, this.options.pollIntervalMs ?? POLL_INTERVAL_MS);
    this.timer.unref();
  }

  /** Applies every change since the last applied version. Concurrent calls share one run. */
  refresh(): Promise<void> {
    this.refreshing ??= this.applyChanges().finally(() => { this.refreshing = null; });
    return this.refreshing;
  }

  private async applyChanges(): Promise<void> {
    const version = await repo.catalogueVersion(this.db);
    if (version === this.version) return;
    const after = this.version;
    // A first load goes straight into a columnar store: no array of a quarter of a million records.
    const store = after < 0 ? new DrugStore() : null;
    const drugs: DrugRecord[] = [];
    for (let fromId = ''; ;) {
      const page = await repo.drugsChangedAfter(this.db, after, fromId, PAGE);
      for (const row of page) {
        const record = drugRecordFromRow(row, this.interner);
        if (store) store.add(record);
        else drugs.push(record);
      }
      if (page.length < PAGE) break;
      fromId = page[page.length - 1]!.id;
    }
    const labs = (await repo.labsChangedAfter(this.db, after)).map(labRecordFromRow);
    if (store) {
      this.drugs.build(store);
      this.labs.build(labs);
    } else {
      if (drugs.length > 0) this.drugs.upsert(drugs);
      if (labs.length > 0) this.labs.upsert(labs);
      this.logger.info({ version, drugs: drugs.length, lab_tests: labs.length }, 'search catalogue updated');
    }
    this.version = version;
  }

  /** Stops polling and waits for a load or refresh in progress, so the database can close after. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await Promise.allSettled([this.loading, this.refreshing]);
  }
}
