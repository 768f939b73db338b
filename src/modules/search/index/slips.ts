/**
 * How likely a typed word is a slip for a vocabulary word: an edit distance whose edits cost what they
 * are worth as evidence. The commonest slips of typing cost least (Damerau 1964; Kukich 1992): a
 * neighbouring key, a doubled or dropped repeated letter, two letters swapped, a vowel for a vowel, a
 * letter for one that sounds the same; any other letter costs a full edit. The typo lookup finds the
 * candidates by plain edit distance; this orders them.
 */

/** QWERTY rows, offset as on a keyboard. */
const ROWS = ['qwertyuiop', 'asdfghjkl', 'zxcvbnm'];

/** Bit per pair of letters that sit side by side on the keyboard (26 x 26). */
const NEAR = new Uint8Array(26 * 26);
const code = (c: string) => c.charCodeAt(0) - 97;
for (let row = 0; row < ROWS.length; row++) {
  for (let col = 0; col < ROWS[row]!.length; col++) {
    const c = ROWS[row]![col]!;
    for (const [r, k] of [
      [row, col - 1],
      [row, col + 1],
      [row - 1, col],
      [row - 1, col + 1],
      [row + 1, col - 1],
      [row + 1, col],
    ] as const) {
      const other = ROWS[r]?.[k];
      if (other) NEAR[code(c) * 26 + code(other)] = 1;
    }
  }
}
/** Letters that stand for the same sound in drug names. */
const SAME_SOUND = new Uint8Array(26 * 26);
for (const [a, b] of ['ck', 'sz', 'iy', 'vw', 'fv', 'sc', 'xz']) {
  SAME_SOUND[code(a!) * 26 + code(b!)] = 1;
  SAME_SOUND[code(b!) * 26 + code(a!)] = 1;
}
const VOWELS = new Set([97, 101, 105, 111, 117, 121]);

function pairIn(table: Uint8Array, a: number, b: number): boolean {
  const x = a - 97;
  const y = b - 97;
  return x >= 0 && x < 26 && y >= 0 && y < 26 && table[x * 26 + y] === 1;
}

function substitution(a: number, b: number): number {
  if (pairIn(SAME_SOUND, a, b)) return 0.4;
  if (pairIn(NEAR, a, b)) return 0.5;
  if (VOWELS.has(a) && VOWELS.has(b)) return 0.6;
  return 1;
}

/**
 * The cost of typing `typed` for `meant` (restricted Damerau-Levenshtein with weighted edits). 0 for
 * equal words; about 0.5 for one common slip, 1 for one rare slip or two common ones.
 */
export function slipCost(typed: string, meant: string): number {
  const n = typed.length;
  const m = meant.length;
  const width = m + 1;
  const d = new Float64Array((n + 1) * width);
  // A letter missing from the typed word: cheapest when it was a repeated letter or a vowel, the
  // letters fast typing drops ("paracetmol", "azithrl").
  const dropped = (j: number) =>
    j >= 2 && meant.charCodeAt(j - 1) === meant.charCodeAt(j - 2) ? 0.4 : VOWELS.has(meant.charCodeAt(j - 1)) ? 0.4 : 0.7;
  const added = (i: number) => {
    const c = typed.charCodeAt(i - 1);
    if ((i >= 2 && typed.charCodeAt(i - 2) === c) || (i < n && typed.charCodeAt(i) === c)) return 0.4;
    if ((i >= 2 && pairIn(NEAR, typed.charCodeAt(i - 2), c)) || (i < n && pairIn(NEAR, typed.charCodeAt(i), c))) return 0.6;
    return 0.9;
  };
  // The first letter is the one most rarely wrong (Yannakoudakis and Fawthrop 1983): a slip there costs more.
  const first = (at: number) => (at === 1 ? 0.4 : 0);
  for (let j = 1; j <= m; j++) d[j] = d[j - 1]! + dropped(j) + first(j);
  for (let i = 1; i <= n; i++) {
    d[i * width] = d[(i - 1) * width]! + added(i) + first(i);
    for (let j = 1; j <= m; j++) {
      const a = typed.charCodeAt(i - 1);
      const b = meant.charCodeAt(j - 1);
      let v = Math.min(
        d[(i - 1) * width + j]! + added(i) + first(i),
        d[i * width + j - 1]! + dropped(j) + first(j),
        d[(i - 1) * width + j - 1]! + (a === b ? 0 : substitution(a, b) + first(Math.max(i, j))),
      );
      if (i >= 2 && j >= 2 && a === meant.charCodeAt(j - 2) && typed.charCodeAt(i - 2) === b && a !== b)
        v = Math.min(v, d[(i - 2) * width + j - 2]! + 0.5);
      d[i * width + j] = v;
    }
  }
  return d[n * width + m]!;
}

/** Restricted Damerau-Levenshtein distance (adjacent transpositions count one edit) if at most `max`, else max + 1. */
export function boundedDistance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const width = b.length + 1;
  const d = new Uint16Array((a.length + 1) * width);
  for (let j = 0; j <= b.length; j++) d[j] = j;
  for (let i = 1; i <= a.length; i++) {
    d[i * width] = i;
    let min = i;
    for (let j = 1; j <= b.length; j++) {
      let v = Math.min(d[(i - 1) * width + j]! + 1, d[i * width + j - 1]! + 1, d[(i - 1) * width + j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i >= 2 && j >= 2 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[(i - 2) * width + j - 2]! + 1);
      d[i * width + j] = v;
      if (v < min) min = v;
    }
    if (min > max) return max + 1;
  }
  return Math.min(d[a.length * width + b.length]!, max + 1);
}

/**
 * The cost of one slip in three typed letters that begin `meant` (of 3 or 4 letters), on slipCost's scale;
 * Infinity when `typed` is not `meant` with one slip after its first letter. Three letters are too little
 * of a word to weigh the letters around a slip, so each slip costs what that one outcome is likely to be,
 * as a noisy-channel speller counts (Kernighan, Church and Gale, "A spelling correction program based on
 * a noisy channel model", COLING 1990): a dropped letter and two letters swapped are one outcome each,
 * whereas a wrong letter is one of several (a neighbouring key or a letter of the same sound, then a
 * vowel for a vowel, then any other key).
 */
export function halfTypedSlipCost(typed: string, meant: string): number {
  if (typed.length === 0 || typed[0] !== meant[0]) return Number.POSITIVE_INFINITY;
  if (meant.length === typed.length + 1) {
    // Not the last letter: the typed letters then begin `meant` as they are.
    for (let at = 1; at < meant.length - 1; at++) if (meant.slice(0, at) + meant.slice(at + 1) === typed) return 0.25;
    return Number.POSITIVE_INFINITY;
  }
  if (meant.length !== typed.length) return Number.POSITIVE_INFINITY;
  let first = -1;
  let last = -1;
  for (let i = 1; i < typed.length; i++) {
    if (typed[i] === meant[i]) continue;
    if (first < 0) first = i;
    last = i;
  }
  if (first < 0) return Number.POSITIVE_INFINITY;
  if (first === last) {
    const a = typed.charCodeAt(first);
    const b = meant.charCodeAt(first);
    return pairIn(SAME_SOUND, a, b) || pairIn(NEAR, a, b) ? 0.5 : VOWELS.has(a) && VOWELS.has(b) ? 0.75 : 1;
  }
  return last === first + 1 && typed[first] === meant[last] && typed[last] === meant[first] ? 0.25 : Number.POSITIVE_INFINITY;
}
