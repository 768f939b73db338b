/**
 * Catalogue imports: idempotent upserts in batches, each batch one transaction that takes the next
 * catalogue version (so running servers pick the change up by polling one row).
 *
 * A drug is identified by normalised name, maker and pack. A file without packs matches the product
 * with any pack; a pack fills in a product stored without one. A product seen again takes the fields the
 * new file has and keeps those it lacks (a discontinued mark survives a file that does not say).
 */
import type { Kysely, Transaction } from 'kysely';
import { inTransaction } from '../../../db/index.ts';
import { newId } from '../../../db/ids.ts';
import type { Database, DrugsTable, LabTestsTable } from '../../../db/schema.ts';
import { canonicalForm, derivedLabAbbreviations, makerKey, nameKey, packKey, type Ingredient } from '../index/derive.ts';
import { compositionFields, type DrugInput, type LabInput } from '../index/model.ts';
import { clean } from '../index/normalize.ts';
import * as repo from '../repo.ts';

export interface ImportSummary {
  kind: 'drugs' | 'labs';
  layout: string;
  read: number;
  inserted: number;
  updated: number;
  unchanged: number;
  skipped: number;
  /** Catalogue version after the import. */
  version: number;
}

export interface ImportOptions {
  batchSize?: number;
  /** Called after each batch with the number of rows read so far. */
  onProgress?: (read: number) => void;
}

/** Thrown inside a batch's transaction to roll back the version bump when nothing changed. */
class NothingChanged extends Error {}

const toInt = (value: boolean | undefined | null): number | null => (value === undefined || value === null ? null : value ? 1 : 0);

function mergeDrug(existing: DrugsTable | undefined, input: DrugInput, seq: number, now: number): DrugsTable {
  const name = clean(input.name);
  const maker = clean(input.manufacturer_name);
  // A pack text with nothing countable in it ("Packaging not mentioned") says nothing about the pack.
  const givenSku = clean(input.product_sku);
  const sku = (givenSku && packKey(givenSku) !== '' ? givenSku : '') || existing?.product_sku || null;
  const composition: Ingredient[] =
    input.composition && input.composition.length > 0 ? input.composition : existing ? (JSON.parse(existing.composition) as Ingredient[]) : [];
  const productType = input.product_type
    ? canonicalForm(input.product_type, name, sku)
    : existing && existing.product_type !== 'other'
      ? existing.product_type
      : canonicalForm(undefined, name, sku);
  return {
    id: existing?.id ?? newId('drg'),
    name,
    name_key: nameKey(name),
    maker_key: makerKey(maker),
    pack_key: packKey(sku),
    manufacturer_name: maker,
    product_type: productType,
    product_sku: sku,
    ...compositionFields(composition, name),
    action_class: input.action_class ? JSON.stringify(input.action_class) : (existing?.action_class ?? null),
    is_otc: input.is_otc !== undefined ? toInt(input.is_otc) : (existing?.is_otc ?? null),
    discontinued: input.discontinued !== undefined ? toInt(input.discontinued) : (existing?.discontinued ?? null),
    soa: input.soa !== undefined ? toInt(input.soa) : (existing?.soa ?? null),
    seq,
    updated_at: now,
  };
}

/** The stored row of a product seen for the first time (bulk loaders use it). */
export function newDrugRow(input: DrugInput, seq: number, now = Date.now()): DrugsTable {
  return mergeDrug(undefined, input, seq, now);
}

function sameRow<T extends { seq: number; updated_at: number }>(a: T, b: T): boolean {
  for (const key of Object.keys(a) as Array<keyof T>) {
    if (key === 'seq' || key === 'updated_at') continue;
    // Numbers may come back from the database as strings or numbers; compare loosely on value.
    if (String(a[key] ?? null) !== String(b[key] ?? null)) return false;
  }
  return true;
}

async function* batches<T>(inputs: AsyncIterable<T | null> | Iterable<T | null>, size: number, onSkip: () => void): AsyncGenerator<T[]> {
  let batch: T[] = [];
  for await (const input of inputs) {
    if (input === null) {
      onSkip();
      continue;
    }
    batch.push(input);
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/** One batch's decisions: the stored rows it touched, and the rows to insert or update. */
interface BatchPlan<R> {
  originals: Map<string, R>;
  inserts: Map<string, R>;
  updates: Map<string, R>;
}

interface Importer<I, R> {
  kind: ImportSummary['kind'];
  isValid(input: I): boolean;
  plan(trx: Transaction<Database>, valid: I[], seq: number, now: number): Promise<BatchPlan<R>>;
  insert(trx: Transaction<Database>, rows: R[]): Promise<void>;
  update(trx: Transaction<Database>, row: R): Promise<void>;
}

/**
 * The import loop both catalogues share: batches, each in one transaction that bumps the catalogue
 * version (so other processes pick the change up) unless nothing in it changed.
 */
async function importBatches<I, R extends { id: string; seq: number; updated_at: number }>(
  db: Kysely<Database>,
  inputs: AsyncIterable<I | null> | Iterable<I | null>,
  layout: string,
  options: ImportOptions,
  importer: Importer<I, R>,
): Promise<ImportSummary> {
  const summary: ImportSummary = { kind: importer.kind, layout, read: 0, inserted: 0, updated: 0, unchanged: 0, skipped: 0, version: 0 };
  for await (const batch of batches(inputs, options.batchSize ?? 500, () => {
    summary.read++;
    summary.skipped++;
  })) {
    summary.read += batch.length;
    const valid = batch.filter((input) => importer.isValid(input));
    summary.skipped += batch.length - valid.length;
    let inserted = 0;
    let updated = 0;
    let unchanged = 0;
    try {
      await inTransaction(db, async (trx) => {
        const { originals, inserts, updates } = await importer.plan(trx, valid, await repo.bumpVersion(trx), Date.now());
        // A row counts as updated only when its final state differs from the stored one (a file
        // may say two things about one product; the last wins).
        for (const [id, row] of updates) if (sameRow(originals.get(id)!, row)) updates.delete(id);
        inserted = inserts.size;
        updated = updates.size;
        unchanged = valid.length - inserted - updated;
        if (inserts.size === 0 && updates.size === 0) throw new NothingChanged();
        await importer.insert(trx, [...inserts.values()]);
        for (const row of updates.values()) await importer.update(trx, row);
      });
    } catch (error) {
      if (!(error instanceof NothingChanged)) throw error;
    }
    summary.inserted += inserted;
    summary.updated += updated;
    summary.unchanged += unchanged;
    options.onProgress?.(summary.read);
  }
  summary.version = await repo.catalogueVersion(db);
  return summary;
}

function importDrugs(
  db: Kysely<Database>,
  inputs: AsyncIterable<DrugInput | null> | Iterable<DrugInput | null>,
  layout: string,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  return importBatches<DrugInput, DrugsTable>(db, inputs, layout, options, {
    kind: 'drugs',
    isValid: (input) => clean(input.name) !== '' && clean(input.manufacturer_name) !== '',
    insert: repo.insertDrugs,
    update: repo.updateDrug,
    async plan(trx, valid, seq, now) {
      const existing = await repo.drugsByNameKeys(trx, [...new Set(valid.map((input) => nameKey(clean(input.name))))]);
      const byIdentity = new Map<string, DrugsTable[]>();
      for (const row of existing) {
        const key = `${row.name_key}\u0000${row.maker_key}`;
        const list = byIdentity.get(key) ?? [];
        list.push(row);
        byIdentity.set(key, list);
      }
      const plan: BatchPlan<DrugsTable> = { originals: new Map(existing.map((row) => [row.id, row])), inserts: new Map(), updates: new Map() };
      for (const input of valid) {
        const identity = `${nameKey(clean(input.name))}\u0000${makerKey(clean(input.manufacturer_name))}`;
        const pack = packKey(clean(input.product_sku)); // '' when the file gives no usable pack
        const candidates = byIdentity.get(identity) ?? [];
        const match =
          candidates.find((row) => row.pack_key === pack) ?? (pack === '' ? candidates[0] : candidates.find((row) => row.pack_key === ''));
        const merged = mergeDrug(match, input, seq, now);
        if (match) candidates[candidates.indexOf(match)] = merged;
        else candidates.push(merged);
        byIdentity.set(identity, candidates);
        (plan.originals.has(merged.id) ? plan.updates : plan.inserts).set(merged.id, merged);
      }
      return plan;
    },
  });
}

function mergeLab(existing: LabTestsTable | undefined, input: LabInput, seq: number, now: number): LabTestsTable {
  const name = clean(input.name);
  const abbreviations = new Map<string, string>();
  const given = [
    ...(existing ? (JSON.parse(existing.abbreviations) as string[]) : []),
    ...(input.abbreviations ?? []),
    ...derivedLabAbbreviations(name),
  ];
  for (const abbreviation of given.map(clean)) {
    const key = abbreviation.toLowerCase();
    if (abbreviation !== '' && !abbreviations.has(key)) abbreviations.set(key, abbreviation);
  }
  const text = (value: string | undefined, old: string | null | undefined) => clean(value) || old || null;
  return {
    id: existing?.id ?? newId('lab'),
    name,
    name_key: nameKey(name),
    abbreviations: JSON.stringify([...abbreviations.values()]),
    category: text(input.category, existing?.category),
    description: text(input.description, existing?.description),
    preparation: text(input.preparation, existing?.preparation),
    specimen: text(input.specimen, existing?.specimen),
    loinc: text(input.loinc, existing?.loinc),
    price: typeof input.price === 'number' && Number.isFinite(input.price) ? input.price : (existing?.price ?? null),
    seq,
    updated_at: now,
  };
}

function importLabs(
  db: Kysely<Database>,
  inputs: AsyncIterable<LabInput | null> | Iterable<LabInput | null>,
  layout: string,
  options: ImportOptions = {},
): Promise<ImportSummary> {
  return importBatches<LabInput, LabTestsTable>(db, inputs, layout, options, {
    kind: 'labs',
    isValid: (input) => nameKey(clean(input.name)) !== '',
    insert: repo.insertLabs,
    update: repo.updateLab,
    async plan(trx, valid, seq, now) {
      const existing = new Map(
        (await repo.labsByNameKeys(trx, [...new Set(valid.map((input) => nameKey(clean(input.name))))])).map((row) => [row.name_key, row]),
      );
      const plan: BatchPlan<LabTestsTable> = {
        originals: new Map([...existing.values()].map((row) => [row.id, row])),
        inserts: new Map(),
        updates: new Map(),
      };
      for (const input of valid) {
        const key = nameKey(clean(input.name));
        const merged = mergeLab(existing.get(key), input, seq, now);
        existing.set(key, merged);
        (plan.originals.has(merged.id) ? plan.updates : plan.inserts).set(merged.id, merged);
      }
      return plan;
    },
  });
}

export interface CatalogueImporterDeps {
  db: Kysely<Database>;
}

/** Imports drugs and lab tests into the catalogue tables: idempotent upserts in batches, one catalogue version per batch. */
export class CatalogueImporter {
  readonly #deps: CatalogueImporterDeps;

  constructor(deps: CatalogueImporterDeps) {
    this.#deps = deps;
  }

  importDrugs(
    inputs: AsyncIterable<DrugInput | null> | Iterable<DrugInput | null>,
    layout: string,
    options: ImportOptions = {},
  ): Promise<ImportSummary> {
    return importDrugs(this.#deps.db, inputs, layout, options);
  }

  importLabs(
    inputs: AsyncIterable<LabInput | null> | Iterable<LabInput | null>,
    layout: string,
    options: ImportOptions = {},
  ): Promise<ImportSummary> {
    return importLabs(this.#deps.db, inputs, layout, options);
  }
}
