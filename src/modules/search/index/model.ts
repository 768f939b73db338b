/**
 * Catalogue records: what importers produce (inputs), what is stored (rows), what the index holds
 * (records) and what the API sends (interface sections 2.1 to 2.3).
 */
import type { DrugsTable, LabTestsTable } from '../../../db/schema.ts';
import { commonName, dosageOf, genericId, genericName, type DosageInfo, type Ingredient } from './derive.ts';

/** One product as a source file gives it. Undefined means "this file does not say". */
export interface DrugInput {
  name: string;
  manufacturer_name: string;
  product_type?: string;
  product_sku?: string;
  composition?: Ingredient[];
  is_otc?: boolean;
  discontinued?: boolean;
  soa?: boolean;
  action_class?: Record<string, unknown>;
}

export interface LabInput {
  name: string;
  abbreviations?: string[];
  category?: string;
  description?: string;
  preparation?: string;
  specimen?: string;
  loinc?: string;
  price?: number;
}

/** A drug as the index holds it: only what search and the response need. */
export interface DrugRecord {
  id: string;
  name: string;
  manufacturer_name: string;
  product_type: string;
  product_sku: string | null;
  generic_name: string;
  generic_id: string;
  common_name: string;
  action_class: Record<string, unknown> | null;
  is_otc: boolean | null;
  discontinued: boolean;
  soa: boolean;
  /** Number of salts in the composition. */
  parts: number;
}

export interface LabRecord {
  id: string;
  name: string;
  abbreviations: string[];
  category: string | null;
  description: string | null;
  preparation: string | null;
  price: number | null;
}

export interface DrugResponse {
  id: string;
  name: string;
  manufacturer_name: string;
  product_type: string;
  product_sku?: string;
  generic_name: string;
  generic_id: string;
  dosage: DosageInfo;
  action_class?: Record<string, unknown>;
  common_name: string;
  soa: boolean;
  drug_name_match: boolean;
  include_suggestion: boolean;
  highlighted_fields?: Record<string, string>;
  is_otc: boolean | null;
}

export interface LabResponse {
  id: string;
  name: string;
  description: string | null;
  category: string | null;
  price: number | null;
  preparation: string | null;
}

const bool = (value: number | null): boolean | null => (value === null ? null : value !== 0);

/**
 * One parsed object per distinct JSON text: action classes repeat across thousands of products, and
 * the drug store keeps one of each by identity. (Repeated strings are the store's own string table.)
 */
export class Interner {
  private objects = new Map<string, Record<string, unknown>>();

  json(text: string): Record<string, unknown> {
    let known = this.objects.get(text);
    if (known === undefined) {
      known = Object.freeze(JSON.parse(text) as Record<string, unknown>);
      this.objects.set(text, known);
    }
    return known;
  }
}

/** The columns a drug record is made of: loading reads only these. */
export const DRUG_RECORD_COLUMNS = [
  'id',
  'name',
  'manufacturer_name',
  'product_type',
  'product_sku',
  'generic_name',
  'generic_id',
  'common_name',
  'action_class',
  'is_otc',
  'discontinued',
  'soa',
] as const;
export type DrugRecordRow = Pick<DrugsTable, (typeof DRUG_RECORD_COLUMNS)[number]>;

export function drugRecordFromRow(row: DrugRecordRow, interner: Interner): DrugRecord {
  return {
    id: row.id,
    name: row.name,
    manufacturer_name: row.manufacturer_name,
    product_type: row.product_type,
    product_sku: row.product_sku,
    generic_name: row.generic_name,
    generic_id: row.generic_id,
    common_name: row.common_name,
    action_class: row.action_class === null ? null : interner.json(row.action_class),
    is_otc: bool(row.is_otc),
    discontinued: row.discontinued === 1,
    soa: row.soa === 1,
    parts: row.common_name.split(' + ').length,
  };
}

export function labRecordFromRow(row: LabTestsTable): LabRecord {
  return {
    id: row.id,
    name: row.name,
    abbreviations: JSON.parse(row.abbreviations) as string[],
    category: row.category,
    description: row.description,
    preparation: row.preparation,
    price: row.price === null ? null : Number(row.price),
  };
}

/** The derived composition fields of a drug row. */
export function compositionFields(
  composition: Ingredient[],
  name: string,
): Pick<DrugsTable, 'composition' | 'generic_name' | 'generic_id' | 'common_name'> {
  return {
    composition: JSON.stringify(composition),
    generic_name: genericName(composition) || name,
    generic_id: genericId(composition, name),
    common_name: commonName(composition) || name,
  };
}

export function drugResponse(record: DrugRecord, drugNameMatch: boolean, highlighted: Record<string, string> | null): DrugResponse {
  const out: DrugResponse = {
    id: record.id,
    name: record.name,
    manufacturer_name: record.manufacturer_name,
    product_type: record.product_type,
    generic_name: record.generic_name,
    generic_id: record.generic_id,
    dosage: dosageOf(record.product_type),
    common_name: record.common_name,
    soa: record.soa,
    drug_name_match: drugNameMatch,
    include_suggestion: !record.discontinued,
    is_otc: record.is_otc,
  };
  if (record.product_sku !== null) out.product_sku = record.product_sku;
  if (record.action_class !== null) out.action_class = record.action_class;
  if (highlighted !== null) out.highlighted_fields = highlighted;
  return out;
}

export function labResponse(record: LabRecord): LabResponse {
  return {
    id: record.id,
    name: record.name,
    description: record.description,
    category: record.category,
    price: record.price,
    preparation: record.preparation,
  };
}
