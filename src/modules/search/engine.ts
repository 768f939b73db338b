/**
 * The in-memory search index behind the search endpoint (chosen by measurement: bench/SEARCH-ENGINES.md).
 *
 * Words live in MiniSearch's radix tree (SearchableMap), which gives exact, prefix and bounded
 * edit-distance lookups over the vocabulary; each word points at a posting list of documents with the
 * fields it occurs in, and each document keeps its own word list (a forward index). A query walks the
 * postings of one query word only, the rarest required one (or none, when names starting with the
 * query fill the page), and checks the other words against each candidate's own word list, so its cost
 * follows the rarest word, not the commonest ("tablet", "40"). Candidates must match every required
 * word (exact word, word prefix, one or two edits) or have a name starting with the query; they are
 * ranked in the contract's tiers:
 *
 *   exact name > (active before discontinued) > name starts with the query > every word matched by
 *   word or word-prefix > typo-tolerant; then more whole words, then matched form/unit words, then
 *   fewer salts (the query covers the product better), then better fields (name over composition,
 *   closer spelling), then the shorter name.
 *
 * Typo lookups run only when the exact and prefix matches cannot fill the page, which keeps the common
 * case cheap. Updates are incremental (a replaced document is tombstoned; the index is rebuilt when
 * tombstones pile up), so a process applies catalogue changes without a restart.
 */
import SearchableMap from 'minisearch/SearchableMap';
import { FILLER_WORDS, formOfWord, SHORTHAND, spans, UNIT_WORDS, words } from './normalize.ts';

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

const KIND_EXACT = 4;
const KIND_PREFIX = 3;
const KIND_FUZZY1 = 2;
const KIND_FUZZY2 = 1;
/** Query words beyond this many are folded into the last slot's neighbours: prescriptions are short. */
const MAX_SLOTS = 8;
/** Prefix expansion of very short words stops after this many vocabulary words. */
const MAX_PREFIX_TERMS = 4000;
const MAX_SHORT_PREFIX_TERMS = 300;
/** Query words whose typo lookups are kept (a few hundred bytes each). */
const TYPO_CACHE_WORDS = 20_000;
/** Names scanned for a one- or two-letter query. */
const PREFIX_SCAN_CAP = 1500;

export interface QueryWord {
  text: string;
  required: boolean;
  /** Vocabulary words that count as an exact match (the word itself, its form or shorthand expansion). */
  exact: string[];
  prefix: boolean;
  /** Maximum edit distance for typo tolerance (0: none). */
  fuzzy: number;
  /** Filled during search: vocabulary words matched by typo tolerance. */
  fuzzyMatched: Set<string>;
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
    if (form) return { text, required: false, exact: [...new Set([text, form])], prefix: false, fuzzy: 0, fuzzyMatched: new Set() };
    if (UNIT_WORDS.has(text) || FILLER_WORDS.has(text)) {
      return { text, required: false, exact: [text], prefix: false, fuzzy: 0, fuzzyMatched: new Set() };
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
      fuzzyMatched: new Set(),
    };
  });
  // A query of only form/unit words ("tablet") still has to match them.
  if (parsed.length > 0 && parsed.every((w) => !w.required)) for (const w of parsed) w.required = true;
  const core = list.filter((w) => !UNIT_WORDS.has(w) && !FILLER_WORDS.has(w)).join('');
  return { raw, compact: list.join(''), compactCore: core, words: parsed };
}

export interface Hit<T> {
  record: T;
  /** The normalised name equals the normalised query. */
  exact: boolean;
  /** The match came through the name starting with the query (used for highlighting). */
  namePrefix: boolean;
}

/** State of one ranking pass over the candidates (see SearchIndex.rank). */
interface RankPass {
  visit: number;
  gen: number;
  driver: number;
  limit: number;
  top: Array<{ doc: number; score: number }>;
  required: boolean[];
  /** Per slot: match kind by vocabulary word (unused for the driver, whose matches are marked per document). */
  tables: Uint8Array[];
}

const EMPTY_TABLE = new Uint8Array(0);

interface Expansion {
  word: QueryWord;
  exact: number[];
  prefix: number[];
  /** Vocabulary word -> match kind, once typo lookups ran. */
  fuzzy: Map<number, number> | null;
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

function grow<A extends Uint8Array | Uint16Array | Uint32Array>(array: A, size: number, make: (n: number) => A): A {
  if (array.length >= size) return array;
  const next = make(Math.max(size, array.length * 2, 1024));
  next.set(array);
  return next;
}

export class SearchIndex<T extends { id: string }> {
  private readonly describe: (record: T) => IndexedFields;
  private records: T[] = [];
  private byId = new Map<string, number>();
  private dead = new Uint8Array(0);
  private demoted = new Uint8Array(0);
  private nameLength = new Uint16Array(0);
  private parts = new Uint8Array(0);
  /** Exact word lookups go to a hash map; the radix tree serves prefix and typo lookups. */
  private termIds = new Map<string, number>();
  /** Vocabulary words of repeated field texts (compositions, forms), computed once per build. */
  private wordCache = new Map<string, number[]>();
  private deadCount = 0;
  private vocab = new SearchableMap<number>();
  /** Number of vocabulary words (term ids are 0 .. termCount - 1). */
  private termCount = 0;
  /**
   * Postings of the built index, flat: those of term t are postFlat[postStart[t] .. postStart[t + 1]),
   * packed as doc * 16 + field mask, in document order. One typed array instead of an array per word
   * keeps them out of the garbage collector's way and costs 4 bytes a posting.
   */
  private postStart = new Uint32Array(1);
  private postFlat = new Uint32Array(0);
  /** Terms covered by postStart; postings added by upserts go to `extra`, per term, also in document order. */
  private builtTerms = 0;
  private extra: Array<number[] | undefined> = [];
  /** Per term while building: number of documents holding it. */
  private termDocs = new Uint32Array(0);
  private building = false;
  /** Forward index: the words of document d are fwdTerms[fwdStart[d] .. fwdStart[d] + fwdCount[d]). */
  private fwdTerms = new Uint32Array(0);
  private fwdMasks = new Uint8Array(0);
  private fwdStart = new Uint32Array(0);
  private fwdCount = new Uint16Array(0);
  private fwdSize = 0;
  /** Typo lookups by query word (see typoMatches), valid for a vocabulary of typoVocabulary words. */
  private typoCache = new Map<string, Array<[text: string, term: number, kind: number]>>();
  private typoVocabulary = -1;
  /** Per query word slot: match kind by vocabulary word, filled for the words a query expands to. */
  private kindTables: Uint8Array[] = [];
  /** Compact exact names, sorted, with their documents: exact-name and name-prefix lookups. */
  private keys: string[] = [];
  private keyDocs: number[] = [];
  /** Per key: bit i set when a word ends after i characters (first 31), to tell "zerodolsp" ending a word. */
  private keyBounds: number[] = [];
  private boundaryMark = new Uint32Array(0);
  // Per-query scratch, reused: marks per query word slot, stamped with a generation number.
  private gen = 0;
  private visitGen = 0;
  private stamps: Uint32Array[] = [];
  private quality: Uint8Array[] = [];
  private seen = new Uint32Array(0);
  private prefixMark = new Uint32Array(0);
  private exactMark = new Uint32Array(0);

  constructor(describe: (record: T) => IndexedFields) {
    this.describe = describe;
  }

  get size(): number {
    return this.records.length - this.deadCount;
  }

  get(id: string): T | undefined {
    const doc = this.byId.get(id);
    return doc === undefined ? undefined : this.records[doc];
  }

  /** Every live record, in index order. */
  all(): T[] {
    return this.records.filter((_, doc) => this.dead[doc] === 0);
  }

  /** Replaces the whole index. Records are laid out best-first so that ties fall to the better one. */
  build(records: T[]): void {
    const n = records.length;
    // The layout order from a few numbers per record: describing every record up front would keep
    // 250k short-lived objects alive at once (old-space garbage that the process keeps as resident memory).
    const order = new Uint32Array(n);
    const rank = new Float64Array(n);
    const firstNames: string[] = new Array<string>(n);
    for (let i = 0; i < n; i++) {
      const fields = this.describe(records[i]!);
      order[i] = i;
      rank[i] = (fields.demoted ? 70000 : 0) + Math.min(fields.nameLength, 65535);
      firstNames[i] = fields.names[0] ?? '';
    }
    // Code-unit order, not localeCompare: the order only needs to be stable, and 250k locale comparisons cost seconds.
    order.sort((a, b) => rank[a]! - rank[b]! || (firstNames[a]! < firstNames[b]! ? -1 : firstNames[a]! > firstNames[b]! ? 1 : a - b));
    this.records = [];
    this.byId = new Map();
    this.dead = new Uint8Array(n);
    this.demoted = new Uint8Array(n);
    this.nameLength = new Uint16Array(n);
    this.parts = new Uint8Array(n);
    this.deadCount = 0;
    this.vocab = new SearchableMap<number>();
    this.termIds = new Map();
    this.wordCache = new Map();
    this.termCount = 0;
    // Term ids are assigned afresh.
    this.typoCache.clear();
    this.builtTerms = 0;
    this.postStart = new Uint32Array(1);
    this.postFlat = new Uint32Array(0);
    this.extra = [];
    this.termDocs = new Uint32Array(Math.max(1024, n >> 2));
    this.fwdStart = new Uint32Array(n);
    this.fwdCount = new Uint16Array(n);
    this.fwdTerms = new Uint32Array(n * 12);
    this.fwdMasks = new Uint8Array(n * 12);
    this.fwdSize = 0;
    const keys: string[] = [];
    const keyDocs: number[] = [];
    const keyBounds: number[] = [];
    // First pass: the forward index and how many documents hold each word.
    this.building = true;
    for (let i = 0; i < n; i++) {
      const record = records[order[i]!]!;
      const fields = this.describe(record);
      const doc = this.append(record, fields);
      for (const name of fields.names) {
        const [key, bounds] = nameKey(name);
        if (!key) continue;
        keys.push(key);
        keyDocs.push(doc);
        keyBounds.push(bounds);
      }
    }
    this.building = false;
    this.wordCache = new Map();
    // Second pass: the postings, laid out from the forward index in document order.
    const terms = this.termCount;
    const start = new Uint32Array(terms + 1);
    for (let t = 0; t < terms; t++) start[t + 1] = start[t]! + this.termDocs[t]!;
    const flat = new Uint32Array(start[terms]!);
    const fill = start.slice(0, terms);
    for (let doc = 0; doc < this.records.length; doc++) {
      const end = this.fwdStart[doc]! + this.fwdCount[doc]!;
      for (let k = this.fwdStart[doc]!; k < end; k++) flat[fill[this.fwdTerms[k]!]!++] = doc * 16 + this.fwdMasks[k]!;
    }
    this.postStart = start;
    this.postFlat = flat;
    this.builtTerms = terms;
    this.termDocs = new Uint32Array(0);
    // Shrink the forward index to what it holds.
    this.fwdTerms = this.fwdTerms.slice(0, this.fwdSize);
    this.fwdMasks = this.fwdMasks.slice(0, this.fwdSize);
    const byKey = new Uint32Array(keys.length);
    for (let i = 0; i < byKey.length; i++) byKey[i] = i;
    byKey.sort((a, b) => (keys[a]! < keys[b]! ? -1 : keys[a]! > keys[b]! ? 1 : keyDocs[a]! - keyDocs[b]!));
    this.keys = Array.from(byKey, (i) => keys[i]!);
    this.keyDocs = Array.from(byKey, (i) => keyDocs[i]!);
    this.keyBounds = Array.from(byKey, (i) => keyBounds[i]!);
    this.resizeScratch();
  }

  /** Number of postings of vocabulary word `term`. */
  private postingCount(term: number): number {
    const built = term < this.builtTerms ? this.postStart[term + 1]! - this.postStart[term]! : 0;
    return built + (this.extra[term]?.length ?? 0);
  }

  /** Adds or replaces records by id. */
  upsert(records: T[]): void {
    for (const record of records) {
      const old = this.byId.get(record.id);
      if (old !== undefined && this.dead[old] === 0) {
        this.dead[old] = 1;
        this.deadCount++;
      }
      const fields = this.describe(record);
      const doc = this.append(record, fields);
      for (const name of fields.names) {
        const [key, bounds] = nameKey(name);
        if (!key) continue;
        const at = this.lowerBound(key);
        this.keys.splice(at, 0, key);
        this.keyDocs.splice(at, 0, doc);
        this.keyBounds.splice(at, 0, bounds);
      }
    }
    this.resizeScratch();
    // Tombstones cost memory and scan time; past a quarter of the index a rebuild is cheaper.
    if (this.deadCount > 1000 && this.deadCount > this.records.length / 4) this.build(this.all());
  }

  private append(record: T, fields: IndexedFields): number {
    const doc = this.records.length;
    this.records.push(record);
    this.byId.set(record.id, doc);
    this.dead = grow(this.dead, doc + 1, (n) => new Uint8Array(n));
    this.demoted = grow(this.demoted, doc + 1, (n) => new Uint8Array(n));
    this.nameLength = grow(this.nameLength, doc + 1, (n) => new Uint16Array(n));
    this.parts = grow(this.parts, doc + 1, (n) => new Uint8Array(n));
    this.dead[doc] = 0;
    this.demoted[doc] = fields.demoted ? 1 : 0;
    this.nameLength[doc] = Math.min(fields.nameLength, 65535);
    this.parts[doc] = Math.min(fields.parts, 255);
    // The document's distinct words with the fields each occurs in (few words: arrays beat a Map).
    const terms: number[] = [];
    const masks: number[] = [];
    for (const [field, text] of fields.fields) {
      let list = field === FIELD_NAME ? undefined : this.wordCache.get(text);
      if (list === undefined) {
        list = words(text).map((word) => this.termOf(word));
        if (field !== FIELD_NAME && this.wordCache.size < 200_000) this.wordCache.set(text, list);
      }
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
    this.fwdStart = grow(this.fwdStart, doc + 1, (n) => new Uint32Array(n));
    this.fwdCount = grow(this.fwdCount, doc + 1, (n) => new Uint16Array(n));
    const count = Math.min(terms.length, 65535);
    this.fwdTerms = grow(this.fwdTerms, this.fwdSize + count, (n) => new Uint32Array(n));
    this.fwdMasks = grow(this.fwdMasks, this.fwdSize + count, (n) => new Uint8Array(n));
    this.fwdStart[doc] = this.fwdSize;
    this.fwdCount[doc] = count;
    for (let i = 0; i < count; i++) {
      const term = terms[i]!;
      if (this.building) {
        this.termDocs[term]!++;
      } else {
        const list = this.extra[term];
        if (list) list.push(doc * 16 + masks[i]!);
        else this.extra[term] = [doc * 16 + masks[i]!];
      }
      this.fwdTerms[this.fwdSize] = term;
      this.fwdMasks[this.fwdSize] = masks[i]!;
      this.fwdSize++;
    }
    return doc;
  }

  /** The vocabulary id of a word, added to the vocabulary when new. */
  private termOf(word: string): number {
    let term = this.termIds.get(word);
    if (term === undefined) {
      term = this.termCount++;
      if (this.building) this.termDocs = grow(this.termDocs, term + 1, (n) => new Uint32Array(n));
      this.termIds.set(word, term);
      this.vocab.set(word, term);
    }
    return term;
  }

  private resizeScratch(): void {
    const n = this.records.length;
    if (this.seen.length >= n && this.stamps.length === 1) return;
    const size = Math.max(n, 1024) + 1024;
    this.stamps = [new Uint32Array(size)];
    this.quality = [new Uint8Array(size)];
    this.seen = new Uint32Array(size);
    this.prefixMark = new Uint32Array(size);
    this.exactMark = new Uint32Array(size);
    this.boundaryMark = new Uint32Array(size);
    this.gen = 0;
    this.visitGen = 0;
  }

  private lowerBound(key: string): number {
    let lo = 0;
    let hi = this.keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.keys[mid]! < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private nextGen(): number {
    this.gen++;
    if (this.gen >= 0xffffffff) {
      for (const s of this.stamps) s.fill(0);
      this.prefixMark.fill(0);
      this.exactMark.fill(0);
      this.boundaryMark.fill(0);
      this.gen = 1;
    }
    return this.gen;
  }

  /** Marks every document holding vocabulary word `term` with match kind `kind` (driver word only). */
  private mark(term: number, kind: number, gen: number, list: number[]): void {
    if (term < this.builtTerms) {
      const flat = this.postFlat;
      for (let i = this.postStart[term]!, end = this.postStart[term + 1]!; i < end; i++) this.markPosting(flat[i]!, kind, gen, list);
    }
    const extra = this.extra[term];
    if (extra) for (let i = 0; i < extra.length; i++) this.markPosting(extra[i]!, kind, gen, list);
  }

  private markPosting(packed: number, kind: number, gen: number, list: number[]): void {
    const doc = packed >>> 4;
    const q = kind * 4 + fieldRank(packed & 15);
    const stamp = this.stamps[0]!;
    const quality = this.quality[0]!;
    if (stamp[doc] !== gen) {
      stamp[doc] = gen;
      quality[doc] = q;
      list.push(doc);
    } else if (q > quality[doc]!) {
      quality[doc] = q;
    }
  }


  /** Vocabulary words a query word matches exactly, by prefix, and (once looked up) by typo. */
  private expand(word: QueryWord): Expansion {
    const exact: number[] = [];
    for (const text of new Set(word.exact)) {
      const term = this.termIds.get(text);
      if (term !== undefined) exact.push(term);
    }
    let size = 0;
    for (const term of exact) size += this.postingCount(term);
    const prefix: number[] = [];
    if (word.prefix) {
      for (const [text, term] of this.vocab.atPrefix(word.text)) {
        if (word.exact.includes(text)) continue;
        prefix.push(term);
        size += this.postingCount(term);
        // One or two letters expand to much of the vocabulary; names starting with them rank first anyway.
        if (prefix.length >= (word.text.length <= 2 ? MAX_SHORT_PREFIX_TERMS : MAX_PREFIX_TERMS)) break;
      }
    }
    return { word, exact, prefix, fuzzy: null, size };
  }

  /** Typo lookups of a query word: one or two edits, and adjacent transpositions as one edit. */
  private expandFuzzy(expansion: Expansion): void {
    const word = expansion.word;
    const fuzzy = new Map<number, number>();
    if (word.fuzzy > 0) {
      for (const [text, term, kind] of this.typoMatches(word)) {
        if (word.exact.includes(text)) continue;
        fuzzy.set(term, kind);
        word.fuzzyMatched.add(text);
      }
    }
    expansion.fuzzy = fuzzy;
  }

  /**
   * Vocabulary words within a query word's edit distance, with their match kind. A typo lookup walks
   * much of the radix tree (the most expensive step of a search), and prescribers type the same
   * names over and over, so results are kept per word until the vocabulary changes.
   */
  private typoMatches(word: QueryWord): Array<[text: string, term: number, kind: number]> {
    if (this.typoVocabulary !== this.termCount) {
      this.typoCache.clear();
      this.typoVocabulary = this.termCount;
    }
    const key = `${word.fuzzy}:${word.text}`;
    const known = this.typoCache.get(key);
    if (known !== undefined) {
      // Most recently used last, so the oldest entry goes first when the cache is full.
      this.typoCache.delete(key);
      this.typoCache.set(key, known);
      return known;
    }
    const found = new Map<string, [text: string, term: number, kind: number]>();
    for (const [text, [term, distance]] of this.vocab.fuzzyGet(word.text, word.fuzzy)) {
      if (distance === 0) continue;
      found.set(text, [text, term, distance === 1 ? KIND_FUZZY1 : KIND_FUZZY2]);
    }
    // An adjacent transposition ("paracetmaol") is one slip of the fingers: one edit, not two.
    for (let i = 0; i + 1 < word.text.length; i++) {
      const swapped = word.text.slice(0, i) + word.text[i + 1] + word.text[i] + word.text.slice(i + 2);
      const term = swapped === word.text ? undefined : this.termIds.get(swapped);
      if (term === undefined) continue;
      found.set(swapped, [swapped, term, KIND_FUZZY1]);
    }
    const list = [...found.values()];
    if (this.typoCache.size >= TYPO_CACHE_WORDS) this.typoCache.delete(this.typoCache.keys().next().value!);
    this.typoCache.set(key, list);
    return list;
  }

  /** Fills a slot's kind table: match kind by vocabulary word for everything the query word expands to. */
  private fillKinds(slot: number, expansion: Expansion): void {
    const current = this.kindTables[slot];
    if (!current || current.length < this.termCount) {
      this.kindTables[slot] = new Uint8Array(this.termCount + 4096);
    }
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
  private matchIn(doc: number, table: Uint8Array): number {
    let best = 0;
    const end = this.fwdStart[doc]! + this.fwdCount[doc]!;
    for (let k = this.fwdStart[doc]!; k < end; k++) {
      const kind = table[this.fwdTerms[k]!]!;
      if (kind === 0) continue;
      const q = kind * 4 + fieldRank(this.fwdMasks[k]!);
      if (q > best) best = q;
    }
    return best;
  }

  search(query: ParsedQuery, limit: number): Hit<T>[] {
    if (query.words.length === 0 && query.compact === '') return [];
    const gen = this.nextGen();
    const expansions = query.words.map((word) => this.expand(word));

    // Names equal to or starting with the query, ignoring spaces and hyphens (and units: "pan 40mg"
    // starts "Pan 40 Tablet").
    const prefixDocs: number[] = [];
    let activePrefix = 0;
    const prefixes = query.compactCore !== '' && query.compactCore !== query.compact ? [query.compact, query.compactCore] : [query.compact];
    for (const prefix of prefixes) {
      if (prefix === '') continue;
      // Very short queries match a good part of the catalogue; the best-laid-out names come first.
      const cap = prefix.length <= 2 ? PREFIX_SCAN_CAP : Infinity;
      for (let i = this.lowerBound(prefix); i < this.keys.length && this.keys[i]!.startsWith(prefix) && prefixDocs.length < cap; i++) {
        const doc = this.keyDocs[i]!;
        if (prefix === query.compact && this.keys[i]!.length === prefix.length) this.exactMark[doc] = gen;
        if (prefix.length === this.keys[i]!.length || (prefix.length < 32 && (this.keyBounds[i]! >>> prefix.length) & 1)) this.boundaryMark[doc] = gen;
        if (this.prefixMark[doc] !== gen) {
          this.prefixMark[doc] = gen;
          prefixDocs.push(doc);
          if (!this.dead[doc] && !this.demoted[doc]) activePrefix++;
        }
      }
    }

    // The driver: the rarest required word. Needless when names starting with the query fill the
    // page, since those outrank every other active match.
    let driver = -1;
    if (activePrefix < limit) {
      expansions.forEach((e, slot) => {
        if (e.word.required && (driver < 0 || e.size < expansions[driver]!.size)) driver = slot;
      });
    }
    const driverDocs: number[] = [];
    if (driver >= 0) {
      const e = expansions[driver]!;
      for (const term of e.exact) this.mark(term, KIND_EXACT, gen, driverDocs);
      for (const term of e.prefix) this.mark(term, KIND_PREFIX, gen, driverDocs);
    }

    expansions.forEach((e, slot) => { if (slot !== driver) this.fillKinds(slot, e); });
    let hits = this.rank(query, expansions, limit, gen, driver, driverDocs, prefixDocs);
    // Typo tolerance, only when exact and prefix matches leave room on the page: a typo match never
    // outranks an active exact or prefix match.
    if (hits.filter((h) => !this.demoted[h.doc]).length < limit && query.words.some((w) => w.fuzzy > 0)) {
      for (const e of expansions) this.expandFuzzy(e);
      if (driver >= 0) for (const [term, kind] of expansions[driver]!.fuzzy!) this.mark(term, kind, gen, driverDocs);
      expansions.forEach((e, slot) => { if (slot !== driver) this.fillKinds(slot, e); });
      hits = this.rank(query, expansions, limit, gen, driver, driverDocs, prefixDocs);
    }
    expansions.forEach((e, slot) => { if (slot !== driver) this.clearKinds(slot, e); });
    return hits.map((h) => ({ record: this.records[h.doc]!, exact: this.exactMark[h.doc] === gen, namePrefix: this.prefixMark[h.doc] === gen }));
  }

  private rank(query: ParsedQuery, expansions: Expansion[], limit: number, gen: number, driver: number, driverDocs: number[], prefixDocs: number[]): Array<{ doc: number; score: number }> {
    // Each ranking pass visits a document once; the second pass (after typo lookups) starts afresh.
    if (this.visitGen >= 0xfffffffe) {
      this.seen.fill(0);
      this.visitGen = 0;
    }
    const pass: RankPass = {
      visit: ++this.visitGen, gen, driver, limit, top: [],
      required: expansions.map((e) => e.word.required),
      tables: expansions.map((_, slot) => (slot === driver ? EMPTY_TABLE : this.kindTables[slot]!)),
    };
    for (let i = 0; i < prefixDocs.length; i++) this.consider(prefixDocs[i]!, pass);
    // In document order: a query's cost is memory latency (a few per-document arrays read per
    // candidate), and ascending reads let the caches and the prefetcher serve most of them.
    const ordered = Uint32Array.from(driverDocs).sort();
    for (let i = 0; i < ordered.length; i++) this.consider(ordered[i]!, pass);
    const top = pass.top;
    if (top.length < limit) top.sort((a, b) => b.score - a.score);
    return top;
  }

  /**
   * Scores one candidate into the pass's top list. A method rather than a closure made per pass, so
   * that the optimising compiler keeps one stable version of the hottest code of a search.
   */
  private consider(doc: number, pass: RankPass): void {
    if (this.seen[doc] === pass.visit || this.dead[doc]) return;
    this.seen[doc] = pass.visit;
    const gen = pass.gen;
    const inPrefix = this.prefixMark[doc] === gen;
    let all = true;
    let fuzzy = false;
    let whole = 0;
    let soft = 0;
    let kinds = 0;
    let fields = 0;
    const slots = pass.required.length;
    for (let slot = 0; slot < slots; slot++) {
      const q = slot === pass.driver ? (this.stamps[0]![doc] === gen ? this.quality[0]![doc]! : 0) : this.matchIn(doc, pass.tables[slot]!);
      if (pass.required[slot]) {
        if (q === 0) {
          all = false;
          if (!inPrefix) return;
          continue;
        }
        const kind = q >> 2;
        if (kind === KIND_EXACT) whole++;
        else if (kind <= KIND_FUZZY1) fuzzy = true;
      } else if (q > 0) {
        soft++;
      }
      kinds += q >> 2;
      fields += q & 3;
    }
    const exact = this.exactMark[doc] === gen;
    const tier = inPrefix ? 3 : fuzzy || !all ? 1 : 2;
    // A name that starts with the whole query ending on a word ("zerodolsp" in "Zerodol-SP Tablet")
    // beats one where the query ends inside a word ("Zerodol Spas").
    const boundary = inPrefix && this.boundaryMark[doc] === gen ? 5e12 : 0;
    // One number, most significant criterion first (each term stays below the next one's unit).
    const score = (exact ? 1e15 : 0) + (this.demoted[doc] ? 0 : 1e14) + tier * 1e13 + boundary + whole * 1e11 + soft * 1e10
      + kinds * 1e8 + (255 - this.parts[doc]!) * 1e5 + fields * 1e3 - Math.min(this.nameLength[doc]!, 999);
    const top = pass.top;
    const limit = pass.limit;
    if (top.length < limit) {
      top.push({ doc, score });
      if (top.length === limit) top.sort((a, b) => b.score - a.score);
    } else if (score > top[limit - 1]!.score) {
      let at = limit - 1;
      while (at > 0 && top[at - 1]!.score < score) {
        top[at] = top[at - 1]!;
        at--;
      }
      top[at] = { doc, score };
    }
  }

}

/**
 * Highlight ranges in `text` for a parsed query: whole words that matched exactly or by typo
 * tolerance, the typed part of prefix matches, and (when the name matched by starting with the query)
 * the leading part of the name that the query covers.
 */
export function highlightRanges(text: string, query: ParsedQuery, namePrefix: boolean): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  const list = spans(text);
  if (namePrefix && query.compact !== '') {
    const nameCompact = list.map((span) => span.word).join('');
    let remaining = (nameCompact.startsWith(query.compact) ? query.compact : query.compactCore).length;
    for (const span of list) {
      if (remaining <= 0) break;
      const take = Math.min(span.word.length, remaining);
      ranges.push([span.start, span.start + Math.min(take, span.end - span.start)]);
      remaining -= span.word.length;
    }
  }
  for (const span of list) {
    for (const word of query.words) {
      if (word.exact.includes(span.word) || word.fuzzyMatched.has(span.word)) {
        ranges.push([span.start, span.end]);
        break;
      }
      if (word.prefix && span.word.startsWith(word.text)) {
        ranges.push([span.start, Math.min(span.end, span.start + word.text.length)]);
        break;
      }
    }
  }
  return ranges;
}
