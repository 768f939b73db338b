/**
 * Fields derived from what catalogues give: composition, generic id, common name, dosage form,
 * de-duplication keys, lab abbreviations and categories. Pure functions, shared by every importer.
 */
import { createHash } from 'node:crypto';
import { clean, fold, formOfWord, normalizedName, unitOfForm, words } from './normalize.ts';

export interface Ingredient {
  salt: string;
  strength: string;
}

/** Splits on "+" outside parentheses: "A (1mg/5ml) + B (2mg)" -> ["A (1mg/5ml)", "B (2mg)"]. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    else if (ch === ')') depth = Math.max(0, depth - 1);
    if (ch === '+' && depth === 0) {
      parts.push(current);
      current = '';
    } else {
      current += ch;
    }
  }
  parts.push(current);
  return parts.map(clean).filter((part) => part !== '');
}

/** "Amoxycillin  (500mg) +  Clavulanic Acid (125mg)" -> [{salt, strength}, ...], stray spaces removed. */
export function parseComposition(...texts: Array<string | undefined | null>): Ingredient[] {
  const out: Ingredient[] = [];
  for (const text of texts) {
    if (!text) continue;
    for (const part of splitTopLevel(text)) {
      const match = /^(.*?)\s*\(([^()]*)\)\s*$/.exec(part);
      const salt = clean(match ? match[1] : part);
      const strength = clean(match ? match[2] : '').replace(/\s+(?=[a-zµ%])/gi, '');
      if (salt !== '') out.push({ salt, strength });
    }
  }
  return out;
}

/** The composition with strengths, as prescribers read it: "Amoxycillin (500mg) + Clavulanic Acid (125mg)". */
export function genericName(ingredients: Ingredient[]): string {
  return ingredients.map((i) => (i.strength ? `${i.salt} (${i.strength})` : i.salt)).join(' + ');
}

/** The composition without strengths: "Amoxycillin + Clavulanic Acid". */
export function commonName(ingredients: Ingredient[]): string {
  const seen = new Set<string>();
  const salts: string[] = [];
  for (const { salt } of ingredients) {
    const key = normalizedName(salt);
    if (!seen.has(key)) {
      seen.add(key);
      salts.push(salt);
    }
  }
  return salts.join(' + ');
}

/**
 * Identifies the composition: the same salts at the same strengths, in any order and any spelling of
 * case and spacing, give the same id. Deterministic, so every process and every import agrees.
 */
export function genericId(ingredients: Ingredient[], fallbackName: string): string {
  const parts =
    ingredients.length > 0
      ? ingredients.map((i) => `${normalizedName(i.salt)}:${fold(i.strength).replace(/\s+/g, '')}`).sort()
      : [`name:${normalizedName(fallbackName)}`];
  return `gen_${createHash('sha256').update(parts.join('|')).digest('hex').slice(0, 16)}`;
}

/** The dosage form, read from the name's words (last first, skipping "SR", flavours...), then from the pack. */
export function detectForm(name: string, pack?: string | null): string {
  for (const source of [name, pack ?? '']) {
    const list = words(source);
    for (let i = list.length - 1; i >= 0; i--) {
      const form = formOfWord(list[i]!);
      if (form) return form;
    }
  }
  return 'other';
}

export function canonicalForm(value: string | undefined | null, name: string, pack?: string | null): string {
  if (value) {
    const list = words(value);
    for (let i = list.length - 1; i >= 0; i--) {
      const form = formOfWord(list[i]!);
      if (form) return form;
    }
    const key = normalizedName(value);
    if (key) return key;
  }
  return detectForm(name, pack);
}

export interface DosageInfo {
  unit: string | null;
  unit_name: string | null;
  unit_id: string | null;
  dosage: null;
  dosage_form: string;
  df_id: string;
  days: null;
  food: null;
}

const capitalise = (s: string) => s.replace(/(^|\s)\p{L}/gu, (c) => c.toUpperCase());

export function dosageOf(form: string): DosageInfo {
  const unit = unitOfForm(form) ?? null;
  return {
    unit,
    unit_name: unit ? capitalise(unit) : null,
    unit_id: unit ? `unit_${unit}` : null,
    dosage: null,
    dosage_form: capitalise(form),
    df_id: `df_${form.replace(/[^a-z0-9]+/g, '_')}`,
    days: null,
    food: null,
  };
}

const CONTAINERS = new Set([
  'strip',
  'strips',
  'bottle',
  'bottles',
  'tube',
  'tubes',
  'packet',
  'packets',
  'pack',
  'vial',
  'vials',
  'box',
  'sachet',
  'sachets',
  'ampoule',
  'ampoules',
  'jar',
  'can',
  'cartridge',
  'penfill',
  'flexpen',
  'pen',
  'kit',
  'dropper',
  'container',
  'blister',
  'pouch',
  'respule',
  'respules',
  'syringe',
]);
const UNIT_ALIASES: Record<string, string> = {
  gm: 'g',
  gms: 'g',
  grams: 'g',
  gram: 'g',
  g: 'g',
  ml: 'ml',
  mls: 'ml',
  l: 'l',
  ltr: 'l',
  litre: 'l',
  kg: 'kg',
  mg: 'mg',
  mcg: 'mcg',
  iu: 'iu',
};

/**
 * The pack as a comparable key: only counts, containers and units, so "strip of 10 tablets" and
 * "10 tablets in 1 strip" both give "10 strip"; "bottle of 30 ml Oral Suspension" and "30 ml in 1 bottle"
 * both "30 bottle ml". Unknown: "".
 */
export function packKey(pack: string | null | undefined): string {
  if (!pack) return '';
  const list = words(pack);
  const kept: string[] = [];
  for (let i = 0; i < list.length; i++) {
    const word = list[i]!;
    // "in 1 strip": the count of containers says nothing when it is one.
    if (word === '1' && CONTAINERS.has(list[i + 1] ?? '')) continue;
    if (/^\d/.test(word)) kept.push(word);
    else if (CONTAINERS.has(word)) kept.push(word.replace(/s$/, ''));
    // Its own keys only: a pack word such as "constructor" is no unit.
    else if (Object.hasOwn(UNIT_ALIASES, word)) kept.push(UNIT_ALIASES[word]!);
  }
  return kept.sort().join(' ');
}

const MAKER_NOISE = new Set(['ltd', 'limited', 'pvt', 'private', 'inc', 'llp', 'co', 'company', 'the', 'corp', 'corporation']);

/** The manufacturer for de-duplication: "Sanofi India  Ltd" and "Sanofi India Pvt. Ltd." are one maker. */
export function makerKey(maker: string): string {
  return words(maker)
    .filter((w) => !MAKER_NOISE.has(w))
    .join(' ');
}

export function nameKey(name: string): string {
  return normalizedName(name);
}

/** Abbreviations prescribers write for common tests, attached to any test whose name says it. */
const LAB_ABBREVIATIONS: Array<[RegExp, string[]]> = [
  [/\bcomplete blood count\b|\bcomplete ha?emogram\b|\bcbc\b/, ['CBC', 'Hemogram']],
  [/\bliver function\b/, ['LFT']],
  [/\b(kidney|renal) function\b/, ['KFT', 'RFT']],
  [/\bthyroid (profile|function|panel)\b/, ['TFT', 'T3 T4 TSH']],
  [/\bthyroid stimulating hormone\b|\bthyrotropin\b/, ['TSH']],
  [/\bglycated\b|\bglycosylated\b|\bhba 1 c\b|\bhemoglobin a 1 c\b/, ['HbA1c']],
  [/\berythrocyte sedimentation\b/, ['ESR']],
  [/\bc reactive protein\b/, ['CRP']],
  [/\bfasting (blood )?(sugar|glucose|plasma glucose)\b|\bglucose fasting\b/, ['FBS']],
  [/\bpost ?prandial\b|\bpp (blood )?sugar\b/, ['PPBS']],
  [/\brandom (blood )?(sugar|glucose)\b/, ['RBS']],
  [/\bprothrombin time\b/, ['PT', 'INR']],
  [/\bblood urea nitrogen\b/, ['BUN']],
  [/\bprostate specific antigen\b/, ['PSA']],
  [/\bvitamin d\b|\b25 hydroxy\b|\b25 oh\b/, ['Vit D']],
  [/\bvitamin b 12\b|\bcobalamin\b/, ['Vit B12']],
  [/\blipid (profile|panel)\b/, ['Lipid']],
  [/\burine routine\b|\burinalysis\b/, ['Urine R/M']],
  [/\bactivated partial thromboplastin\b/, ['APTT']],
];

export function derivedLabAbbreviations(name: string): string[] {
  const key = normalizedName(name);
  const out: string[] = [];
  for (const [pattern, abbreviations] of LAB_ABBREVIATIONS) if (pattern.test(key)) out.push(...abbreviations);
  return out;
}

/** A category for a LOINC long name, from what it measures and in what; null when unclear. */
export function labCategoryFromLoinc(name: string): string | null {
  if (/culture|organism|bacteria|virus|\bdna\b|\brna\b|microscopy|smear/i.test(name)) return 'Microbiology';
  if (/\bAb\b|\bAg\b|\bIg[GMAE]\b|antibod|antigen/.test(name)) return 'Serology & Immunology';
  if (/\bin (Urine|Urine sediment)\b/i.test(name)) return 'Urine';
  if (/\b(Stool|Feces)\b/i.test(name)) return 'Stool';
  if (/\b(Cerebral spinal fluid|CSF)\b/i.test(name)) return 'CSF';
  if (/hemoglobin|leukocytes|erythrocytes|platelets|hematocrit|coagulation|prothrombin|thromboplastin|fibrinogen/i.test(name)) return 'Haematology';
  if (/\b(Serum|Plasma|Blood)\b/i.test(name)) return 'Biochemistry';
  return null;
}
