/**
 * What search forgives (issue 36): query sets generated at bench time, with a fixed seed, from the real
 * catalogues (the built-in one and ../shared/data, never copied into the project), one set per kind of
 * query a prescriber types, each scored top-1 / top-5 / no result beside its goal. How the sets are made,
 * and the error studies their slips follow, is in bench/SEARCH-FORGIVENESS.md.
 *
 * Run alone: `node bench/search-forgiveness.ts` (SEARCH_FORGIVENESS_CASES overrides 1000 cases per kind;
 * SEARCH_FORGIVENESS_SHOW=kind prints that kind's misses).
 */
import { SearchIndex } from '../src/modules/search/index/engine.ts';
import { describeDrug } from '../src/modules/search/index/fields.ts';
import { drugRecordFromRow, Interner, type DrugRecord } from '../src/modules/search/index/model.ts';
import { joinedNamesIn, SYNONYM_GROUPS, synonymsOf } from '../src/modules/search/index/synonyms.ts';
import { compact, formOfWord, words } from '../src/modules/search/index/normalize.ts';
import { parseQuery } from '../src/modules/search/index/query.ts';
import { boundedDistance } from '../src/modules/search/index/slips.ts';
import { DrugStore } from '../src/modules/search/index/store.ts';
import { newDrugRow } from '../src/modules/search/ingest/importer.ts';
import type { BenchFigure } from './search.ts';
import { random, realDrugs } from './search-corpus.ts';

const CASES = Number(process.env.SEARCH_FORGIVENESS_CASES ?? 1000);
const SEED = 36;

interface Goal {
  top1?: number;
  top5: number;
  noResult: number;
}
const GOAL: Goal = { top1: 0.97, top5: 0.995, noResult: 0.005 };
const GOAL_TWO_SLIPS: Goal = { top1: 0.9, top5: 0.97, noResult: 0.02 };
const GOAL_PREFIX_SLIP: Goal = { top5: 0.9, noResult: 0.04 };

/** A generated query and what counts as finding what was meant. */
interface Case {
  q: string;
  meant: string;
  found: (record: DrugRecord) => boolean;
}

interface Kind {
  name: string;
  example: string;
  goal: Goal;
  cases: Case[];
}

/**
 * QWERTY neighbours: most substitution slips hit an adjacent key (Kukich 1992; Grudin 1983 measured
 * about 60 % of substitutions in skilled typing on a neighbouring key).
 */
const QWERTY = ['qwertyuiop', 'asdfghjkl', 'zxcvbnm'];
const NEIGHBOURS = new Map<string, string>();
for (let row = 0; row < QWERTY.length; row++) {
  for (let col = 0; col < QWERTY[row]!.length; col++) {
    let near = '';
    for (const [r, c] of [
      [row, col - 1],
      [row, col + 1],
      [row - 1, col],
      [row - 1, col + 1],
      [row + 1, col - 1],
      [row + 1, col],
    ] as const) {
      const key = QWERTY[r]?.[c];
      if (key) near += key;
    }
    NEIGHBOURS.set(QWERTY[row]![col]!, near);
  }
}

/** Sound-alike spellings of the issue, both ways. */
const SOUND_SWAPS: Array<[string, string]> = [
  ['x', 'ks'],
  ['ph', 'f'],
  ['ck', 'k'],
  ['ee', 'i'],
  ['ou', 'u'],
  ['z', 's'],
  ['w', 'v'],
];

type Random = () => number;

/**
 * One slip of the fingers, kinds in the proportions of Damerau (1964) and Kukich (1992): substitution
 * (mostly a neighbouring key), omission (a dropped letter), insertion (mostly a doubled letter or a
 * neighbour) and transposition of adjacent letters. The first letter is kept: it is the one most
 * rarely wrong (Yannakoudakis and Fawthrop 1983).
 */
function slip(word: string, next: Random): string {
  const at = 1 + Math.floor(next() * (word.length - 1));
  const c = word[at]!;
  const roll = next();
  if (roll < 0.35) {
    const near = next() < 0.75 ? (NEIGHBOURS.get(c) ?? 'aeiou') : 'abcdefghijklmnopqrstuvwxyz';
    const to = near[Math.floor(next() * near.length)]!;
    return to === c ? slip(word, next) : word.slice(0, at) + to + word.slice(at + 1);
  }
  if (roll < 0.6) return word.slice(0, at) + word.slice(at + 1);
  if (roll < 0.8) {
    const near = NEIGHBOURS.get(c) ?? c;
    const extra = next() < 0.5 ? c : near[Math.floor(next() * near.length)]!;
    return word.slice(0, at) + extra + word.slice(at);
  }
  if (at + 1 >= word.length) return word.slice(0, at - 1) + word[at] + word[at - 1];
  return word[at + 1] === c ? slip(word, next) : word.slice(0, at) + word[at + 1] + c + word.slice(at + 2);
}

function soundSwap(word: string, next: Random): string | null {
  const sites: Array<[number, string, string]> = [];
  for (const [a, b] of SOUND_SWAPS) {
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      for (let i = word.indexOf(from); i >= 0; i = word.indexOf(from, i + 1)) sites.push([i, from, to]);
    }
  }
  if (sites.length === 0) return null;
  const [i, from, to] = sites[Math.floor(next() * sites.length)]!;
  return word.slice(0, i) + to + word.slice(i + from.length);
}

const pick = <T>(list: readonly T[], next: Random): T => list[Math.floor(next() * list.length)]!;

/** The query sets, generated from the catalogue with a fixed seed. */
export function forgivenessKinds(records: DrugRecord[], perKind = CASES, seed = SEED): Kind[] {
  const next = random(seed);
  const vocabulary = new Set<string>();
  const brands = new Map<string, DrugRecord[]>();
  for (const record of records) {
    const name = words(record.name);
    for (const word of [...name, ...words(record.common_name)]) vocabulary.add(word);
    const brand = name[0];
    const salts = new Set(words(record.common_name));
    // Brands of active products: a discontinued one comes after active matches unless named exactly (contract 3).
    // A product named after its salt ("Domperidone 10 mg Tablet") is a generic, not a brand.
    if (brand && /^[a-z]{4,}$/.test(brand) && !record.discontinued && !salts.has(brand)) brands.set(brand, [...(brands.get(brand) ?? []), record]);
  }
  const brandList = [...brands.keys()].sort();
  const firstWord = (record: DrugRecord) => words(record.name)[0] ?? '';
  /** A brand, with its strength when its products name one: "telma 40". */
  const brandQuery = (): { brand: string; rest: string[]; product: DrugRecord; found: (record: DrugRecord) => boolean } => {
    const brand = pick(brandList, next);
    const product = pick(brands.get(brand)!, next);
    const second = words(product.name)[1];
    const rest = second && /^\d/.test(second) ? [second] : [];
    const meant = [brand, ...rest];
    return { brand, rest, product, found: (record) => meant.every((w, i) => words(record.name)[i] === w) };
  };

  const generate = (make: () => Case | null): Case[] => {
    const out: Case[] = [];
    const seen = new Set<string>();
    for (let tries = 0; out.length < perKind && tries < perKind * 50; tries++) {
      const c = make();
      if (c && !seen.has(c.q)) {
        seen.add(c.q);
        out.push(c);
      }
    }
    return out;
  };
  /** A slipped word that is itself a word of the catalogue means something else: not a slip to forgive. */
  const slipped = (word: string, slips: number): string | null => {
    let out = word;
    for (let i = 0; i < slips; i++) out = slip(out, next);
    return out === word || vocabulary.has(out) || (slips === 2 && out.length < 5) ? null : out;
  };

  /**
   * Kept only when the meant brand is unambiguous, as the issue's benchmark does: the typed word does not
   * begin another brand (the prescriber may be typing it) and no other brand is as close to it as the
   * meant one (`tropen` is one letter from Tropin and from Tropan; nothing in the catalogue breaks the tie).
   */
  const unambiguous = (typed: string, brand: string): boolean => {
    const distance = boundedDistance(typed, brand, 3);
    for (const other of brandList) {
      if (other === brand) continue;
      if (other.startsWith(typed) || boundedDistance(typed, other, distance) <= distance) return false;
    }
    return true;
  };
  const brandSlips = (slips: number, minLength: number) => () => {
    const { brand, rest, found } = brandQuery();
    if (brand.length < minLength) return null;
    const typed = slipped(brand, slips);
    return typed && unambiguous(typed, brand) ? { q: [typed, ...rest].join(' '), meant: [brand, ...rest].join(' '), found } : null;
  };

  const prefixes = (withSlip: boolean) => () => {
    const brand = pick(brandList, next);
    const length = (withSlip ? 4 : 3) + Math.floor(next() * (withSlip ? 3 : 4));
    if (brand.length <= length) return null;
    const prefix = brand.slice(0, length);
    // Kept when the typed letters point at a few brands: the meant one can be among the first five.
    if (brandList.filter((b) => b.startsWith(prefix)).length > 3) return null;
    const typed = withSlip ? slipped(prefix, 1) : prefix;
    if (!typed || (withSlip && brandList.some((b) => b.startsWith(typed)))) return null;
    return { q: typed, meant: `${brand} (${prefix}…)`, found: (record: DrugRecord) => compact(record.name).startsWith(prefix) };
  };

  /**
   * A half-typed word of 3 letters with one slip: a letter replaced or two swapped in a brand's first 3
   * letters, or one dropped from its first 4 (the slips in the proportions of slip()).
   */
  const threeLetters = () => {
    const brand = pick(brandList, next);
    const length = next() < 0.5 ? 3 : 4;
    if (brand.length <= length) return null;
    const prefix = brand.slice(0, length);
    if (brandList.filter((b) => b.startsWith(prefix)).length > 3) return null;
    const typed = slipped(prefix, 1);
    if (typed === null || typed.length !== 3 || brandList.some((b) => b.startsWith(typed))) return null;
    return { q: typed, meant: `${brand} (${prefix}…)`, found: (record: DrugRecord) => compact(record.name).startsWith(prefix) };
  };

  const generics = () => {
    const record = pick(records, next);
    const salts = record.common_name.split(' + ');
    if (salts.length > 2 || record.common_name === record.name) return null;
    const saltWords = words(record.common_name);
    if (saltWords.length === 0 || saltWords.length > 5) return null;
    // Found: a product of the same salts (in any order, under any of their official names).
    const official = (word: string) => [word, ...synonymsOf(word)];
    const found = (r: DrugRecord) => {
      const list = words(r.common_name);
      const held = new Set([...list, ...joinedNamesIn(list)]);
      return r.common_name.split(' + ').length === salts.length && saltWords.every((w) => official(w).some((name) => held.has(name)));
    };
    const strength = /^\d+(\.\d+)?/.exec(record.generic_name.split('(')[1] ?? '')?.[0];
    const typed = saltWords.map((w) => w);
    if (next() < 0.6) {
      const at = typed.findIndex((w) => w.length >= 6);
      const slippedWord = at >= 0 ? slipped(typed[at]!, 1) : null;
      if (!slippedWord) return null;
      typed[at] = slippedWord;
    }
    if (strength && next() < 0.4) typed.push(strength);
    return { q: typed.join(' '), meant: record.common_name, found };
  };

  const singleWordGroups = SYNONYM_GROUPS.filter((group) => group.names.every((name) => words(name).length === 1));
  const synonyms = () => {
    const group = pick(singleWordGroups, next);
    const stored = group.names.filter((n) => vocabulary.has(n));
    const others = group.names.filter((n) => !vocabulary.has(n));
    if (stored.length === 0 || others.length === 0) return null;
    const typed = pick(others, next);
    return {
      q: typed,
      meant: stored.join('/'),
      found: (record: DrugRecord) => words(record.common_name).some((w) => stored.includes(w)) || words(record.name).some((w) => stored.includes(w)),
    };
  };

  // Names of several words, as the index holds them: their words run together.
  const key = (name: string) => words(name).join('');
  const heldBy = new Map<string, DrugRecord[]>();
  for (const record of records) {
    const list = [...words(record.name), ...words(record.common_name)];
    for (const held of new Set([...list, ...joinedNamesIn(list)])) heldBy.set(held, [...(heldBy.get(held) ?? []), record]);
  }
  const severalWordGroups = SYNONYM_GROUPS.filter((group) => group.names.some((name) => words(name).length > 1));
  /**
   * A name of a group that has a name of several words, typed (+ a product's strength) where the
   * catalogue holds the molecule under another of its names: found when a result holds any of them.
   */
  const severalWords = () => {
    const group = pick(severalWordGroups, next);
    const typed = pick(group.names, next);
    const keys = [...new Set(group.names.map(key))];
    const stored = keys.filter((other) => other !== key(typed) && heldBy.has(other));
    if (stored.length === 0) return null;
    const holds = (record: DrugRecord) => {
      const list = [...words(record.name), ...words(record.common_name)];
      return [...list, ...joinedNamesIn(list)].some((w) => keys.includes(w));
    };
    if (next() < 0.5) return { q: typed, meant: keys.join('/'), found: holds };
    const product = pick(heldBy.get(pick(stored, next))!, next);
    const strength = /^\d+(\.\d+)?/.exec(product.generic_name.split('(')[1] ?? '')?.[0];
    if (!strength) return null;
    return {
      q: `${typed} ${strength}`,
      meant: `${keys.join('/')} ${strength}`,
      found: (record: DrugRecord) => holds(record) && [...words(record.name), ...words(record.generic_name)].includes(strength),
    };
  };

  const SHORT: Record<string, string[]> = {
    tablet: ['tab', 'tabs'],
    capsule: ['cap', 'caps'],
    syrup: ['syp', 'syr'],
    injection: ['inj'],
    suspension: ['susp'],
    ointment: ['oint'],
  };
  const shorthand = () => {
    const { brand, rest, product, found } = brandQuery();
    const short = SHORT[product.product_type];
    if (!short || !words(product.name).some((w) => formOfWord(w) === product.product_type)) return null;
    const meant = [brand, ...rest];
    const variant = words(product.common_name).find((w) => /sulph|sulf/.test(w));
    if (variant && next() < 0.5) {
      const typed = variant.includes('sulph') ? variant.replace('sulph', 'sulf') : variant.replace('sulf', 'sulph');
      return { q: `${brand} ${typed}`, meant: `${brand} (${variant})`, found: (record: DrugRecord) => firstWord(record) === brand };
    }
    return {
      q: [...meant, pick(short, next)].join(' '),
      meant: `${meant.join(' ')} ${product.product_type}`,
      found: (record: DrugRecord) => found(record) && record.product_type === product.product_type,
    };
  };

  return [
    { name: 'brand, one slip', example: 'tlema 40 (Telma 40)', goal: GOAL, cases: generate(brandSlips(1, 4)) },
    {
      name: 'brand, one sound-alike spelling',
      example: 'troksip (Troxip)',
      goal: GOAL,
      cases: generate(() => {
        const { brand, rest, found } = brandQuery();
        const typed = soundSwap(brand, next);
        if (!typed || vocabulary.has(typed) || !unambiguous(typed, brand)) return null;
        return { q: [typed, ...rest].join(' '), meant: [brand, ...rest].join(' '), found };
      }),
    },
    { name: 'brand of 6+ letters, two slips', example: 'prasuok 10 (Prasudoc 10)', goal: GOAL_TWO_SLIPS, cases: generate(brandSlips(2, 6)) },
    { name: 'first 3-6 letters of a brand', example: 'augme', goal: GOAL, cases: generate(prefixes(false)) },
    { name: 'first 4-6 letters of a brand, one slip', example: 'rabidd (Rabidoc)', goal: GOAL_PREFIX_SLIP, cases: generate(prefixes(true)) },
    { name: 'generic name, with or without a slip', example: 'paracetmol 650', goal: GOAL, cases: generate(generics) },
    { name: 'another official name of the molecule', example: 'nicoumalone (acenocoumarol)', goal: GOAL, cases: generate(synonyms) },
    {
      name: 'another official name of the molecule, of several words or for one',
      example: 'acetylsalicylic acid 75 (Aspirin 75)',
      goal: GOAL,
      cases: generate(severalWords),
    },
    { name: 'dosage-form shorthand and spelling variants', example: 'dolo 650 tab', goal: GOAL, cases: generate(shorthand) },
    // Last, so that the sets drawn before it stay as they were.
    { name: 'a half-typed word of 3 letters, one slip', example: 'tle (Tel…)', goal: GOAL_PREFIX_SLIP, cases: generate(threeLetters) },
  ];
}

export async function forgivenessIndex(): Promise<{ index: SearchIndex<DrugRecord>; records: DrugRecord[] }> {
  const interner = new Interner();
  const now = Date.now();
  const records = (await realDrugs()).map((input, i) => drugRecordFromRow({ ...newDrugRow(input, 1, now), id: `d${i}` }, interner));
  const index = new SearchIndex(describeDrug, () => new DrugStore());
  index.build(records);
  return { index, records };
}

const percent = (value: number) => `${(Math.round(value * 1000) / 10).toFixed(1)} %`;

export async function runSearchForgivenessBench(): Promise<BenchFigure[]> {
  const { index, records } = await forgivenessIndex();
  const show = process.env.SEARCH_FORGIVENESS_SHOW;
  const figures: BenchFigure[] = [];
  for (const kind of forgivenessKinds(records)) {
    let top1 = 0;
    let top5 = 0;
    let none = 0;
    for (const c of kind.cases) {
      const hits = index.search(parseQuery(c.q), 5);
      if (hits.length === 0) none++;
      const at = hits.findIndex((hit) => c.found(hit.record));
      if (at === 0) top1++;
      if (at >= 0) top5++;
      if (at !== 0 && show && kind.name.startsWith(show))
        console.log(`${c.q} (${c.meant}) -> ${hits.map((h) => h.record.name).join(' | ') || 'nothing'}`);
    }
    const n = kind.cases.length;
    const goal = kind.goal;
    const held =
      (goal.top1 === undefined || top1 / n >= goal.top1) && top5 / n >= goal.top5 && none / n < goal.noResult ? 'goals held' : 'goals NOT held';
    figures.push({
      name: `${kind.name} (${kind.example}): top-1`,
      value: Math.round((top1 / n) * 1000) / 10,
      unit: '%',
      note: `top-5 ${percent(top5 / n)}, no result ${percent(none / n)} of ${n} queries; goals: ${goal.top1 === undefined ? '' : `top-1 >= ${percent(goal.top1)}, `}top-5 >= ${percent(goal.top5)}, no result < ${percent(goal.noResult)}; ${held}`,
    });
  }
  return figures;
}

if (import.meta.main) {
  for (const figure of await runSearchForgivenessBench()) console.log(`${figure.name}: ${figure.value} ${figure.unit} (${figure.note})`);
}
