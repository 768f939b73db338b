/**
 * Indian names written in Latin letters: normalisation, phonetic keys and the score that ranks a
 * patient's name against a query. Pure (no database): the name index (name-index.ts) stores the keys
 * made here and ranks its candidates with `scoreName`.
 *
 * Transliteration writes one name many ways (Srinivas, Shrinivas, Sreenivas; Chaudhary, Choudhury,
 * Chowdhury), so each token gets two keys:
 * - the skeleton: its consonant sounds only, with the variants that transliteration produces folded
 *   together (sh/s, th/t, bh/b, kh/k, ph/f, w/v/b, z/j, q/k, x/ks, doubled letters). Schwa deletion
 *   (Raghavendra, Raghvendra) and vowel spellings (ee/i, oo/u, au/ou/ow) vanish with the vowels. The
 *   index looks candidates up by skeleton.
 * - the phonetic key: the same sounds with each run of vowels kept as one vowel mark, which tells
 *   Shanti from Sunita where the skeleton does not; it ranks.
 */

export interface NameToken {
  /** Lower case a-z. */
  text: string;
  /** A single letter standing for a name (R. K. Sharma). */
  initial: boolean;
  skeleton: string;
  phonetic: string;
}

/** Written before a name, never part of it when more of the name follows. */
const HONORIFICS = new Set([
  'mr',
  'mrs',
  'ms',
  'miss',
  'mst',
  'master',
  'smt',
  'shrimati',
  'srimati',
  'shri',
  'shree',
  'sh',
  'dr',
  'prof',
  'late',
  'kumari',
  'kum',
  'km',
  'baby',
  'bo',
  'so',
  'do',
  'wo',
  'co',
]);

/** Abbreviations written for one name (a Map: a word such as "constructor" is no key of it). */
const SPELLINGS = new Map<string, string>([
  ['md', 'mohammed'],
  ['mohd', 'mohammed'],
  ['mohmd', 'mohammed'],
  ['mhd', 'mohammed'],
  ['mohamad', 'mohammed'],
]);

const VOWELS = new Set(['a', 'e', 'i', 'o', 'u']);
const ASPIRATED = new Set(['b', 'c', 'd', 'g', 'j', 'k', 'p', 's', 't']);

function isVowelAt(s: string, i: number): boolean {
  const c = s[i];
  if (c === undefined) return false;
  if (VOWELS.has(c)) return true;
  return c === 'y' && i > 0;
}

/**
 * The sounds of a token: consonant classes, and 'a' for each run of vowels. `w` after a vowel and
 * before a consonant is a vowel (Chowdhury); `h` after a stop is its aspiration (bh, dh), elsewhere
 * inside a word it is silent in spelling variants (Rehman, Rahman).
 */
function sounds(token: string): string[] {
  let s = token;
  if (s.startsWith('dny') || s.startsWith('jn')) s = `gy${s.slice(s.startsWith('dny') ? 3 : 2)}`;
  const out: string[] = [];
  const push = (sound: string) => {
    // Doubled letters are one sound; vowel runs are one mark.
    if (out[out.length - 1] !== sound) out.push(sound);
  };
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    const next = s[i + 1];
    if (isVowelAt(s, i)) {
      push('a');
      continue;
    }
    switch (c) {
      case 'h':
        if (i === 0) push('h');
        break;
      case 'w':
        // Chowdhury's w is a vowel; swamy is also written samy.
        if (i > 0 && isVowelAt(s, i - 1) && next !== undefined && !isVowelAt(s, i + 1)) push('a');
        else if (!(out[out.length - 1] === 's' && /^w[ae]m/.test(s.slice(i)))) push('v');
        break;
      case 'c':
        if (next === 'h') {
          push('c');
          i += s[i + 2] === 'h' ? 2 : 1;
        } else if (next === 'k') {
          push('k');
          i++;
        } else if (next === 'e' || next === 'i' || next === 'y') push('s');
        else push('k');
        break;
      case 'p':
        if (next === 'h') {
          push('f');
          i++;
        } else push('p');
        break;
      case 'x':
        push('k');
        push('s');
        break;
      case 'q':
        push('k');
        break;
      case 'z':
        push('j');
        break;
      case 'b':
      case 'v':
        push('v');
        if (next === 'h') i++;
        break;
      default:
        push(c);
        if (next === 'h' && ASPIRATED.has(c)) i++;
    }
  }
  return out;
}

/** The consonant skeleton of a token (its retrieval key); a leading vowel is kept as 'a'. */
export function skeletonOf(token: string): string {
  const all = sounds(token);
  let key = all[0] === 'a' ? 'a' : '';
  // Consonants either side of a vowel stay two (Mamata, Mamta: mmt).
  for (const sound of all) if (sound !== 'a') key += sound;
  return key;
}

/** The sounds of a token with each vowel run as 'a' and no trailing vowel (Krishna, Krishn). */
export function phoneticOf(token: string): string {
  const all = sounds(token);
  while (all.length > 1 && all[all.length - 1] === 'a') all.pop();
  return all.join('');
}

/** The first sounds a name written with this initial can start with (C: Chandra or Kiran's K). */
export function initialClasses(letter: string): string[] {
  if (VOWELS.has(letter)) return ['a'];
  switch (letter) {
    case 'c':
      return ['c', 'k', 's'];
    case 'p':
      return ['p', 'f'];
    case 'b':
    case 'v':
    case 'w':
      return ['v'];
    case 'z':
    case 'j':
      return ['j'];
    case 'q':
    case 'k':
    case 'x':
      return ['k'];
    case 'g':
      return ['g'];
    default:
      return [letter];
  }
}

function makeToken(text: string, initial: boolean): NameToken {
  return { text, initial, skeleton: skeletonOf(text), phonetic: phoneticOf(text) };
}

/** Portuguese surnames written with D' (D'Souza), also as "D Souza". */
const AFTER_D = new Set([
  'souza',
  'sousa',
  'silva',
  'costa',
  'cruz',
  'cunha',
  'mello',
  'melo',
  'sa',
  'lima',
  'almeida',
  'abreu',
  'mello',
  'monte',
  'penha',
]);

/** Words of a name: lower case, accents and punctuation gone, "D'Souza" one word, "R.K." two letters. */
function words(raw: string): string[] {
  const all = raw
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/\b([bsdwc])\s*\/\s*o\b/g, '$1o')
    .replace(/['’`]/g, '')
    .split(/[^a-z]+/)
    .filter((w) => w.length > 0);
  for (let i = 0; i + 1 < all.length; i++) if (all[i] === 'd' && AFTER_D.has(all[i + 1]!)) all.splice(i, 2, `d${all[i + 1]}`);
  return all;
}

/**
 * The tokens of a name given whole or in parts (first, middle, last): honorifics before the name
 * dropped, abbreviations spelled out, and groups of consonants alone ("RK") read as initials.
 */
export function nameTokens(...parts: Array<string | null | undefined>): NameToken[] {
  return tokensOf(words(parts.filter((p) => p).join(' ')), false);
}

/**
 * The tokens of a search text read with its last word as the beginning of a word still being typed: a
 * group of consonants there ("Sunita Sh", "Rajesh Kr") is then one word, where nameTokens reads initials.
 */
export function typedNameTokens(text: string): NameToken[] {
  return tokensOf(words(text), true);
}

function tokensOf(all: string[], lastTyped: boolean): NameToken[] {
  while (all.length > 1 && HONORIFICS.has(all[0]!)) all.shift();
  const tokens: NameToken[] = [];
  for (const [i, word] of all.entries()) {
    const spelled = SPELLINGS.get(word);
    const typed = lastTyped && i === all.length - 1;
    if (spelled) tokens.push(makeToken(spelled, false));
    else if (word.length === 1) tokens.push(makeToken(word, true));
    else if (word.length <= 3 && !/[aeiouy]/.test(word) && !typed) for (const letter of word) tokens.push(makeToken(letter, true));
    else tokens.push(makeToken(word, false));
  }
  return tokens;
}

/** The tokens as stored: words, and initials as single letters, separated by spaces. */
export function tokensToText(tokens: NameToken[]): string {
  return tokens.map((t) => t.text).join(' ');
}

/** Stored text back to tokens (single letters are initials); `known` keeps the tokens already made. */
export function tokensFromText(text: string, known?: Map<string, NameToken>): NameToken[] {
  const tokens: NameToken[] = [];
  for (const word of text.split(' ')) {
    if (word.length === 0) continue;
    let token = known?.get(word);
    if (!token) {
      token = makeToken(word, word.length === 1);
      known?.set(word, token);
    }
    tokens.push(token);
  }
  return tokens;
}

/** Letters a typing or transliterating hand swaps for one another: swapping them costs half. */
const SIMILAR = ['aeiouy', 'td', 'kgcq', 'pbf', 'szj', 'vwbou', 'rl', 'nm'];

function substitution(a: string, b: string): number {
  if (a === b) return 0;
  return SIMILAR.some((group) => group.includes(a) && group.includes(b)) ? 0.5 : 2;
}

/**
 * An edit distance between spellings: a missing, extra or swapped letter costs 1, a similar letter
 * (t/d, a vowel for another) half, another letter 2, so Rajesh is not a typo of Ramesh. Stops early
 * above `max`.
 */
export function editDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      let value = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + substitution(a[i - 1]!, b[j - 1]!));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, rows[i - 2]![j - 2]! + 1);
      row.push(value);
      if (value < best) best = value;
    }
    if (best > max) return max + 1;
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}

/** How far apart two spellings of one word may be for a typo: none under 4 letters, 2 from 8. */
function typoBudget(length: number): number {
  return length >= 8 ? 2 : length >= 4 ? 1 : 0;
}

/** How well a name token answers a query token: 1 exact, down to 0 for no match. */
export function matchToken(query: NameToken, name: NameToken, queryIsPrefix: boolean): number {
  if (query.initial) {
    if (name.initial) return query.text === name.text ? 1 : 0;
    return name.text[0] === query.text || initialClasses(query.text).includes(name.skeleton[0] ?? '') ? 0.5 : 0;
  }
  if (name.initial) return query.text[0] === name.text || initialClasses(name.text).includes(query.skeleton[0] ?? '') ? 0.4 : 0;
  if (name.text === query.text) return 1;
  if (queryIsPrefix && name.text.startsWith(query.text)) return 0.9;
  if (name.phonetic === query.phonetic) return 0.85;
  if (name.skeleton === query.skeleton && query.skeleton.length > 1) return 0.75;
  if (queryIsPrefix && query.skeleton.length >= 2 && name.skeleton.startsWith(query.skeleton)) return 0.6;
  // A typo keeps the first sound (the index finds typos by it), which spares most comparisons.
  const budget = typoBudget(query.text.length);
  if (budget > 0 && name.skeleton[0] === query.skeleton[0] && editDistance(query.text, name.text, budget) <= budget) return 0.55;
  return 0;
}

/**
 * The score of a name for a query, 0 when some query token matches none of the name's tokens; each
 * name token answers one query token, in any order. Higher is better: the mean token match (exact 1,
 * prefix 0.9, same sounds 0.85, same skeleton 0.75, skeleton prefix 0.6, typo 0.55, initial 0.5 or
 * 0.4), plus a little for the query's order and less for name tokens the query did not name.
 * The last query token may be a prefix (the user is still typing it).
 */
export function scoreName(query: NameToken[], name: NameToken[]): number {
  if (query.length === 0 || query.length > name.length) return 0;
  const pairs: Array<{ q: number; n: number; score: number }> = [];
  for (let q = 0; q < query.length; q++) {
    for (let n = 0; n < name.length; n++) {
      const score = matchToken(query[q]!, name[n]!, q === query.length - 1);
      if (score > 0) pairs.push({ q, n, score });
    }
  }
  pairs.sort((a, b) => b.score - a.score || a.q - b.q || a.n - b.n);
  const byQuery = new Array<number>(query.length).fill(-1);
  const usedName = new Set<number>();
  let total = 0;
  for (const pair of pairs) {
    if (byQuery[pair.q] !== -1 || usedName.has(pair.n)) continue;
    byQuery[pair.q] = pair.n;
    usedName.add(pair.n);
    total += pair.score;
  }
  if (byQuery.includes(-1)) return 0;
  let inOrder = true;
  for (let q = 1; q < query.length; q++) if (byQuery[q]! < byQuery[q - 1]!) inOrder = false;
  const unnamed = name.length - query.length;
  return Math.round(((total / query.length) * 100 + (inOrder ? 2 : 0) - Math.min(unnamed, 3)) * 100) / 100;
}
