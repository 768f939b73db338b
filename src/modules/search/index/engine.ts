/**
 * The in-memory search index behind the search endpoint (chosen by measurement: bench/SEARCH-ENGINES.md).
 *
 * The vocabulary is one sorted list of words, so a word's id is its rank: an exact word is a binary
 * search, the words starting with a prefix are one range of ids (and of postings), and a typo lookup
 * walks the list like a trie. Each word points at a posting list of documents with the fields it
 * occurs in, and each document keeps its own word list (a forward index). A query walks the
 * postings of one query word only, the rarest required one (or none, when names starting with the
 * query fill the page), and checks the other words against each candidate's own word list, so its cost
 * follows the rarest word, not the commonest ("tablet", "40"). Candidates must match every required
 * word (exact word, word prefix, one or two edits) or have a name starting with the query; they are
 * ranked in the contract's tiers:
 *
 *   exact name > (active before discontinued) > name starts with the query (the record's own name
 *   before another name it answers to) > every word matched by word or word-prefix > typo-tolerant;
 *   then more whole words, then matched form/unit words, then (for a half-typed word that only its
 *   slips match) the first product of each word or beginning it may stand for, then fewer and commoner
 *   slips (a name that begins with the slipped word first), then fewer salts (the query covers the
 *   product better), then better fields (name over composition), then the shorter name.
 *
 * Typo lookups run only when the exact and prefix matches cannot fill the page, which keeps the common
 * case cheap. Updates are incremental (a replaced document is tombstoned, new words are kept beside the
 * sorted vocabulary; the index is rebuilt when either piles up), so a process applies catalogue changes
 * without a restart. Everything is strings and typed arrays, so an index goes to a snapshot file and
 * back without per-record work (snapshot.ts), and records live in a columnar store (store.ts).
 */
import { words } from './normalize.ts';
import { boundedDistance, halfTypedSlipCost, slipCost } from './slips.ts';
import { joinedNamesIn } from './synonyms.ts';
import type { ParsedQuery, QueryWord } from './query.ts';
import { ArrayStore, grow, type RecordStore, type SnapshotParts } from './store.ts';

export const FIELD_NAME = 1;
export const FIELD_ALT = 2;
export const FIELD_GENERIC = 4;
export const FIELD_FORM = 8;

export interface IndexedFields {
  /** What counts as the exact name: the name (and, for lab tests, its abbreviations). */
  names: string[];
  fields: Array<[field: number, text: string]>;
  /** Discontinued: ranked after active documents unless it is the exact name. */
  demoted: boolean;
  /** Length used for the "shorter name wins" tie-break. */
  nameLength: number;
  /**
   * Parts the product is made of (salts): among equal matches, the product the query covers best
   * comes first ("paracetamol" lists paracetamol before paracetamol combinations).
   */
  parts: number;
}

/**
 * How a vocabulary word matches a query word, best first: exactly, by prefix, spelt another way that
 * sounds the same, by a slip (ordered by slipCost: fewer and commoner slips first), and last as the
 * beginning of a word with a slip in the typed part.
 */
const KIND_EXACT = 12;
const KIND_PREFIX = 11;
const KIND_SOUND = 10;
/**
 * A slip costing less than 0.25 would be kind 9; each quarter more, one kind less, down to 1 (two rare
 * slips). A slip in the typed part of a word counts one kind less than the same slip in a whole word.
 */
const KIND_SLIP_BEST = 9;
/** A prefix spelt as it sounds ("troksi" for "troxi..."): after one common slip in a whole word. */
const KIND_SOUND_PREFIX = 6;
/** Words matched by a sound-alike or slipped prefix, at most (the half-typed word is short; its matches many). */
const MAX_FUZZY_PREFIX_TERMS = 1000;

/**
 * A half-typed word of three letters may hold one slip after its first letter: a letter dropped ("dny" for
 * Dany, "crs" for Crestor: a four-letter beginning), two swapped, a wrong key ("tle", "twl" for Tel...); see
 * threeLetterSlip. Fewer letters begin too much of the vocabulary.
 */
function threeTypedLetters(word: QueryWord): boolean {
  return word.prefix && word.typing && word.text.length === 3 && /^[a-z]+$/.test(word.text);
}

/** The most a slip in three typed letters may cost (halfTypedSlipCost; see bench/SEARCH-FORGIVENESS.md). */
const THREE_LETTER_SLIP = 1;

/**
 * The kind of match of a beginning `prefix` for three typed letters, or 0: the typed letters with one
 * slip after the first letter (the one most rarely wrong), priced by halfTypedSlipCost.
 */
function threeLetterSlip(typed: string, prefix: string): number {
  const cost = halfTypedSlipCost(typed, prefix);
  return cost <= THREE_LETTER_SLIP ? Math.max(1, slipKind(cost) - 1) : 0;
}

function slipKind(cost: number): number {
  return Math.max(1, KIND_SLIP_BEST - Math.floor(cost / 0.25));
}
/** Prefix expansion of one- or two-letter words stops after this many vocabulary words. */
const MAX_SHORT_PREFIX_TERMS = 300;
/** Query words whose typo lookups are kept (a few hundred bytes each). */
const TYPO_CACHE_WORDS = 20_000;
/** Matches kept over all cached words (about 40 bytes each): a half-typed word's can be a thousand. */
const TYPO_CACHE_MATCHES = 250_000;
/** Names scanned for a one- or two-letter query. */
const PREFIX_SCAN_CAP = 1500;

export interface Hit<T> {
  record: T;
  /** The normalised name equals the normalised query. */
  exact: boolean;
  /** The match came through the name starting with the query (used for highlighting). */
  namePrefix: boolean;
  /**
   * Per query word, in query order: the vocabulary words it matched by typo tolerance in this search
   * (shared by the hits of one search; empty when no typo lookup ran).
   */
  typoMatches: ReadonlyArray<ReadonlySet<string>>;
}

/** State of one ranking pass over the candidates (see SearchIndex.rank). */
interface RankPass {
  visit: number;
  gen: number;
  driver: number;
  limit: number;
  top: Array<{ doc: number; score: number }>;
  required: boolean[];
  /** Per slot: match kind by vocabulary word for the words outside its prefix range (see fillKinds). */
  tables: Uint8Array[];
  /** Per slot: the range of term ids that match by prefix. */
  los: number[];
  his: number[];
}

/** The best documents found so far for a leader (see leadersOf); -1: none yet. */
interface Leader {
  led: number;
  any: number;
}

/** A query word's typo lookup: the vocabulary words it matches, and the beginnings its slips stand for. */
interface TypoLookup {
  /** Vocabulary words with their match kind (words matched by a beginning have an empty text). */
  matches: Array<[text: string, term: number, kind: number]>;
  prefixes: Array<[prefix: string, kind: number]>;
  /** The leaders of what its slips stand for (see leadersOf), for the documents of version `leadersAt`. */
  leaders: number[] | null;
  leadersAt: number;
}

interface Expansion {
  word: QueryWord;
  exact: number[];
  /** Built vocabulary words [lo, hi) start with the query word. */
  lo: number;
  hi: number;
  /** Words added after the build that start with the query word. */
  prefix: number[];
  /** Vocabulary word -> match kind, once typo lookups ran. */
  fuzzy: Map<number, number> | null;
  /** The typo lookup, once it ran. */
  lookup: TypoLookup | null;
  /** Vocabulary words the word matches whole by a slip or a sound (after typo lookups). */
  slippedWords: number[];
  /** Postings the exact and prefix words hold: the cost of walking this word. */
  size: number;
}

function fieldRank(mask: number): number {
  return mask & (FIELD_NAME | FIELD_ALT) ? 3 : mask & FIELD_GENERIC ? 2 : 1;
}

/** The compact name and a bit mask of where its words end (bit i: a word ends after i characters). */
function nameKey(name: string): [string, number] {
  let key = '';
  let bounds = 0;
  for (const word of words(name)) {
    key += word;
    if (key.length < 32) bounds |= 1 << key.length;
  }
  return [key, bounds];
}

/** nameKey of a name already split into vocabulary words (`texts` by term id). */
function keyOfTerms(terms: number[], texts: string[]): [string, number] {
  let key = '';
  let bounds = 0;
  for (const term of terms) {
    key += texts[term]!;
    if (key.length < 32) bounds |= 1 << key.length;
  }
  return [key, bounds];
}

/** Code-unit comparison of text[start, end) with `s`, without making a substring. */
function compareAt(text: string, start: number, end: number, s: string): number {
  const n = Math.min(end - start, s.length);
  for (let i = 0; i < n; i++) {
    const d = text.charCodeAt(start + i) - s.charCodeAt(i);
    if (d !== 0) return d;
  }
  return end - start - s.length;
}

/** text[start, end) starts with `prefix`. */
function startsAt(text: string, start: number, end: number, prefix: string): boolean {
  return end - start >= prefix.length && text.startsWith(prefix, start);
}

/**
 * Sorted strings stored as one: entry i is text[starts[i], starts[i + 1]). Lookups by binary search;
 * the words starting with a prefix are one contiguous range.
 */
class SortedTexts {
  readonly text: string;
  readonly starts: Uint32Array;

  constructor(text: string, starts: Uint32Array) {
    this.text = text;
    this.starts = starts;
  }

  get length(): number {
    return this.starts.length - 1;
  }

  at(i: number): string {
    return this.text.slice(this.starts[i]!, this.starts[i + 1]!);
  }

  /** First entry >= s. */
  lowerBound(s: string, from = 0): number {
    let lo = from;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareAt(this.text, this.starts[mid]!, this.starts[mid + 1]!, s) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  indexOf(s: string): number {
    const i = this.lowerBound(s);
    return i < this.length && compareAt(this.text, this.starts[i]!, this.starts[i + 1]!, s) === 0 ? i : -1;
  }

  startsWith(i: number, prefix: string): boolean {
    return startsAt(this.text, this.starts[i]!, this.starts[i + 1]!, prefix);
  }

  /** First entry at or after `from` (which starts with `prefix` or sorts after it) not starting with `prefix`. */
  prefixEnd(prefix: string, from: number): number {
    let lo = from;
    let hi = this.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.startsWith(mid, prefix)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** [first, end) of the entries starting with `prefix`. */
  prefixRange(prefix: string): [number, number] {
    const first = this.lowerBound(prefix);
    return [first, this.prefixEnd(prefix, first)];
  }

  static from(sorted: string[]): SortedTexts {
    const starts = new Uint32Array(sorted.length + 1);
    for (let i = 0; i < sorted.length; i++) starts[i + 1] = starts[i]! + sorted[i]!.length;
    return new SortedTexts(sorted.join(''), starts);
  }
}

const EMPTY_TEXTS = new SortedTexts('', new Uint32Array(1));

/** Record id -> document, open addressing over a typed array (a Map of 250k strings costs ~20 MB). */
class IdTable {
  slots: Uint32Array = new Uint32Array(1024);
  private used = 0;
  private readonly idOf: (doc: number) => string;

  constructor(idOf: (doc: number) => string) {
    this.idOf = idOf;
  }

  private static hash(id: string): number {
    let h = 0x811c9dc5;
    for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
    return h >>> 0;
  }

  get(id: string): number | undefined {
    const mask = this.slots.length - 1;
    for (let i = IdTable.hash(id) & mask; ; i = (i + 1) & mask) {
      const slot = this.slots[i]!;
      if (slot === 0) return undefined;
      if (this.idOf(slot - 1) === id) return slot - 1;
    }
  }

  /** Points `id` at `doc` (a replaced record's id moves to its new document). */
  set(id: string, doc: number): void {
    if ((this.used + 1) * 2 > this.slots.length) this.resize(this.slots.length * 2);
    const mask = this.slots.length - 1;
    for (let i = IdTable.hash(id) & mask; ; i = (i + 1) & mask) {
      const slot = this.slots[i]!;
      if (slot === 0) {
        this.slots[i] = doc + 1;
        this.used++;
        return;
      }
      if (this.idOf(slot - 1) === id) {
        this.slots[i] = doc + 1;
        return;
      }
    }
  }

  private resize(size: number): void {
    const old = this.slots;
    this.slots = new Uint32Array(size);
    const mask = size - 1;
    for (const slot of old) {
      if (slot === 0) continue;
      let i = IdTable.hash(this.idOf(slot - 1)) & mask;
      while (this.slots[i] !== 0) i = (i + 1) & mask;
      this.slots[i] = slot;
    }
  }

  /** A table of `count` documents, sized like one filled by set(). */
  reset(count: number): void {
    let size = 1024;
    while (size < count * 2 + 2) size *= 2;
    this.slots = new Uint32Array(size);
    this.used = 0;
  }

  restore(slots: Uint32Array, used: number): void {
    this.slots = slots;
    this.used = used;
  }
}

/** Per-document bits: name length (10), salts (8), discontinued, deleted. */
const INFO_PARTS_SHIFT = 10;
const INFO_DEMOTED = 1 << 18;
const INFO_DEAD = 1 << 19;

function docInfo(fields: IndexedFields): number {
  return Math.min(fields.nameLength, 1023) | (Math.min(fields.parts, 255) << INFO_PARTS_SHIFT) | (fields.demoted ? INFO_DEMOTED : 0);
}

/**
 * The part of a document's score that does not depend on the query: active before discontinued, fewer
 * salts, shorter name (the low digits of the score in `consider`). Documents are laid out in
 * descending order of it, which is what lets a ranking pass stop walking a posting list early.
 */
function staticScore(info: number): number {
  return (info & INFO_DEMOTED ? 0 : 1e14) + (255 - ((info >>> INFO_PARTS_SHIFT) & 255)) * 1e5 - Math.min(info & 1023, 999);
}

/** Score contributed by one query word matched with quality q (kind * 4 + field rank). */
function wordScore(q: number, required: boolean): number {
  const kind = q >> 2;
  if (kind === 0) return 0;
  return (required ? (kind === KIND_EXACT ? 1e11 : 0) : 1e10) + kind * 1e8 + (q & 3) * 1e3;
}

/** Higher score first; equal scores in layout order, so results do not depend on the order candidates came in. */
function outranks(score: number, doc: number, other: { doc: number; score: number }): boolean {
  return score > other.score || (score === other.score && doc < other.doc);
}

function byRank(a: { doc: number; score: number }, b: { doc: number; score: number }): number {
  return b.score - a.score || a.doc - b.doc;
}

/**
 * Among documents matched with the same slips, those whose name begins with the slipped word (the brand
 * being typed: "lubroc" for Lubricart) before those holding it further on (Lubricant Eye Drop) or in their
 * composition; above the query-independent order (at most 2.6e7), below one quarter of a slip's cost (1e8).
 */
const LEAD = 5e7;

/**
 * A half-typed word with a slip points at several beginnings, and a page of five products of the likeliest
 * one is worth no more than its first: the best product of each beginning (its leader) comes before the
 * other products of the beginnings, so a page shows as many beginnings as it can, likeliest first, as a
 * completion suggester shows distinct completions. Above every difference of slips within a tier (at most
 * 12 kinds a word, 1e8 each), below a matched form or unit word (1e10).
 */
const LEADER = 5e9;
/**
 * A name key's bit 0 (never a word boundary: no word is empty) marks the record's own name, as against
 * another name it answers to (a lab test's abbreviations and other names).
 */
const PRIMARY_KEY = 1;

/**
 * Among names starting with the query, a record whose own name starts with it comes before one that
 * only another of its names starts ("thyroid": Thyroid Profile before Anti-TPO Antibodies, which also
 * answers to "Thyroid Peroxidase Antibody"), as a prescriber reading the names shown expects. Above
 * every other criterion of the tier (they sum to less than 1e13), below an exact name (1e15).
 */
const OWN_NAME_PREFIX = 1e13;

/** Postings of a word looked at, by field, for the product a slip ranks first (see leadersOf). */
const LEADER_POSTINGS = 16;

/** A word's name-field postings are scored up front (see rank) when there are at most this many (and far fewer than the driver's). */
const NAME_SEGMENT_DOCS = 2000;
const NAME_SEGMENT_TERMS = 1000;

/**
 * Whether an index built of `built` documents, with these tombstones, appended documents and words
 * outside its vocabulary, is due a rebuild.
 */
function rebuildDue(built: number, dead: number, appended: number, extraTerms: number): boolean {
  return (dead > 1000 && dead > (built + appended) / 4) || appended > Math.max(20_000, built / 4) || extraTerms > 20_000;
}

/** Whether a freshly built index of `built` documents would be due a rebuild after `changes` upserts. */
export function rebuildDueAfter(built: number, changes: number): boolean {
  return rebuildDue(built, changes, changes, 0);
}

/** Postings segments per word: by field rank, best first (segment 0 = name, 1 = composition, 2 = form). */
const SEGMENTS = 3;

export class SearchIndex<T extends { id: string }> {
  private readonly describe: (record: T) => IndexedFields;
  private readonly newStore: () => RecordStore<T>;
  private store: RecordStore<T>;
  /** Documents are numbered in layout order (best first); rowOf maps a document to its store row. */
  private rowOf: Uint32Array = new Uint32Array(0);
  private docCount = 0;
  /** Documents of the last build (laid out by static score); later ones were appended by upserts. */
  private builtDocs = 0;
  private buildCount = 0;
  /** Changes with every build, restore and upsert: what was worked out of the documents is due again. */
  private docsVersion = 0;
  private ids = new IdTable((doc) => this.store.id(this.rowOf[doc]!));
  private info: Uint32Array = new Uint32Array(0);
  private deadCount = 0;
  /**
   * The vocabulary of the last build, sorted, so term id = rank: the words starting with a prefix are
   * one range of ids.
   */
  private vocab = EMPTY_TEXTS;
  private builtTerms = 0;
  /** Words first seen after the build (ids builtTerms and up), looked up by scanning: they are few. */
  private extraTerms: string[] = [];
  private extraTermIds = new Map<string, number>();
  /**
   * Postings of the built index, flat, as document numbers: term t's postings in field-rank segment s
   * are postFlat[postSeg[t * 3 + s] .. postSeg[t * 3 + s + 1]), in document order. One typed array
   * instead of an array per word keeps them out of the garbage collector's way.
   */
  private postSeg: Uint32Array = new Uint32Array(1);
  private postFlat: Uint32Array = new Uint32Array(0);
  /** Postings added by upserts, per term, packed as doc * 16 + field mask. */
  private extra = new Map<number, number[]>();
  /** Forward index: the words of document d, packed as term * 16 + field mask, are fwd[fwdStart[d] .. fwdStart[d + 1]). */
  private fwd: Uint32Array = new Uint32Array(0);
  private fwdStart: Uint32Array = new Uint32Array(1);
  /** Vocabulary words of repeated field texts (compositions, forms) during upserts. */
  private wordCache = new Map<string, number[]>();
  /** Typo lookups by query word (see typoMatches), valid for a vocabulary of typoVocabulary words. */
  private typoCache = new Map<string, TypoLookup>();
  private typoCacheMatches = 0;
  private typoVocabulary = -1;
  /** Per query word slot: match kind by vocabulary word, for exact, typo and post-build prefix words. */
  private kindTables: Uint8Array[] = [];
  /** Compact exact names of the build, sorted, with their documents: exact-name and name-prefix lookups. */
  private keys = EMPTY_TEXTS;
  private keyDocs: Uint32Array = new Uint32Array(0);
  /** Per key: bit i set when a word ends after i characters (first 31), to tell "zerodolsp" ending a word. */
  private keyBounds: Uint32Array = new Uint32Array(0);
  /** Names added after the build, sorted (few; merged at the next build). */
  private extraKeys: string[] = [];
  private extraKeyDocs: number[] = [];
  private extraKeyBounds: number[] = [];
  // Per-query scratch, reused: marks stamped with a generation number.
  private gen = 0;
  private visitGen = 0;
  private seen: Uint32Array = new Uint32Array(0);
  /** Per other required word of a query: documents holding it, stamped with the pass's visit number. */
  private filterMarks: Uint32Array[] = [];
  private prefixMark: Uint32Array = new Uint32Array(0);
  private exactMark: Uint32Array = new Uint32Array(0);
  private boundaryMark: Uint32Array = new Uint32Array(0);
  /** Documents whose own name (not only another name they answer to) starts with the query (see OWN_NAME_PREFIX). */
  private ownPrefixMark: Uint32Array = new Uint32Array(0);
  /** The leaders of the beginnings a half-typed word's slips stand for (see LEADER). */
  private leaderMark: Uint32Array = new Uint32Array(0);

  /** Walks every posting instead of stopping runs early: for tests that check the early stop changes nothing. */
  private readonly exhaustive: boolean;

  constructor(
    describe: (record: T) => IndexedFields,
    newStore: () => RecordStore<T> = () => new ArrayStore<T & { id: string }>(),
    options: { exhaustive?: boolean } = {},
  ) {
    this.describe = describe;
    this.newStore = newStore;
    this.store = newStore();
    this.exhaustive = options.exhaustive ?? false;
  }

  get size(): number {
    return this.docCount - this.deadCount;
  }

  private get termCount(): number {
    return this.builtTerms + this.extraTerms.length;
  }

  private isDead(doc: number): boolean {
    return (this.info[doc]! & INFO_DEAD) !== 0;
  }

  get(id: string): T | undefined {
    const doc = this.ids.get(id);
    return doc === undefined || this.isDead(doc) ? undefined : this.store.get(this.rowOf[doc]!);
  }

  /** Every live record, in index order. */
  all(): T[] {
    const out: T[] = [];
    for (let doc = 0; doc < this.docCount; doc++) if (!this.isDead(doc)) out.push(this.store.get(this.rowOf[doc]!));
    return out;
  }

  /**
   * Replaces the whole index with these records (or a store filled with them, which the index then
   * owns). Documents are laid out best-first (see staticScore).
   */
  build(source: T[] | RecordStore<T>): void {
    let store: RecordStore<T>;
    if (Array.isArray(source)) {
      store = this.newStore();
      for (const record of source) store.add(record);
    } else {
      store = source;
    }
    (store as { seal?: () => void }).seal?.();
    const n = store.length;
    // One pass over the records in store order, describing each once: its layout sort key, its words
    // (provisional term ids, first seen first numbered) and its name keys. Documents are then laid
    // out and the forward index copied into layout order.
    // A number per record that sorts like descending staticScore, with the row in the low 32 bits:
    // a plain numeric sort, then names only within runs of equal static score.
    const sortKeys = new Float64Array(n);
    const firstNames: string[] = new Array<string>(n);
    const rowInfo = new Uint32Array(n);
    const termIds = new Map<string, number>();
    const termTexts: string[] = [];
    const textWords = new Map<string, number[]>();
    let rowFwd = new Uint32Array(Math.max(1024, n * 12));
    const rowFwdStart = new Uint32Array(n + 1);
    let rowFwdSize = 0;
    const keys: string[] = [];
    const keyRows: number[] = [];
    const keyBounds: number[] = [];
    const docTerms: number[] = [];
    const docMasks: number[] = [];
    const termFor = (word: string): number => {
      let term = termIds.get(word);
      if (term === undefined) {
        term = termTexts.push(word) - 1;
        termIds.set(word, term);
      }
      return term;
    };
    for (let row = 0; row < n; row++) {
      const fields = this.describe(store.get(row));
      const info = docInfo(fields);
      rowInfo[row] = info;
      sortKeys[row] =
        (((info & INFO_DEMOTED ? 1 : 0) << 18) + (((info >>> INFO_PARTS_SHIFT) & 255) << 10) + Math.min(info & 1023, 999)) * 2 ** 32 + row;
      firstNames[row] = (fields.names[0] ?? '').toLowerCase();
      docTerms.length = 0;
      docMasks.length = 0;
      let nameText: string | null = null;
      let nameTerms: number[] | null = null;
      for (const [field, text] of fields.fields) {
        let list = field === FIELD_NAME ? undefined : textWords.get(text);
        let joined: number[] | null = null;
        if (list === undefined) {
          list = [];
          const found = words(text);
          for (const word of found) list.push(termFor(word));
          // Official names of several words, run together, are words of their own (the name's
          // words alone make its key).
          const names = joinedNamesIn(found);
          if (names.length > 0) {
            if (field === FIELD_NAME) joined = names.map(termFor);
            else for (const name of names) list.push(termFor(name));
          }
          if (field !== FIELD_NAME && textWords.size < 200_000) textWords.set(text, list);
        }
        if (field === FIELD_NAME) {
          nameText = text;
          nameTerms = list;
        }
        collectTerms(list, field, docTerms, docMasks);
        if (joined) collectTerms(joined, field, docTerms, docMasks);
      }
      const count = Math.min(docTerms.length, 65535);
      rowFwd = grow(rowFwd, rowFwdSize + count, Uint32Array);
      for (let i = 0; i < count; i++) rowFwd[rowFwdSize++] = docTerms[i]! * 16 + docMasks[i]!;
      rowFwdStart[row + 1] = rowFwdSize;
      for (const [at, name] of fields.names.entries()) {
        // The name field's words are at hand: its key is not tokenised again.
        const [key, bounds] = name === nameText ? keyOfTerms(nameTerms!, termTexts) : nameKey(name);
        if (!key) continue;
        keys.push(key);
        keyRows.push(row);
        keyBounds.push(at === 0 ? bounds | PRIMARY_KEY : bounds);
      }
    }
    sortKeys.sort();
    const order = new Uint32Array(n);
    for (let i = 0; i < n; i++) order[i] = sortKeys[i]! % 2 ** 32;
    // Equally scored records by name, ignoring case, then by id (ids sort by creation: the product in the
    // catalogue longest first), so the order is the same whatever order the records came in, on every
    // database and after any history of updates. Code-unit order, not localeCompare: locale comparisons
    // cost seconds.
    for (let from = 0; from < n; ) {
      let to = from + 1;
      while (to < n && Math.floor(sortKeys[to]! / 2 ** 32) === Math.floor(sortKeys[from]! / 2 ** 32)) to++;
      if (to - from > 1) {
        const run = Array.from(order.subarray(from, to), (row) => ({ row, name: firstNames[row]! }));
        run.sort((a, b) => {
          if (a.name !== b.name) return a.name < b.name ? -1 : 1;
          const idA = store.id(a.row);
          const idB = store.id(b.row);
          return idA < idB ? -1 : idA > idB ? 1 : a.row - b.row;
        });
        for (let i = 0; i < run.length; i++) order[from + i] = run[i]!.row;
      }
      from = to;
    }

    this.store = store;
    this.buildCount++;
    this.docsVersion++;
    this.rowOf = order;
    this.docCount = n;
    this.builtDocs = n;
    this.info = new Uint32Array(n);
    this.deadCount = 0;
    this.extraTerms = [];
    this.extraTermIds = new Map();
    this.extra = new Map();
    this.wordCache = new Map();
    this.extraKeys = [];
    this.extraKeyDocs = [];
    this.extraKeyBounds = [];
    this.typoCache.clear();
    this.typoCacheMatches = 0;
    this.typoVocabulary = -1;

    // The forward index in layout order.
    const docOfRow = new Uint32Array(n);
    const fwd = new Uint32Array(rowFwdSize);
    const fwdStart = new Uint32Array(n + 1);
    let fwdSize = 0;
    for (let doc = 0; doc < n; doc++) {
      const row = order[doc]!;
      docOfRow[row] = doc;
      this.info[doc] = rowInfo[row]!;
      for (let k = rowFwdStart[row]!; k < rowFwdStart[row + 1]!; k++) fwd[fwdSize++] = rowFwd[k]!;
      fwdStart[doc + 1] = fwdSize;
    }
    const keyDocs = keyRows.map((row) => docOfRow[row]!);

    // The vocabulary sorted; term ids become ranks.
    const terms = termTexts.length;
    const byText = new Uint32Array(terms);
    for (let t = 0; t < terms; t++) byText[t] = t;
    byText.sort((a, b) => (termTexts[a]! < termTexts[b]! ? -1 : termTexts[a]! > termTexts[b]! ? 1 : 0));
    const rankOf = new Uint32Array(terms);
    for (let r = 0; r < terms; r++) rankOf[byText[r]!] = r;
    this.vocab = SortedTexts.from(Array.from(byText, (t) => termTexts[t]!));
    this.builtTerms = terms;
    for (let k = 0; k < fwdSize; k++) fwd[k] = rankOf[fwd[k]! >>> 4]! * 16 + (fwd[k]! & 15);

    // Second pass: the postings, from the forward index, by term and field rank, in document order.
    const seg = new Uint32Array(terms * SEGMENTS + 1);
    for (let k = 0; k < fwdSize; k++) seg[(fwd[k]! >>> 4) * SEGMENTS + 3 - fieldRank(fwd[k]! & 15) + 1]!++;
    for (let s = 0; s < terms * SEGMENTS; s++) seg[s + 1]! += seg[s]!;
    const flat = new Uint32Array(seg[terms * SEGMENTS]!);
    const fill = seg.slice(0, terms * SEGMENTS);
    for (let doc = 0; doc < n; doc++) {
      for (let k = fwdStart[doc]!; k < fwdStart[doc + 1]!; k++) flat[fill[(fwd[k]! >>> 4) * SEGMENTS + 3 - fieldRank(fwd[k]! & 15)]!++] = doc;
    }
    this.postSeg = seg;
    this.postFlat = flat;
    this.fwd = fwd;
    this.fwdStart = fwdStart;

    const byKey = new Uint32Array(keys.length);
    for (let i = 0; i < byKey.length; i++) byKey[i] = i;
    byKey.sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : keyDocs[a]! - keyDocs[b]!));
    this.keys = SortedTexts.from(Array.from(byKey, (i) => keys[i]!));
    this.keyDocs = Uint32Array.from(byKey, (i) => keyDocs[i]!);
    this.keyBounds = Uint32Array.from(byKey, (i) => keyBounds[i]!);

    this.ids.reset(n);
    for (let doc = 0; doc < n; doc++) this.ids.set(store.id(order[doc]!), doc);
    this.resizeScratch();
  }

  /** Number of builds so far (a rebuild after many upserts counts). */
  get builds(): number {
    return this.buildCount;
  }

  /** The index and its records as strings and typed arrays (see snapshot.ts); only right after a build. */
  snapshot(): { index: SnapshotParts; records: SnapshotParts } {
    return { index: this.snapshotIndex(), records: this.store.snapshot() };
  }

  private snapshotIndex(): SnapshotParts {
    if (this.docCount !== this.builtDocs || this.deadCount > 0 || this.extraTerms.length > 0) {
      throw new Error('an index is snapshotted right after its build');
    }
    const n = this.docCount;
    return {
      meta: { docCount: n, builtTerms: this.builtTerms },
      texts: { vocab: this.vocab.text, keys: this.keys.text },
      arrays: {
        // Copied: an upsert marks the document it replaces in place, and the caller may encode the
        // snapshot after upserts that followed the build.
        rowOf: this.rowOf.subarray(0, n),
        info: this.info.slice(0, n),
        vocabStarts: this.vocab.starts,
        postSeg: this.postSeg,
        postFlat: this.postFlat,
        fwd: this.fwd.subarray(0, this.fwdStart[n]!),
        fwdStart: this.fwdStart.subarray(0, n + 1),
        keyStarts: this.keys.starts,
        keyDocs: this.keyDocs,
        keyBounds: this.keyBounds,
        // Copied: upserts change id slots in place.
        idSlots: this.ids.slots.slice(),
      },
    };
  }

  /** Takes over an index written by snapshot(), holding the records of `store`. */
  restore(parts: SnapshotParts, store: RecordStore<T>): void {
    const a = parts.arrays;
    const n = parts.meta.docCount as number;
    this.docsVersion++;
    this.store = store;
    this.docCount = n;
    this.builtDocs = n;
    this.rowOf = a.rowOf as Uint32Array;
    this.info = a.info as Uint32Array;
    this.deadCount = 0;
    this.vocab = new SortedTexts(parts.texts.vocab!, a.vocabStarts as Uint32Array);
    this.builtTerms = parts.meta.builtTerms as number;
    this.extraTerms = [];
    this.extraTermIds = new Map();
    this.postSeg = a.postSeg as Uint32Array;
    this.postFlat = a.postFlat as Uint32Array;
    this.extra = new Map();
    this.fwd = a.fwd as Uint32Array;
    this.fwdStart = a.fwdStart as Uint32Array;
    this.wordCache = new Map();
    this.typoCache.clear();
    this.typoCacheMatches = 0;
    this.typoVocabulary = -1;
    this.keys = new SortedTexts(parts.texts.keys!, a.keyStarts as Uint32Array);
    this.keyDocs = a.keyDocs as Uint32Array;
    this.keyBounds = a.keyBounds as Uint32Array;
    this.extraKeys = [];
    this.extraKeyDocs = [];
    this.extraKeyBounds = [];
    this.ids.restore(a.idSlots as Uint32Array, n);
    this.resizeScratch();
  }

  /** Number of postings of vocabulary word `term`. */
  private postingCount(term: number): number {
    const built = term < this.builtTerms ? this.postSeg[(term + 1) * SEGMENTS]! - this.postSeg[term * SEGMENTS]! : 0;
    return built + (this.extra.get(term)?.length ?? 0);
  }

  /** Adds or replaces records by id. */
  upsert(records: T[]): void {
    this.docsVersion++;
    const added: Array<{ key: string; doc: number; bounds: number }> = [];
    for (const record of records) {
      const old = this.ids.get(record.id);
      if (old !== undefined && !this.isDead(old)) {
        this.info[old]! |= INFO_DEAD;
        this.deadCount++;
      }
      const fields = this.describe(record);
      const doc = this.append(this.store.add(record), fields);
      this.ids.set(record.id, doc);
      for (const [at, name] of fields.names.entries()) {
        const [key, bounds] = nameKey(name);
        if (key) added.push({ key, doc, bounds: at === 0 ? bounds | PRIMARY_KEY : bounds });
      }
    }
    this.mergeExtraKeys(added);
    this.resizeScratch();
  }

  /**
   * Tombstones, appended documents and words outside the sorted vocabulary cost scan time; past a
   * point a rebuild is cheaper. The owner decides where to rebuild (here, or in another process).
   */
  get rebuildDue(): boolean {
    return rebuildDue(this.builtDocs, this.deadCount, this.docCount - this.builtDocs, this.extraTerms.length);
  }

  /** Whether upserting `changes` records would make a rebuild due (counting each as a replacement). */
  wouldRebuildWith(changes: number): boolean {
    return rebuildDue(this.builtDocs, this.deadCount + changes, this.docCount - this.builtDocs + changes, this.extraTerms.length);
  }

  /**
   * Merges name keys of appended documents into the sorted extra keys, in one pass (inserting them
   * one at a time cost quadratic time: 24 s for 40,000 new products). Among equal keys the newer
   * document comes first.
   */
  private mergeExtraKeys(added: Array<{ key: string; doc: number; bounds: number }>): void {
    if (added.length === 0) return;
    added.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : b.doc - a.doc));
    const keys: string[] = [];
    const docs: number[] = [];
    const bounds: number[] = [];
    let i = 0;
    for (const entry of added) {
      while (i < this.extraKeys.length && this.extraKeys[i]! < entry.key) {
        keys.push(this.extraKeys[i]!);
        docs.push(this.extraKeyDocs[i]!);
        bounds.push(this.extraKeyBounds[i]!);
        i++;
      }
      keys.push(entry.key);
      docs.push(entry.doc);
      bounds.push(entry.bounds);
    }
    for (; i < this.extraKeys.length; i++) {
      keys.push(this.extraKeys[i]!);
      docs.push(this.extraKeyDocs[i]!);
      bounds.push(this.extraKeyBounds[i]!);
    }
    this.extraKeys = keys;
    this.extraKeyDocs = docs;
    this.extraKeyBounds = bounds;
  }

  /** Appends a document (after the build) for store row `row`. */
  private append(row: number, fields: IndexedFields): number {
    const doc = this.docCount++;
    this.rowOf = grow(this.rowOf, doc + 1, Uint32Array);
    this.rowOf[doc] = row;
    this.info = grow(this.info, doc + 1, Uint32Array);
    this.info[doc] = docInfo(fields);
    const terms: number[] = [];
    const masks: number[] = [];
    for (const [field, text] of fields.fields) {
      let list = field === FIELD_NAME ? undefined : this.wordCache.get(text);
      if (list === undefined) {
        const found = words(text);
        list = [...found, ...joinedNamesIn(found)].map((word) => this.termOf(word));
        if (field !== FIELD_NAME && this.wordCache.size < 10_000) this.wordCache.set(text, list);
      }
      collectTerms(list, field, terms, masks);
    }
    const count = Math.min(terms.length, 65535);
    let size = this.fwdStart[doc]!;
    this.fwd = grow(this.fwd, size + count, Uint32Array);
    for (let i = 0; i < count; i++) {
      const list = this.extra.get(terms[i]!);
      if (list) list.push(doc * 16 + masks[i]!);
      else this.extra.set(terms[i]!, [doc * 16 + masks[i]!]);
      this.fwd[size++] = terms[i]! * 16 + masks[i]!;
    }
    this.fwdStart = grow(this.fwdStart, doc + 2, Uint32Array);
    this.fwdStart[doc + 1] = size;
    return doc;
  }

  /** Whether some document holds this (folded) word. */
  hasWord(word: string): boolean {
    const term = this.lookupTerm(word);
    return term !== undefined && this.postingCount(term) > 0;
  }

  /** The vocabulary id of a word, or undefined. */
  private lookupTerm(word: string): number | undefined {
    const built = this.vocab.indexOf(word);
    return built >= 0 ? built : this.extraTermIds.get(word);
  }

  /** The vocabulary id of a word, added to the vocabulary when new. */
  private termOf(word: string): number {
    let term = this.lookupTerm(word);
    if (term === undefined) {
      term = this.builtTerms + this.extraTerms.push(word) - 1;
      this.extraTermIds.set(word, term);
    }
    return term;
  }

  private resizeScratch(): void {
    const n = this.docCount;
    if (this.seen.length >= n) return;
    const size = Math.max(n, 1024) + 1024;
    this.seen = new Uint32Array(size);
    this.filterMarks = [];
    this.prefixMark = new Uint32Array(size);
    this.exactMark = new Uint32Array(size);
    this.boundaryMark = new Uint32Array(size);
    this.ownPrefixMark = new Uint32Array(size);
    this.leaderMark = new Uint32Array(size);
    this.gen = 0;
    this.visitGen = 0;
  }

  private nextGen(): number {
    this.gen++;
    if (this.gen >= 0xffffffff) {
      this.prefixMark.fill(0);
      this.exactMark.fill(0);
      this.boundaryMark.fill(0);
      this.ownPrefixMark.fill(0);
      this.leaderMark.fill(0);
      this.gen = 1;
    }
    return this.gen;
  }

  /** Vocabulary words a query word matches exactly and by prefix. */
  private expand(word: QueryWord): Expansion {
    const exact: number[] = [];
    for (const text of new Set(word.exact)) {
      const term = this.lookupTerm(text);
      if (term !== undefined) exact.push(term);
    }
    let size = 0;
    for (const term of exact) size += this.postingCount(term);
    let lo = 0;
    let hi = 0;
    const prefix: number[] = [];
    if (word.prefix) {
      [lo, hi] = this.vocab.prefixRange(word.text);
      // One or two letters expand to much of the vocabulary; names starting with them rank first anyway.
      if (word.text.length <= 2) hi = Math.min(hi, lo + MAX_SHORT_PREFIX_TERMS);
      size += this.postSeg[hi * SEGMENTS]! - this.postSeg[lo * SEGMENTS]!;
      for (const [term, list] of this.extra) if (term >= lo && term < hi) size += list.length;
      this.extraTerms.forEach((text, i) => {
        if (text.startsWith(word.text) && !word.exact.includes(text)) {
          prefix.push(this.builtTerms + i);
          size += this.postingCount(this.builtTerms + i);
        }
      });
    }
    return { word, exact, lo, hi, prefix, fuzzy: null, lookup: null, slippedWords: [], size };
  }

  /**
   * Typo lookups of a query word: sound-alike spellings, one or two slips, and for the word being typed
   * a slip in its typed part. The vocabulary words matched whole go into `matched` (highlighting).
   */
  private expandFuzzy(expansion: Expansion, matched: Set<string>): void {
    const word = expansion.word;
    const fuzzy = new Map<number, number>();
    const lookup = this.typoMatches(word);
    const whole: number[] = [];
    for (const [text, term, kind] of lookup.matches) {
      if (word.exact.includes(text)) continue;
      if ((fuzzy.get(term) ?? 0) < kind) fuzzy.set(term, kind);
      if (text === '') continue;
      matched.add(text);
      whole.push(term);
    }
    expansion.fuzzy = fuzzy;
    expansion.lookup = lookup;
    expansion.slippedWords = whole;
  }

  /**
   * Vocabulary words a query word matches by sound or by slips, with their match kind (words matched
   * by prefix have an empty text). A typo lookup walks much of the vocabulary (the most expensive step
   * of a search), and prescribers type the same names over and over, so results are kept per word
   * until the vocabulary changes.
   */
  private typoMatches(word: QueryWord): TypoLookup {
    if (this.typoVocabulary !== this.termCount) {
      this.typoCache.clear();
      this.typoCacheMatches = 0;
      this.typoVocabulary = this.termCount;
    }
    // A slip in a half-typed word: the word being typed, of 4 letters or more, or of 3 (see threeTypedLetters).
    const slippedPrefix = word.prefix && word.typing && word.text.length >= 4;
    const three = threeTypedLetters(word);
    const key = `${word.fuzzy}:${slippedPrefix ? 'p' : three ? '3' : ''}:${word.text}`;
    const known = this.typoCache.get(key);
    if (known !== undefined) {
      // Most recently used last, so the oldest entry goes first when the cache is full.
      this.typoCache.delete(key);
      this.typoCache.set(key, known);
      return known;
    }
    const found = new Map<number, [text: string, term: number, kind: number]>();
    const add = (text: string, term: number, kind: number) => {
      const held = found.get(term);
      if (!held || held[2] < kind) found.set(term, [text, term, kind]);
    };
    let prefixTerms = 0;
    const addPrefix = (prefix: string, kind: number) => {
      const [lo, hi] = this.vocab.prefixRange(prefix);
      for (let term = lo; term < hi && prefixTerms < MAX_FUZZY_PREFIX_TERMS; term++, prefixTerms++) add('', term, kind);
      this.extraTerms.forEach((text, i) => {
        if (text.startsWith(prefix)) add('', this.builtTerms + i, kind);
      });
    };
    for (const sound of word.sounds) {
      const term = this.lookupTerm(sound);
      if (term !== undefined) add(sound, term, KIND_SOUND);
    }
    const slippedPrefixes: Array<[prefix: string, kind: number]> = [];
    if (word.fuzzy > 0) {
      this.fuzzyWalk(
        word.text,
        word.fuzzy,
        slippedPrefix ? 1 : 0,
        (term) => {
          const text = this.vocab.at(term);
          add(text, term, slipKind(slipCost(word.text, text)));
        },
        (prefix) => slippedPrefixes.push([prefix, Math.max(1, slipKind(slipCost(word.text, prefix)) - 1)]),
      );
      const n = word.text.length;
      this.extraTerms.forEach((text, i) => {
        const distance = boundedDistance(word.text, text, word.fuzzy);
        if (distance > 0 && distance <= word.fuzzy) add(text, this.builtTerms + i, slipKind(slipCost(word.text, text)));
        if (!slippedPrefix) return;
        for (let length = n - 1; length <= n + 1 && length <= text.length; length++) {
          const prefix = text.slice(0, length);
          if (boundedDistance(word.text, prefix, 1) === 1) slippedPrefixes.push([prefix, Math.max(1, slipKind(slipCost(word.text, prefix)) - 1)]);
        }
      });
    } else if (three) {
      const length = word.text.length + 1;
      const push = (prefix: string) => {
        const kind = threeLetterSlip(word.text, prefix);
        if (kind > 0) slippedPrefixes.push([prefix, kind]);
      };
      this.fuzzyWalk(word.text, 1, 1, () => {}, push);
      this.extraTerms.forEach((text) => {
        for (const prefix of [text.slice(0, length), text.slice(0, length - 1)])
          if (prefix.length >= length - 1 && boundedDistance(word.text, prefix, 1) === 1) push(prefix);
      });
    }
    // Prefixes last, best first, then longest: the words they start are many, and kept only up to a bound.
    if (word.prefix && word.typing) for (const sound of word.sounds) slippedPrefixes.push([sound, KIND_SOUND_PREFIX]);
    slippedPrefixes.sort((a, b) => b[1] - a[1] || b[0].length - a[0].length);
    const prefixes: Array<[prefix: string, kind: number]> = [];
    const listed = new Set<string>();
    for (const [prefix, kind] of slippedPrefixes) {
      if (listed.has(prefix)) continue;
      listed.add(prefix);
      prefixes.push([prefix, kind]);
      addPrefix(prefix, kind);
    }
    const lookup: TypoLookup = { matches: [...found.values()], prefixes, leaders: null, leadersAt: -1 };
    const size = lookup.matches.length + lookup.prefixes.length;
    while (this.typoCache.size > 0 && (this.typoCache.size >= TYPO_CACHE_WORDS || this.typoCacheMatches + size > TYPO_CACHE_MATCHES)) {
      const [oldest, held] = this.typoCache.entries().next().value!;
      this.typoCache.delete(oldest);
      this.typoCacheMatches -= held.matches.length + held.prefixes.length;
    }
    this.typoCache.set(key, lookup);
    this.typoCacheMatches += size;
    return lookup;
  }

  /**
   * Calls `found` for every built vocabulary word within `max` edits of `query` (restricted
   * Damerau-Levenshtein: a swap of adjacent letters is one edit; not 0), and `foundPrefix` for every
   * beginning of a word, one letter shorter to one longer than the query, within `prefixMax` edits of
   * it (a slip in a half-typed word; not 0). The vocabulary is sorted, so consecutive words share
   * prefixes and the rows of the edit-distance table computed for a shared prefix are reused; once a
   * prefix is more than `max` edits away from every start of the query, all words beginning with it
   * are skipped at once (a trie walk without the trie).
   */
  private fuzzyWalk(query: string, max: number, prefixMax: number, found: (term: number) => void, foundPrefix: (prefix: string) => void): void {
    const n = query.length;
    const width = n + 1;
    const maxDepth = n + max;
    const rows = new Uint16Array((maxDepth + 2) * width);
    for (let j = 0; j <= n; j++) rows[j] = j;
    const text = this.vocab.text;
    const starts = this.vocab.starts;
    /** Rows 0..depth are valid for the first `depth` characters of the word starting at text[held]. */
    let held = 0;
    let depth = 0;
    for (let t = 0; t < this.builtTerms; ) {
      const start = starts[t]!;
      const length = starts[t + 1]! - start;
      let i = 0;
      const shared = Math.min(depth, length);
      while (i < shared && text.charCodeAt(start + i) === text.charCodeAt(held + i)) i++;
      let pruned = false;
      for (; i < length; i++) {
        if (i + 1 > maxDepth) {
          pruned = true;
          break;
        }
        const c = text.charCodeAt(start + i);
        const before = i > 0 ? text.charCodeAt(start + i - 1) : -1;
        const prev = i * width;
        const cur = prev + width;
        rows[cur] = i + 1;
        let min = i + 1;
        for (let j = 1; j <= n; j++) {
          const q = query.charCodeAt(j - 1);
          let v = Math.min(rows[prev + j]! + 1, rows[cur + j - 1]! + 1, rows[prev + j - 1]! + (q === c ? 0 : 1));
          // Two adjacent letters swapped: one edit.
          if (j >= 2 && i >= 1 && q === before && query.charCodeAt(j - 2) === c && q !== c) v = Math.min(v, rows[prev - width + j - 2]! + 1);
          rows[cur + j] = v;
          if (v < min) min = v;
        }
        const end = rows[cur + n]!;
        if (prefixMax > 0 && end > 0 && end <= prefixMax && i + 2 >= n && i <= n) foundPrefix(text.slice(start, start + i + 1));
        if (min > max) {
          pruned = true;
          break;
        }
      }
      held = start;
      depth = i;
      if (pruned) {
        // No word starting with these i + 1 characters is within reach.
        t = this.vocab.prefixEnd(text.slice(start, start + i + 1), t + 1);
        continue;
      }
      const distance = rows[length * width + n]!;
      if (distance > 0 && distance <= max) found(t);
      t++;
    }
  }

  /** Fills a slot's kind table for the words a query word matches outside its prefix range. */
  private fillKinds(slot: number, expansion: Expansion): void {
    const current = this.kindTables[slot];
    if (!current || current.length < this.termCount) this.kindTables[slot] = new Uint8Array(this.termCount + 4096);
    const table = this.kindTables[slot]!;
    for (const term of expansion.prefix) table[term] = KIND_PREFIX;
    if (expansion.fuzzy) for (const [term, kind] of expansion.fuzzy) if (table[term]! < kind) table[term] = kind;
    for (const term of expansion.exact) table[term] = KIND_EXACT;
  }

  private clearKinds(slot: number, expansion: Expansion): void {
    const table = this.kindTables[slot];
    if (!table) return;
    for (const term of expansion.prefix) table[term] = 0;
    if (expansion.fuzzy) for (const term of expansion.fuzzy.keys()) table[term] = 0;
    for (const term of expansion.exact) table[term] = 0;
  }

  /** The best match (kind * 4 + field rank) of a query word among document `doc`'s own words; 0 if none. */
  private matchIn(doc: number, table: Uint8Array, lo: number, hi: number): number {
    let best = 0;
    const fwd = this.fwd;
    for (let k = this.fwdStart[doc]!, end = this.fwdStart[doc + 1]!; k < end; k++) {
      const term = fwd[k]! >>> 4;
      let kind = table[term]!;
      if (kind === 0) {
        if (term < lo || term >= hi) continue;
        kind = KIND_PREFIX;
      }
      const q = kind * 4 + fieldRank(fwd[k]! & 15);
      if (q > best) best = q;
    }
    return best;
  }

  /** The match kind of a query word with the first word of document `doc`'s name (0: none, or no name). */
  private leadKind(doc: number, table: Uint8Array, lo: number, hi: number): number {
    const start = this.fwdStart[doc]!;
    if (start === this.fwdStart[doc + 1]! || !(this.fwd[start]! & FIELD_NAME)) return 0;
    const term = this.fwd[start]! >>> 4;
    return table[term]! || (term >= lo && term < hi ? KIND_PREFIX : 0);
  }

  /** Visits the name keys starting with `prefix`: built ones, then those added after the build. */
  private scanKeys(prefix: string, cap: number, visit: (doc: number, keyLength: number, bounds: number) => boolean): void {
    const keys = this.keys;
    let visited = 0;
    for (let i = keys.lowerBound(prefix); i < keys.length && keys.startsWith(i, prefix) && visited < cap; i++) {
      if (visit(this.keyDocs[i]!, keys.starts[i + 1]! - keys.starts[i]!, this.keyBounds[i]!)) visited++;
    }
    const extra = this.extraKeys;
    let lo = 0;
    for (let hi = extra.length; lo < hi; ) {
      const mid = (lo + hi) >>> 1;
      if (extra[mid]! < prefix) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < extra.length && extra[i]!.startsWith(prefix) && visited < cap; i++) {
      if (visit(this.extraKeyDocs[i]!, extra[i]!.length, this.extraKeyBounds[i]!)) visited++;
    }
  }

  search(query: ParsedQuery, limit: number): Hit<T>[] {
    if (query.words.length === 0 && query.compact === '') return [];
    const gen = this.nextGen();
    const expansions = query.words.map((word) => this.expand(word));
    const typoMatches = query.words.map(() => new Set<string>());

    // Names equal to or starting with the query, ignoring spaces and hyphens (and units: "pan 40mg"
    // starts "Pan 40 Tablet").
    const prefixDocs: number[] = [];
    let activePrefix = 0;
    const prefixes = query.compactCore !== '' && query.compactCore !== query.compact ? [query.compact, query.compactCore] : [query.compact];
    for (const prefix of prefixes) {
      if (prefix === '') continue;
      // Very short queries match a good part of the catalogue; the best-laid-out names come first.
      const cap = prefix.length <= 2 ? PREFIX_SCAN_CAP : Infinity;
      this.scanKeys(prefix, cap, (doc, keyLength, bounds) => {
        if (prefix === query.compact && keyLength === prefix.length) this.exactMark[doc] = gen;
        if (prefix.length === keyLength || (prefix.length < 32 && (bounds >>> prefix.length) & 1)) this.boundaryMark[doc] = gen;
        if (bounds & PRIMARY_KEY) this.ownPrefixMark[doc] = gen;
        if (this.prefixMark[doc] === gen) return false;
        this.prefixMark[doc] = gen;
        prefixDocs.push(doc);
        if (!(this.info[doc]! & (INFO_DEAD | INFO_DEMOTED))) activePrefix++;
        return true;
      });
    }

    // The driver: the rarest required word. Needless when names starting with the query fill the
    // page, since those outrank every other active match.
    let driver = -1;
    if (activePrefix < limit) {
      expansions.forEach((e, slot) => {
        if (e.word.required && (driver < 0 || e.size < expansions[driver]!.size)) driver = slot;
      });
    }

    for (const [slot, e] of expansions.entries()) this.fillKinds(slot, e);
    let hits = this.rank(expansions, limit, gen, driver, prefixDocs);
    // Typo tolerance, only when exact and prefix matches leave room on the page: a typo match never
    // outranks an active exact or prefix match.
    if (
      hits.filter((h) => !(this.info[h.doc]! & INFO_DEMOTED)).length < limit &&
      query.words.some((w) => w.fuzzy > 0 || w.sounds.length > 0 || threeTypedLetters(w))
    ) {
      for (const [slot, e] of expansions.entries()) this.expandFuzzy(e, typoMatches[slot]!);
      for (const [slot, e] of expansions.entries()) this.fillKinds(slot, e);
      const leaders: number[] = [];
      for (const e of expansions) {
        // Only a word that its slips alone match: typed as it is, it begins no word.
        if (!e.lookup || e.lookup.prefixes.length === 0 || e.exact.length > 0 || e.hi > e.lo || e.prefix.length > 0) continue;
        for (const doc of this.leadersOf(e, e.lookup)) {
          if (this.leaderMark[doc] === gen) continue;
          this.leaderMark[doc] = gen;
          leaders.push(doc);
        }
      }
      hits = this.rank(expansions, limit, gen, driver, prefixDocs, leaders);
    }
    for (const [slot, e] of expansions.entries()) this.clearKinds(slot, e);
    return hits.map((h) => ({
      record: this.store.get(this.rowOf[h.doc]!),
      exact: this.exactMark[h.doc] === gen,
      namePrefix: this.prefixMark[h.doc] === gen,
      typoMatches,
    }));
  }

  /**
   * One ranking pass: the names starting with the query, then the driver word's postings. Those are
   * walked run by run (one run per vocabulary word and field rank, best match first), each in document
   * order, that is in descending order of the query-independent part of the score; a run stops as soon
   * as even a document matching every other word at its best could not enter the page. So a broad word
   * ("paracetamol", 20,000 products) costs about as much as a rare one.
   */
  private rank(
    expansions: Expansion[],
    limit: number,
    gen: number,
    driver: number,
    prefixDocs: number[],
    leaders: number[] = [],
  ): Array<{ doc: number; score: number }> {
    if (this.visitGen >= 0xfffffffe) {
      this.seen.fill(0);
      for (const marks of this.filterMarks) marks.fill(0);
      this.visitGen = 0;
    }
    const pass: RankPass = {
      visit: ++this.visitGen,
      gen,
      driver,
      limit,
      top: [],
      required: expansions.map((e) => e.word.required),
      tables: expansions.map((_, slot) => this.kindTables[slot]!),
      los: expansions.map((e) => e.lo),
      his: expansions.map((e) => e.hi),
    };
    for (let i = 0; i < prefixDocs.length; i++) this.consider(prefixDocs[i]!, -1, true, pass);
    if (driver < 0) return this.finish(pass);
    // Leaders score LEADER above the bound of the walk below: they are scored here and now.
    for (let i = 0; i < leaders.length; i++) this.consider(leaders[i]!, -1, false, pass);

    // The most every other word can add to a document's score. A word found in few names (a salt,
    // rarely a brand's name) has those documents scored here and now; every other document can only
    // hold it in a lesser field, which keeps the bound of the walk below tight.
    let others = 0;
    for (let slot = 0; slot < expansions.length; slot++) {
      if (slot === driver) continue;
      const e = expansions[slot]!;
      let best = e.exact.length > 0 ? KIND_EXACT : e.hi > e.lo || e.prefix.length > 0 ? KIND_PREFIX : 0;
      if (best === 0 && e.fuzzy) for (const kind of e.fuzzy.values()) if (kind > best) best = kind;
      // A required word no document holds: only names starting with the query can match.
      if (best === 0 && e.word.required) return this.finish(pass);
      const inNames = this.nameSegments(e, Math.min(NAME_SEGMENT_DOCS, expansions[driver]!.size / 4));
      if (inNames !== null) for (const [from, to] of inNames) for (let i = from; i < to; i++) this.consider(this.postFlat[i]!, -1, false, pass);
      // Its slips may give the document a LEAD of their own.
      others += wordScore(best * 4 + (inNames === null ? 3 : 2), e.word.required) + (e.fuzzy && e.fuzzy.size > 0 ? LEAD : 0);
    }

    const e = expansions[driver]!;
    const runs: Array<{ term: number; kind: number }> = [];
    for (const term of e.exact) runs.push({ term, kind: KIND_EXACT });
    for (let term = e.lo; term < e.hi; term++) runs.push({ term, kind: KIND_PREFIX });
    for (const term of e.prefix) runs.push({ term, kind: KIND_PREFIX });
    if (e.fuzzy) for (const [term, kind] of e.fuzzy) runs.push({ term, kind });
    // Best matches first, so the page fills early and later runs stop at their first document.
    const segments: number[] = [];
    for (const { term, kind } of runs) {
      if (term >= this.builtTerms) continue;
      // Empty segments left out: a half-typed word's beginnings run to a thousand words, most in one field.
      for (let s = 0, at = term * SEGMENTS; s < SEGMENTS; s++, at++)
        if (this.postSeg[at]! < this.postSeg[at + 1]!) segments.push(((kind * 4 + 3 - s) << 24) | at);
    }
    segments.sort((a, b) => b - a);
    const top = pass.top;
    const seen = this.seen;
    const visit = pass.visit;
    const flat = this.postFlat;
    const filters = this.markRequired(expansions, driver, visit);
    for (const packed of segments) {
      const q = packed >>> 24;
      const segment = packed & 0xffffff;
      // A document whose name begins with the slipped word (LEAD) is met first in a name run of its best
      // slip: composition and form runs, and exact or prefix runs (a slip elsewhere is a lower tier than
      // their bound), keep the tight bound.
      const reach = (q >> 2 < KIND_PREFIX ? 1e13 + ((q & 3) === 3 ? LEAD : 0) : 2e13) + wordScore(q, true) + others;
      postings: for (let i = this.postSeg[segment]!, end = this.postSeg[segment + 1]!; i < end; i++) {
        const doc = flat[i]!;
        for (let f = 0; f < filters.length; f++) if (filters[f]![doc] !== visit) continue postings;
        if (seen[doc] === visit) continue;
        // Later documents of this run score at most this; they would need to outrank the last of the page.
        if (!this.exhaustive && top.length === limit && !outranks(reach + staticScore(this.info[doc]!), doc, top[limit - 1]!)) break;
        this.consider(doc, q, false, pass);
      }
    }
    // Postings added since the build: few, and not in layout order.
    for (const { term, kind } of runs) {
      const list = this.extra.get(term);
      if (list) for (const posting of list) this.consider(posting >>> 4, kind * 4 + fieldRank(posting & 15), false, pass);
    }
    return this.finish(pass);
  }

  /**
   * The leaders of what a half-typed word's slips stand for: for each vocabulary word it matches whole,
   * the product that ranks first of those holding it; for each beginning, the first of those whose name
   * begins with it. Beginnings best first, their words up to MAX_FUZZY_PREFIX_TERMS in all, as the typo
   * lookup expands them. Kept with the lookup until the documents change.
   */
  private leadersOf(e: Expansion, lookup: TypoLookup): number[] {
    if (lookup.leaders !== null && lookup.leadersAt === this.docsVersion) return lookup.leaders;
    const out: number[] = [];
    const mark = (best: Leader, unled: boolean) => {
      const doc = best.led >= 0 ? best.led : unled ? best.any : -1;
      if (doc >= 0 && !out.includes(doc)) out.push(doc);
    };
    for (const term of e.slippedWords) {
      const best = { led: -1, any: -1 };
      this.leaderAmong(term, best);
      mark(best, true);
    }
    // Words first seen after the build that the lookup matched: outside the sorted vocabulary's ranges.
    const appended: number[] = [];
    if (e.fuzzy) for (const term of e.fuzzy.keys()) if (term >= this.builtTerms) appended.push(term);
    let budget = MAX_FUZZY_PREFIX_TERMS;
    for (const [prefix] of lookup.prefixes) {
      if (budget <= 0) break;
      const [lo, hi] = this.vocab.prefixRange(prefix);
      const end = Math.min(hi, lo + budget);
      budget -= end - lo;
      const best = { led: -1, any: -1 };
      for (let term = lo; term < end; term++) this.leaderAmong(term, best);
      for (const term of appended) if (this.extraTerms[term - this.builtTerms]!.startsWith(prefix)) this.leaderAmong(term, best);
      mark(best, false);
    }
    lookup.leaders = out;
    lookup.leadersAt = this.docsVersion;
    return out;
  }

  /**
   * Updates `best` with the documents holding `term` that a slip ranks first: `led`, whose name's first
   * word it is (they gain LEAD), and `any`; looking at the first LEADER_POSTINGS of its postings by field.
   */
  private leaderAmong(term: number, best: Leader): void {
    const before = (doc: number, other: number) => other < 0 || this.laidOutBefore(doc, other);
    const leads = (doc: number) => this.fwd[this.fwdStart[doc]!]! >>> 4 === term;
    if (term < this.builtTerms) {
      for (let s = 0; s < SEGMENTS; s++) {
        const from = this.postSeg[term * SEGMENTS + s]!;
        const to = Math.min(this.postSeg[term * SEGMENTS + s + 1]!, from + LEADER_POSTINGS);
        for (let i = from; i < to; i++) {
          const doc = this.postFlat[i]!;
          if (this.info[doc]! & INFO_DEAD) continue;
          if (before(doc, best.any)) best.any = doc;
          // Built postings in layout order: outside the name, or past the best so far, nothing better follows.
          if (s > 0 || !before(doc, best.led)) break;
          if (leads(doc)) {
            best.led = doc;
            break;
          }
        }
      }
    }
    const list = this.extra.get(term);
    if (!list) return;
    for (let k = 0; k < list.length && k < LEADER_POSTINGS * 4; k++) {
      const doc = list[k]! >>> 4;
      if (this.info[doc]! & INFO_DEAD) continue;
      if (before(doc, best.any)) best.any = doc;
      if (list[k]! & (FIELD_NAME | FIELD_ALT) && leads(doc) && before(doc, best.led)) best.led = doc;
    }
  }

  /** Document `doc` comes before `other` in the query-independent order (see staticScore). */
  private laidOutBefore(doc: number, other: number): boolean {
    const a = staticScore(this.info[doc]!);
    const b = staticScore(this.info[other]!);
    return a > b || (a === b && doc < other);
  }

  /**
   * The name-field postings of everything a query word matches, as ranges of postFlat, when there are
   * at most `most` (and no words added since the build, whose fields are not segmented); else null.
   */
  private nameSegments(e: Expansion, most: number): Array<[number, number]> | null {
    if (e.prefix.length > 0 || (e.fuzzy && e.fuzzy.size > 0) || e.exact.some((term) => term >= this.builtTerms)) return null;
    if (e.hi - e.lo > NAME_SEGMENT_TERMS) return null;
    const ranges: Array<[number, number]> = [];
    let count = 0;
    const add = (term: number) => {
      const from = this.postSeg[term * SEGMENTS]!;
      const to = this.postSeg[term * SEGMENTS + 1]!;
      if (to > from) ranges.push([from, to]);
      count += to - from;
    };
    for (const term of e.exact) if (term < e.lo || term >= e.hi) add(term);
    for (let term = e.lo; term < e.hi; term++) add(term);
    for (const term of e.exact) if (this.extra.has(term)) return null;
    for (const term of this.extra.keys()) if (term >= e.lo && term < e.hi) return null;
    return count <= most ? ranges : null;
  }

  /**
   * Marks (with `visit`) every document holding each other required word whose postings are not
   * much longer than the driver's: a driver posting without the mark is skipped after one memory read,
   * instead of a look through the document's words. Returns the mark arrays to check.
   */
  private markRequired(expansions: Expansion[], driver: number, visit: number): Uint32Array[] {
    const filters: Uint32Array[] = [];
    const budget = expansions[driver]!.size * 2 + 1024;
    expansions.forEach((e, slot) => {
      if (slot === driver || !e.word.required || e.size > budget) return;
      let marks = this.filterMarks[filters.length];
      if (!marks || marks.length < this.docCount) marks = this.filterMarks[filters.length] = new Uint32Array(this.seen.length);
      const markTerm = (term: number) => {
        if (term < this.builtTerms)
          for (let i = this.postSeg[term * SEGMENTS]!, end = this.postSeg[(term + 1) * SEGMENTS]!; i < end; i++) marks[this.postFlat[i]!] = visit;
        const extra = this.extra.get(term);
        if (extra) for (const posting of extra) marks[posting >>> 4] = visit;
      };
      for (const term of e.exact) markTerm(term);
      for (let i = this.postSeg[e.lo * SEGMENTS]!, end = this.postSeg[e.hi * SEGMENTS]!; i < end; i++) marks[this.postFlat[i]!] = visit;
      for (const [term, list] of this.extra) if (term >= e.lo && term < e.hi) for (const posting of list) marks[posting >>> 4] = visit;
      for (const term of e.prefix) markTerm(term);
      if (e.fuzzy) for (const term of e.fuzzy.keys()) markTerm(term);
      filters.push(marks);
    });
    return filters;
  }

  private finish(pass: RankPass): Array<{ doc: number; score: number }> {
    const top = pass.top;
    if (top.length < pass.limit) top.sort(byRank);
    return top;
  }

  /**
   * Scores one candidate into the pass's top list (`driverQuality` < 0: work it out). A method rather
   * than a closure made per pass, so that the optimising compiler keeps one stable version of the
   * hottest code of a search.
   */
  private consider(doc: number, driverQuality: number, inPrefix: boolean, pass: RankPass): void {
    const info = this.info[doc]!;
    if (this.seen[doc] === pass.visit || info & INFO_DEAD) return;
    this.seen[doc] = pass.visit;
    let all = true;
    let fuzzy = false;
    let whole = 0;
    let soft = 0;
    let kinds = 0;
    let fields = 0;
    let lead = 0;
    const slots = pass.required.length;
    for (let slot = 0; slot < slots; slot++) {
      const q = slot === pass.driver && driverQuality >= 0 ? driverQuality : this.matchIn(doc, pass.tables[slot]!, pass.los[slot]!, pass.his[slot]!);
      if (pass.required[slot]) {
        if (q === 0) {
          all = false;
          if (!inPrefix) return;
          continue;
        }
        const kind = q >> 2;
        if (kind === KIND_EXACT) whole++;
        else if (kind < KIND_PREFIX) {
          fuzzy = true;
          if (lead === 0 && this.leadKind(doc, pass.tables[slot]!, pass.los[slot]!, pass.his[slot]!) === kind) lead = LEAD;
        }
      } else if (q > 0) {
        soft++;
      }
      kinds += q >> 2;
      fields += q & 3;
    }
    const gen = pass.gen;
    const exact = inPrefix && this.exactMark[doc] === gen;
    const tier = inPrefix ? 3 : fuzzy || !all ? 1 : 2;
    // A name that starts with the whole query ending on a word ("zerodolsp" in "Zerodol-SP Tablet")
    // beats one where the query ends inside a word ("Zerodol Spas").
    const boundary = inPrefix && this.boundaryMark[doc] === gen ? 5e12 : 0;
    const own = inPrefix && this.ownPrefixMark[doc] === gen ? OWN_NAME_PREFIX : 0;
    // One number, most significant criterion first (each term stays below the next one's unit);
    // wordScore and staticScore are the same sums for the early stop in rank().
    const leader = fuzzy && this.leaderMark[doc] === gen ? LEADER : 0;
    const score =
      (exact ? 1e15 : 0) + tier * 1e13 + own + boundary + whole * 1e11 + soft * 1e10 + leader + kinds * 1e8 + lead + fields * 1e3 + staticScore(info);
    const top = pass.top;
    const limit = pass.limit;
    if (top.length < limit) {
      top.push({ doc, score });
      if (top.length === limit) top.sort(byRank);
    } else if (outranks(score, doc, top[limit - 1]!)) {
      let at = limit - 1;
      while (at > 0 && outranks(score, doc, top[at - 1]!)) {
        top[at] = top[at - 1]!;
        at--;
      }
      top[at] = { doc, score };
    }
  }
}

/** Adds a field's words to a document's distinct words, or'ing the field into the mask of words seen. */
function collectTerms(list: number[], field: number, terms: number[], masks: number[]): void {
  for (const term of list) {
    const at = terms.indexOf(term);
    if (at < 0) {
      terms.push(term);
      masks.push(field);
    } else {
      masks[at]! |= field;
    }
  }
}
