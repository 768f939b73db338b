/** What the index holds of a drug and of a lab test: the fields searched and the ranking hints. */
import { FIELD_ALT, FIELD_FORM, FIELD_GENERIC, FIELD_NAME, type IndexedFields } from './engine.ts';
import type { DrugRecord, LabRecord } from './model.ts';

export function describeDrug(record: DrugRecord): IndexedFields {
  return {
    names: [record.name],
    fields: [
      [FIELD_NAME, record.name],
      [FIELD_GENERIC, record.generic_name],
      [FIELD_GENERIC, record.common_name],
      [FIELD_FORM, record.product_type],
    ],
    demoted: record.discontinued,
    nameLength: record.name.length,
    parts: record.parts,
  };
}

export function describeLab(record: LabRecord): IndexedFields {
  return {
    names: [record.name, ...record.abbreviations],
    fields: [
      [FIELD_NAME, record.name],
      [FIELD_ALT, record.abbreviations.join(' ')],
      [FIELD_FORM, record.category ?? ''],
    ],
    // Bare LOINC orders (no description) come after the curated tests prescribers usually mean.
    demoted: record.description === null,
    nameLength: record.name.length,
    parts: 1,
  };
}
