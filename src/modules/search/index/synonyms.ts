/**
 * Other official names of the same substance (rINN, BAN, USAN, IP: adrenaline and epinephrine) and drug
 * names known to be confused with one another (ISMP), read from the built-in catalogue's data files,
 * which cite their published sources.
 */
import { readFileSync } from 'node:fs';

const CATALOGUE_DIR = new URL('../../../../catalogue/', import.meta.url);

function read<T>(file: string): T {
  return JSON.parse(readFileSync(new URL(file, CATALOGUE_DIR), 'utf8')) as T;
}

export interface SynonymGroup {
  /** Lower-case single words, the rINN first. */
  names: string[];
  sources: string[];
}

export const SYNONYM_GROUPS: readonly SynonymGroup[] = read<{ groups: SynonymGroup[] }>('synonyms.json').groups;

const SYNONYMS = new Map<string, string[]>();
for (const group of SYNONYM_GROUPS)
  for (const name of group.names)
    SYNONYMS.set(
      name,
      group.names.filter((other) => other !== name),
    );

/** The other official names of the substance a word names; empty when it names none. */
export function synonymsOf(word: string): readonly string[] {
  return SYNONYMS.get(word) ?? [];
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
