/**
 * Other official names of the same substance (rINN, BAN, USAN, IP: adrenaline and epinephrine) and drug
 * names known to be confused with one another (ISMP), read from the built-in catalogue's data files,
 * which cite their published sources.
 */
import { readFileSync } from 'node:fs';
import { words } from './normalize.ts';

const CATALOGUE_DIR = new URL('../../../../catalogue/', import.meta.url);

function read<T>(file: string): T {
  return JSON.parse(readFileSync(new URL(file, CATALOGUE_DIR), 'utf8')) as T;
}

export interface SynonymGroup {
  /** Lower-case names of one or more words ("acetylsalicylic acid"), the rINN first. */
  names: string[];
  sources: string[];
}

export const SYNONYM_GROUPS: readonly SynonymGroup[] = read<{ groups: SynonymGroup[] }>('synonyms.json').groups;

/**
 * The words a name is looked up by, run together: a name of several words is one word of the index
 * ("acetylsalicylicacid"; index and query both join the words of such a name where they appear, see
 * joinedNamesIn), and an acid also goes by its first word alone, as prescribers write it
 * ("clavulanic" for clavulanic acid).
 */
function keysOf(name: string): string[] {
  const list = words(name);
  const keys = [list.join('')];
  if (list.length === 2 && list[1] === 'acid') keys.push(list[0]!);
  return keys;
}

const SYNONYMS = new Map<string, string[]>();
for (const group of SYNONYM_GROUPS) {
  const keys = group.names.map(keysOf);
  keys.forEach((own, at) => {
    const others = keys.filter((_, i) => i !== at).flat();
    for (const key of own)
      SYNONYMS.set(
        key,
        [...new Set([...(SYNONYMS.get(key) ?? []), ...others])].filter((other) => other !== key),
      );
  });
}

/** The keys of names of several words. */
const JOINED = new Set(SYNONYM_GROUPS.flatMap((group) => group.names.filter((name) => words(name).length > 1).map((name) => words(name).join(''))));

/** Every prefix of every key: a run of words that is not one cannot become a key. */
const KEY_PREFIXES = new Set<string>();
for (const key of SYNONYMS.keys()) for (let i = 1; i <= key.length; i++) KEY_PREFIXES.add(key.slice(0, i));

/** Names of several words are at most this many (a name may be written in more words than its own: "acetyl salicylic acid"). */
const MAX_NAME_WORDS = 4;

/**
 * The other official names of the substance a word names (a several-word name as one word, see
 * keysOf); empty when it names none.
 */
export function synonymsOf(word: string): readonly string[] {
  return SYNONYMS.get(word) ?? [];
}

/**
 * The official names that runs of two or more of `list`'s words spell, run together: "glyceryl
 * trinitrate" and "ethinyl estradiol" as "glyceryltrinitrate" and "ethinylestradiol" (the rINN, one
 * word), also when written in more words than their own ("acetyl salicylic acid"). The index holds
 * them as words of their own, so that a query naming the substance otherwise finds them.
 */
export function joinedNamesIn(list: readonly string[]): string[] {
  let out: string[] | undefined;
  for (let i = 0; i + 1 < list.length; i++) {
    let joined = list[i]!;
    if (!KEY_PREFIXES.has(joined)) continue;
    for (let j = i + 1; j < list.length && j < i + MAX_NAME_WORDS; j++) {
      joined += list[j]!;
      if (!KEY_PREFIXES.has(joined)) break;
      if (SYNONYMS.has(joined)) (out ??= []).push(joined);
    }
  }
  return out ?? NONE;
}

const NONE: string[] = [];

/** Whether `word` is an official name of several words, run together ("glyceryltrinitrate"). */
export function isJoinedName(word: string): boolean {
  return JOINED.has(word);
}

/** The longest run of 2 or more words from `list[at]` that spells an official name: its length and the name run together; null when none. */
export function nameAt(list: readonly string[], at: number): { length: number; joined: string } | null {
  let found: { length: number; joined: string } | null = null;
  let joined = list[at] ?? '';
  if (!KEY_PREFIXES.has(joined)) return null;
  for (let j = at + 1; j < list.length && j < at + MAX_NAME_WORDS; j++) {
    joined += list[j]!;
    if (!KEY_PREFIXES.has(joined)) break;
    if (SYNONYMS.has(joined)) found = { length: j - at + 1, joined };
  }
  return found;
}

export interface ConfusableGroup {
  /** As the source writes them, with tall-man letters ("hydrOXYzine"). */
  names: string[];
  source: string;
}

export const CONFUSABLE_GROUPS: readonly ConfusableGroup[] = read<{ groups: ConfusableGroup[] }>('confusables.json').groups;

/** Lower-case name -> its tall-man spelling and the tall-man spellings of the names it is confused with. */
const CONFUSABLES = new Map<string, { written: string; twins: string[] }>();
for (const group of CONFUSABLE_GROUPS) {
  for (const written of group.names) {
    const key = written.toLowerCase();
    const entry = CONFUSABLES.get(key) ?? { written, twins: [] };
    for (const other of group.names) if (other !== written && !entry.twins.includes(other)) entry.twins.push(other);
    CONFUSABLES.set(key, entry);
  }
}

/** A known look-alike/sound-alike name: its tall-man spelling and its twins'; undefined when it is none. */
export function confusableOf(word: string): { written: string; twins: readonly string[] } | undefined {
  return CONFUSABLES.get(word);
}
