/**
 * The name folding of migration 0013, frozen as it shipped (then src/modules/patients/names.ts): a
 * migration runs the code of its time, whatever the patients module's search becomes.
 *
 * Indian names written in Latin letters get two keys per token: the skeleton (consonant sounds only,
 * transliteration variants folded together) and the phonetic key (the same with each vowel run kept
 * as one vowel mark).
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

/** Abbreviations written for one name. */
const SPELLINGS: Record<string, string> = {
  md: 'mohammed',
  mohd: 'mohammed',
  mohmd: 'mohammed',
  mhd: 'mohammed',
  mohamad: 'mohammed',
};

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
  const all = words(parts.filter((p) => p).join(' '));
  while (all.length > 1 && HONORIFICS.has(all[0]!)) all.shift();
  const tokens: NameToken[] = [];
  for (const word of all) {
    // Own keys only: a name such as "Constructor" made this migration fail (Object's constructor is no spelling).
    const spelled = Object.hasOwn(SPELLINGS, word) ? SPELLINGS[word] : undefined;
    if (spelled) tokens.push(makeToken(spelled, false));
    else if (word.length === 1) tokens.push(makeToken(word, true));
    else if (word.length <= 3 && !/[aeiouy]/.test(word)) for (const letter of word) tokens.push(makeToken(letter, true));
    else tokens.push(makeToken(word, false));
  }
  return tokens;
}

/** The tokens as stored: words, and initials as single letters, separated by spaces. */
export function tokensToText(tokens: NameToken[]): string {
  return tokens.map((t) => t.text).join(' ');
}
