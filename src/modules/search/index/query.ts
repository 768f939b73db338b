/**
 * Query parsing: a search text as the words the index looks up, each with how it may match (exactly,
 * by prefix, by a sound-alike spelling, by typo tolerance) and whether a document must hold it. Form,
 * unit and filler words ("tablet", "mg", "with") rank but are not required.
 */
import { FILLER_WORDS, formOfWord, SHORTHAND, UNIT_WORDS, words } from './normalize.ts';
import { nameAt, synonymsOf } from './synonyms.ts';

/** Query words beyond this many are folded into the last slot's neighbours: prescriptions are short. */
const MAX_SLOTS = 8;

export interface QueryWord {
  text: string;
  required: boolean;
  /**
   * Vocabulary words that count as an exact match: the word itself, its form or shorthand expansion,
   * the other official names of the substance it names.
   */
  exact: string[];
  prefix: boolean;
  /** Maximum edit distance for typo tolerance (0: none). */
  fuzzy: number;
  /** The word spelt as it sounds the same ("troksip" as "troxip"): near-equal, below exact and prefix matches. */
  sounds: string[];
  /** The last word, the one being typed: a slip in it may be followed by letters not typed yet. */
  typing: boolean;
}

export interface ParsedQuery {
  raw: string;
  /** The query without spaces and hyphens: equal to an exact name, or a prefix of a name. */
  compact: string;
  /** The same without unit and filler words ("pan 40mg" -> "pan40"), also tried as a name prefix. */
  compactCore: string;
  words: QueryWord[];
}

/**
 * Letters written differently for the same sound in drug names (Indian brands respell freely:
 * Troxip, Nextop, Ofron), each way round. Only whole-word or word-prefix lookups use them, so a
 * distinct drug spelt with the other letters is found after the exact name, never in its place.
 */
const SOUND_ALIKE: ReadonlyArray<[string, string]> = [
  ['ks', 'x'],
  ['ph', 'f'],
  ['ck', 'k'],
  ['ee', 'i'],
  ['ou', 'u'],
  ['z', 's'],
  ['w', 'v'],
  ['c', 'k'],
  ['y', 'i'],
];
const MAX_SOUNDS = 16;

/** Spellings of `word` with one or two of its sound-alike letter groups respelt. */
export function soundAlikes(word: string): string[] {
  const out = new Set<string>();
  const respell = (text: string, from: number): string[] => {
    const found: string[] = [];
    for (const [a, b] of SOUND_ALIKE) {
      for (const [x, y] of [
        [a, b],
        [b, a],
      ] as const) {
        for (let i = text.indexOf(x, from); i >= 0; i = text.indexOf(x, i + 1)) found.push(text.slice(0, i) + y + text.slice(i + x.length));
      }
    }
    return found;
  };
  for (const once of respell(word, 0)) {
    if (out.size >= MAX_SOUNDS) break;
    out.add(once);
  }
  for (const once of [...out]) {
    for (const twice of respell(once, 0)) {
      if (out.size >= MAX_SOUNDS) break;
      out.add(twice);
    }
  }
  out.delete(word);
  return [...out];
}

export function parseQuery(raw: string): ParsedQuery {
  const list = words(raw).slice(0, MAX_SLOTS);
  const parsed: QueryWord[] = [];
  for (let at = 0; at < list.length; ) {
    // An official name of several words ("acetylsalicylic acid", "glyceryl trinitrate") is one word, run
    // together as the index holds it (synonyms.ts), so that its other names ("aspirin") can stand for it.
    const name = nameAt(list, at);
    if (name) {
      const exact = [name.joined, ...synonymsOf(name.joined)];
      parsed.push({ text: name.joined, required: true, exact, prefix: true, fuzzy: 0, sounds: [], typing: false });
      at += name.length;
      continue;
    }
    parsed.push(wordOf(list, at));
    at++;
  }
  // A query of only form/unit words ("tablet") still has to match them.
  if (parsed.length > 0 && parsed.every((w) => !w.required)) for (const w of parsed) w.required = true;
  const core = list.filter((w) => !UNIT_WORDS.has(w) && !FILLER_WORDS.has(w)).join('');
  return { raw, compact: list.join(''), compactCore: core, words: parsed };
}

/** Query word `at` of `list` (as typed: no name of several words begins there). */
function wordOf(list: string[], at: number): QueryWord {
  const text = list[at]!;
  const form = formOfWord(text);
  if (form) return { text, required: false, exact: [...new Set([text, form])], prefix: false, fuzzy: 0, sounds: [], typing: false };
  if (UNIT_WORDS.has(text) || FILLER_WORDS.has(text)) {
    return { text, required: false, exact: [text], prefix: false, fuzzy: 0, sounds: [], typing: false };
  }
  const numeric = /^\d/.test(text);
  const alias = SHORTHAND.get(text);
  const exact = [...new Set([text, ...(alias ? [alias] : []), ...synonymsOf(text), ...(alias ? synonymsOf(alias) : [])])];
  return {
    text,
    required: true,
    exact,
    prefix: numeric || text.length >= 2 || list.length === 1,
    // One edit from 4 letters (contract 3; three letters with a slip begin too much to tell), two from
    // 5 (a word of 6 with a letter dropped), as search engines' automatic fuzziness; never for numbers.
    fuzzy: numeric ? 0 : text.length >= 5 ? 2 : text.length >= 4 ? 1 : 0,
    sounds: numeric || text.length < 3 ? [] : soundAlikes(text).filter((sound) => !exact.includes(sound)),
    typing: !numeric && at === list.length - 1,
  };
}
