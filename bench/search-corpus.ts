/**
 * Catalogues for the search benchmarks: the real ones (built-in catalogue plus the shared A-Z and 1mg
 * files in ../shared/data) and a synthetic corpus of any size made from them: real brand stems,
 * compositions, makers and packs recombined. Every synthetic product is marked
 * (`action_class.synthetic = true`, maker suffixed " (synthetic)") so it can never pass for real data.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { makerKey, nameKey } from '../src/modules/search/index/derive.ts';
import type { DrugInput, LabInput } from '../src/modules/search/index/model.ts';
import { openDrugSource, openLabSource } from '../src/modules/search/ingest/sources.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
export const SHARED_DATA = path.resolve(ROOT, '../shared/data');
const DRUG_FILES = [
  path.join(ROOT, 'catalogue/drugs.ndjson'),
  ...['az_medicines_india_sample500.csv', 'onemg_drugs_2k.csv', 'medicine_details_1mg_11k.csv'].map((f) => path.join(SHARED_DATA, f)),
];
const LAB_FILES = [path.join(ROOT, 'catalogue/labs.ndjson'), path.join(SHARED_DATA, 'loinc_universal_lab_orders.csv')];

/** Real products, one per normalised name and maker (the importer's identity, packs aside). */
export async function realDrugs(): Promise<DrugInput[]> {
  const seen = new Map<string, DrugInput>();
  for (const file of DRUG_FILES.filter((f) => existsSync(f))) {
    const source = await openDrugSource(file);
    for await (const row of source.rows) {
      if (!row) continue;
      const key = `${nameKey(row.name)}|${makerKey(row.manufacturer_name)}`;
      seen.set(key, { ...seen.get(key), ...row });
    }
  }
  return [...seen.values()];
}

export async function realLabs(): Promise<LabInput[]> {
  const seen = new Map<string, LabInput>();
  for (const file of LAB_FILES.filter((f) => existsSync(f))) {
    const source = await openLabSource(file);
    for await (const row of source.rows) if (row) seen.set(nameKey(row.name), { ...seen.get(nameKey(row.name)), ...row });
  }
  return [...seen.values()];
}

/** Deterministic pseudo-random numbers (mulberry32), so every run benchmarks the same corpus. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VARIANTS = ['', '', '', 'Plus', 'Forte', 'DS', 'SR', 'MR', 'XL', 'Duo', 'Kid', 'CV', 'D', 'LS', 'M', 'AM', 'H', 'Gold', 'OD', 'DT'];
const FORMS = ['Tablet', 'Tablet', 'Tablet', 'Capsule', 'Syrup', 'Suspension', 'Injection', 'Cream', 'Gel', 'Drops', 'Ointment', 'Solution'];
const SUFFIXES = ['', '', 'a', 'o', 'ex', 'ol', 'in', 'ax', 'id', 'am', 'on', 'el'];

/** The real products plus synthetic ones up to `size`. */
export function syntheticCorpus(real: DrugInput[], size: number, seed = 42): DrugInput[] {
  const next = random(seed);
  const pick = <T>(list: T[]): T => list[Math.floor(next() * list.length)]!;
  const stems = [...new Set(real.map((d) => d.name.split(/[\s-]+/)[0]!).filter((s) => /^[A-Za-z]{3,}$/.test(s)))];
  const compositions = real.map((d) => d.composition).filter((c): c is NonNullable<typeof c> => !!c && c.length > 0);
  const makers = [...new Set(real.map((d) => d.manufacturer_name))];
  const packs = [...new Set(real.map((d) => d.product_sku).filter((p): p is string => !!p))];
  const out = real.slice(0, size);
  const names = new Set(out.map((d) => nameKey(d.name)));
  while (out.length < size) {
    const composition = pick(compositions);
    const strength = /^[\d.]+/.exec(composition[0]?.strength ?? '')?.[0] ?? '';
    const parts = [`${pick(stems)}${pick(SUFFIXES)}`, pick(VARIANTS), next() < 0.7 ? strength : '', pick(FORMS)].filter(Boolean);
    const name = parts.join(' ');
    if (names.has(nameKey(name))) continue;
    names.add(nameKey(name));
    out.push({
      name,
      manufacturer_name: `${pick(makers)} (synthetic)`,
      product_sku: pick(packs),
      composition,
      discontinued: next() < 0.07,
      action_class: { synthetic: true },
    });
  }
  return out;
}
