/**
 * Text normalisation shared by the index, the query parser, the importers and highlighting.
 * A word is a run of letters or a number (decimals kept), so hyphens, spaces and punctuation are all
 * the same separator and letters next to digits are separate words: "PAN40" and "Pan-40" both read
 * as [pan, 40]; "Zerodol-SP" as [zerodol, sp].
 */

/** Lower case without diacritics: comparison form of one word. */
export function fold(word: string): string {
  const lower = word.toLowerCase();
  // Only pay for NFKD when there is something non-ASCII to fold.
  return /[^\x00-\x7f]/.test(lower) ? lower.normalize('NFKD').replace(/\p{M}+/gu, '') : lower;
}

const WORD = /\p{L}+|\d+(?:\.\d+)?/gu;

export interface Span {
  start: number;
  end: number;
  /** The folded word. */
  word: string;
}

/** The words of `text` with their offsets in the original string (for highlighting). */
export function spans(text: string): Span[] {
  const out: Span[] = [];
  for (const match of text.matchAll(WORD)) {
    out.push({ start: match.index, end: match.index + match[0].length, word: fold(match[0]) });
  }
  return out;
}

export function words(text: string): string[] {
  const out: string[] = [];
  // ASCII text (nearly every name and composition) by a scan of character codes: the same words as
  // WORD, at a third of its cost, which counts when a quarter of a million products are indexed.
  const lower = text.toLowerCase();
  const n = lower.length;
  let i = 0;
  while (i < n) {
    // Any non-ASCII character (tested in the text as given: the Kelvin sign lowers to "k") takes the general path.
    if (text.charCodeAt(i) >= 0x80) return wordsOfUnicode(text);
    const c = lower.charCodeAt(i);
    if (isAsciiLetter(c)) {
      const start = i;
      while (++i < n && isAsciiLetter(lower.charCodeAt(i)));
      if (i < n && text.charCodeAt(i) >= 0x80) return wordsOfUnicode(text);
      out.push(lower.slice(start, i));
    } else if (isDigit(c)) {
      const start = i;
      while (++i < n && isDigit(lower.charCodeAt(i)));
      if (i + 1 < n && lower.charCodeAt(i) === 0x2e && isDigit(lower.charCodeAt(i + 1))) {
        i++;
        while (++i < n && isDigit(lower.charCodeAt(i)));
      }
      out.push(lower.slice(start, i));
    } else {
      i++;
    }
  }
  return out;
}

function isAsciiLetter(c: number): boolean {
  return c >= 0x61 && c <= 0x7a;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

function wordsOfUnicode(text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(WORD)) out.push(fold(match[0]));
  return out;
}

/** Words joined without separators: "Pan-D 40" -> "pand40". Exact-name and name-prefix tiers use it. */
export function compact(text: string): string {
  return words(text).join('');
}

/** Words joined by single spaces: the normalised name used for de-duplication keys. */
export function normalizedName(text: string): string {
  return words(text).join(' ');
}

/** Collapses runs of whitespace and trims; the cleaning every imported string gets. */
export function clean(value: unknown): string {
  return typeof value === 'string' ? value.replace(/\s+/g, ' ').trim() : '';
}

/**
 * Dosage forms: canonical name, and the words (as written on packs and prescriptions) that mean it.
 * The canonical name is the product_type; the dosage unit is what one dose is counted in.
 */
const FORMS: Array<{ form: string; words: string[]; unit?: string }> = [
  { form: 'tablet', words: ['tablet', 'tablets', 'tab', 'tabs', 'tabl', 'caplet', 'caplets'], unit: 'tablet' },
  { form: 'capsule', words: ['capsule', 'capsules', 'cap', 'caps', 'capsul', 'transcaps', 'softgel', 'softgels', 'liquigel'], unit: 'capsule' },
  { form: 'syrup', words: ['syrup', 'syrups', 'syp', 'syr', 'expectorant', 'linctus', 'elixir', 'tonic'], unit: 'ml' },
  { form: 'suspension', words: ['suspension', 'susp'], unit: 'ml' },
  {
    form: 'injection',
    words: [
      'injection',
      'injections',
      'inj',
      'injectable',
      'vial',
      'vials',
      'ampoule',
      'ampoules',
      'amp',
      'penfill',
      'flexpen',
      'kwikpen',
      'cartridge',
      'prefilled',
      'syringe',
    ],
    unit: 'ml',
  },
  { form: 'infusion', words: ['infusion', 'infusions', 'iv'], unit: 'ml' },
  { form: 'vaccine', words: ['vaccine', 'vaccines'] },
  { form: 'cream', words: ['cream', 'creams', 'crm'] },
  { form: 'ointment', words: ['ointment', 'ointments', 'oint'] },
  { form: 'gel', words: ['gel', 'gels', 'jelly'] },
  { form: 'lotion', words: ['lotion', 'lotions'] },
  { form: 'solution', words: ['solution', 'solutions', 'sol', 'soln', 'liquid', 'mouthwash', 'gargle', 'paint'], unit: 'ml' },
  { form: 'drops', words: ['drops', 'drop', 'gtt', 'gtts'], unit: 'drop' },
  { form: 'spray', words: ['spray', 'sprays', 'nasal'] },
  {
    form: 'inhaler',
    words: ['inhaler', 'inhalers', 'mdi', 'transhaler', 'evohaler', 'autohaler', 'inhalation', 'rotacap', 'rotacaps', 'respicap', 'respicaps'],
    unit: 'puff',
  },
  { form: 'respules', words: ['respules', 'respule', 'nebuliser', 'nebulizer'] },
  { form: 'powder', words: ['powder', 'powders', 'dusting'] },
  { form: 'granules', words: ['granules', 'granule'] },
  { form: 'sachet', words: ['sachet', 'sachets'] },
  { form: 'suppository', words: ['suppository', 'suppositories', 'pessary', 'pessaries'] },
  { form: 'emulsion', words: ['emulsion'], unit: 'ml' },
  { form: 'lozenges', words: ['lozenges', 'lozenge'] },
  { form: 'soap', words: ['soap'] },
  { form: 'shampoo', words: ['shampoo'] },
  { form: 'wash', words: ['wash', 'cleanser'] },
  { form: 'patch', words: ['patch', 'patches'] },
  { form: 'kit', words: ['kit', 'combipack', 'combikit'] },
];

const FORM_BY_WORD = new Map<string, string>();
const UNIT_BY_FORM = new Map<string, string>();
for (const entry of FORMS) {
  for (const word of entry.words) FORM_BY_WORD.set(word, entry.form);
  if (entry.unit) UNIT_BY_FORM.set(entry.form, entry.unit);
}

/** The canonical dosage form a word names ("tab" -> "tablet"), or undefined. */
export function formOfWord(word: string): string | undefined {
  return FORM_BY_WORD.get(word);
}

export function unitOfForm(form: string): string | undefined {
  return UNIT_BY_FORM.get(form);
}

/** Units of strength: matched when present, never required (a name rarely spells them). */
export const UNIT_WORDS: ReadonlySet<string> = new Set([
  'mg',
  'mcg',
  'ug',
  'ml',
  'g',
  'gm',
  'gms',
  'kg',
  'iu',
  'l',
  'w',
  'v',
  'unit',
  'units',
  'mmol',
  'meq',
]);

/** Filler words of typed queries ("amoxycillin and clavulanic acid"): matched when present, never required. */
export const FILLER_WORDS: ReadonlySet<string> = new Set(['and', 'with', 'of', 'in', 'for', 'the', 'plus', 'test']);

/**
 * Shorthand written on prescriptions, mapped to the word it stands for in compositions. Misspellings
 * are the typo tolerance's job, other official names of a substance the synonyms' (synonyms.ts).
 */
export const SHORTHAND: ReadonlyMap<string, string> = new Map([
  ['pcm', 'paracetamol'],
  ['apap', 'paracetamol'],
  ['asa', 'aspirin'],
  ['hcq', 'hydroxychloroquine'],
  ['hctz', 'hydrochlorothiazide'],
  ['cpm', 'chlorpheniramine'],
  ['inh', 'isoniazid'],
  ['mtx', 'methotrexate'],
  ['vit', 'vitamin'],
]);
