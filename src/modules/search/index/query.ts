/**
 * Query parsing: a search text as the words the index looks up, each with how it may match (exactly,
 * by prefix, by typo tolerance) and whether a document must hold it. Form, unit and filler words
 * ("tablet", "mg", "with") rank but are not required.
 */
import { FILLER_WORDS, formOfWord, SHORTHAND, UNIT_WORDS, words } from './normalize.ts';

/** Query words beyond this many are folded into the last slot's neighbours: prescriptions are short. */
const MAX_SLOTS = 8;

export interface QueryWord {
  text: string;
  required: boolean;
  /** Vocabulary words that count as an exact match (the word itself, its form or shorthand expansion). */
  exact: string[];
  prefix: boolean;
  /** Maximum edit distance for typo tolerance (0: none). */
  fuzzy: number;
}

export interface ParsedQuery {
  raw: string;
  /** The query without spaces and hyphens: equal to an exact name, or a prefix of a name. */
  compact: string;
  /** The same without unit and filler words ("pan 40mg" -> "pan40"), also tried as a name prefix. */
  compactCore: string;
  words: QueryWord[];
}

export function parseQuery(raw: string): ParsedQuery {
  const list = words(raw).slice(0, MAX_SLOTS);
  const parsed: QueryWord[] = list.map((text) => {
    const form = formOfWord(text);
    if (form) return { text, required: false, exact: [...new Set([text, form])], prefix: false, fuzzy: 0 };
    if (UNIT_WORDS.has(text) || FILLER_WORDS.has(text)) {
      return { text, required: false, exact: [text], prefix: false, fuzzy: 0 };
    }
    const numeric = /^\d/.test(text);
    const alias = SHORTHAND.get(text);
    return {
      text,
      required: true,
      exact: alias ? [text, alias] : [text],
      prefix: numeric || text.length >= 2 || list.length === 1,
      // One edit from 4 letters, two from 8 (contract section 3); never for numbers.
      fuzzy: numeric ? 0 : text.length >= 8 ? 2 : text.length >= 4 ? 1 : 0,
    };
  });
  // A query of only form/unit words ("tablet") still has to match them.
  if (parsed.length > 0 && parsed.every((w) => !w.required)) for (const w of parsed) w.required = true;
  const core = list.filter((w) => !UNIT_WORDS.has(w) && !FILLER_WORDS.has(w)).join('');
  return { raw, compact: list.join(''), compactCore: core, words: parsed };
}
