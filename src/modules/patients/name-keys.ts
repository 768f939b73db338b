/**
 * The keys of the patient name index (name-index.ts) and the key ranges a search reads, most exact first:
 * what a patient is stored under and what a query looks up, with no database, so a test can hold the keys
 * of a handful of patients in memory and scan them as the database does.
 */
import type { CandidateRow, KeyRange } from './name-repo.ts';
import { initialClasses, nameTokens, scoreName, tokensFromText, typedNameTokens, type NameToken } from './names.ts';

export type MatchKind = 'partner_id' | 'mobile' | 'name';

export interface SearchHit {
  patientId: string;
  score: number;
  match: MatchKind;
}

export interface SearchPage {
  hits: SearchHit[];
  /** More hits follow this page. */
  more: boolean;
}

/** Rows read at most per search; the ranking covers them. */
export const SCAN_BUDGET = 200;
/** Name words per patient that get keys (pairs grow with their square). */
const MAX_TOKENS = 5;
const MAX_KEY_TOKEN = 40;

/** A mobile number's key digits: the ten of an Indian number written any way (+91, 0, spaces), or null. */
export function mobileKey(mobile: string | null | undefined): string | null {
  if (!mobile) return null;
  let digits = mobile.replace(/\D/g, '');
  if (digits.length === 12 && digits.startsWith('91')) digits = digits.slice(2);
  else if (digits.length === 11 && digits.startsWith('0')) digits = digits.slice(1);
  return digits.length > 0 ? digits : null;
}

export function indexedTokens(patient: { first_name?: string | null; middle_name?: string | null; last_name?: string | null }): NameToken[] {
  return nameTokens(patient.first_name, patient.middle_name, patient.last_name)
    .filter((t) => t.text.length <= MAX_KEY_TOKEN && t.skeleton.length > 0)
    .slice(0, MAX_TOKENS);
}

/** Every key of a patient with these tokens, mobile and partner id. */
export function keysOf(tokens: NameToken[], mobile: string | null, partnerId: string | null): string[] {
  const keys = new Set<string>();
  for (const a of tokens) {
    if (a.initial) continue;
    keys.add(`1${a.skeleton} ${a.text}`);
    for (const b of tokens) if (b !== a) keys.add(`2${a.skeleton}|${b.skeleton} ${a.text} ${b.text}`);
  }
  if (mobile) keys.add(`m${mobile}`);
  if (partnerId) keys.add(`u${partnerId}`);
  return [...keys];
}

/** [from, to) of every key starting with `prefix` (keys are ASCII; the PostgreSQL column collates "C"). */
function prefixRange(prefix: string): [string, string] {
  return [prefix, `${prefix}\u007f`];
}

function pointRange(key: string): [string, string] {
  return [key, `${key}\u0001`];
}

export interface Scan {
  from: string;
  to: string;
  match: MatchKind;
}

/** The scans that answer a name query, most exact first. */
function nameScans(query: NameToken[]): Scan[] {
  const words = query.filter((t) => !t.initial);
  if (words.length === 0) return [];
  const last = query[query.length - 1]!;
  const full = words.filter((t) => t !== last);
  // The anchor is the most selective whole word; a word still being typed only when there is no other.
  const anchor = [...(full.length > 0 ? full : words)].sort((a, b) => b.skeleton.length - a.skeleton.length)[0]!;
  const others = query.filter((t) => t !== anchor);
  const partner = [...others].sort((a, b) => Number(a.initial) - Number(b.initial) || b.skeleton.length - a.skeleton.length)[0];
  const scans: Scan[] = [];
  const add = (range: [string, string]) => scans.push({ from: range[0], to: range[1], match: 'name' });
  if (partner && !partner.initial) {
    // Two words (the anchor whole, the partner perhaps still being typed).
    if (partner === last) {
      add(prefixRange(`2${anchor.skeleton}|${partner.skeleton} ${anchor.text} ${partner.text}`));
      add(prefixRange(`2${anchor.skeleton}|${partner.skeleton}`));
    } else {
      add(pointRange(`2${anchor.skeleton}|${partner.skeleton} ${anchor.text} ${partner.text}`));
      add(prefixRange(`2${anchor.skeleton}|${partner.skeleton} `));
    }
    // A typo in either word: pairs of each word with the other's first sound.
    add(prefixRange(`2${partner.skeleton}|${anchor.skeleton[0]}`));
    add(prefixRange(`2${anchor.skeleton}|${partner.skeleton[0]}`));
    return scans;
  }
  if (partner) {
    // A word and an initial: their pairs, with the word taken whole even when it ends the query (R K
    // Sharma), as the patients sharing a surname would fill the budget of the word alone.
    for (const c of initialClasses(partner.text)) add(prefixRange(`2${anchor.skeleton}|${c}`));
    if (anchor !== last) return scans;
  }
  // One word (and initials), the last, so perhaps still being typed: its spelling, its sounds, longer
  // words, and endings that vary (Subramanian, Subramaniam; Krishnan, Krishna).
  add(prefixRange(`1${anchor.skeleton} ${anchor.text}`));
  add(prefixRange(`1${anchor.skeleton} `));
  add([`1${anchor.skeleton}!`, `1${anchor.skeleton}\u007f`]);
  if (anchor.skeleton.length >= 4) add(prefixRange(`1${anchor.skeleton.slice(0, -1)}`));
  return scans;
}

/** A scan of a search with how it scores each row it reads (0: not an answer). */
export interface ScoredScan extends Scan {
  score: (row: CandidateRow) => number;
}

/** The scans that answer a search text (trimmed, not empty), most exact first: partner id, mobile number, name. */
export function searchScans(query: string): ScoredScan[] {
  const scans: ScoredScan[] = [{ ...toScan(pointRange(`u${query}`), 'partner_id'), score: () => 1000 }];
  const digits = query.replace(/[\s()+-]/g, '');
  if (/^\d{3,}$/.test(digits)) {
    const mobile = mobileKey(query.startsWith('+') || digits.length > 10 ? query : digits)!;
    scans.push({ ...toScan(prefixRange(`m${mobile}`), 'mobile'), score: (row) => (row.key === `m${mobile}` ? 500 : 400) });
  } else if (!/\d/.test(query)) {
    // A last word of consonants is initials (Sharma RK) or a word being typed (Sunita Sh): both readings
    // are scanned and a name scores by the better.
    const readings = [nameTokens(query)];
    const typed = typedNameTokens(query);
    if (typed.length !== readings[0]!.length) readings.push(typed);
    const words = new Map<string, NameToken>();
    const score = (row: CandidateRow) => {
      const name = tokensFromText(row.tokens, words);
      return Math.max(...readings.map((tokens) => scoreName(tokens, name)));
    };
    for (const scan of readings.flatMap(nameScans)) scans.push({ ...scan, score });
  }
  return scans;
}

/**
 * Scores the rows `scans` read (each row naming its scan by its index, in the order read) into `found`: a
 * patient is scored by the first row that reaches it; a score of 0 is no answer.
 */
export function addHits(found: Map<string, SearchHit>, scans: ScoredScan[], rows: Array<CandidateRow & { range: number }>): void {
  for (const row of rows) {
    if (found.has(row.patient_id)) continue;
    const scan = scans[row.range]!;
    const value = scan.score(row);
    if (value > 0) found.set(row.patient_id, { patientId: row.patient_id, score: value, match: scan.match });
  }
}

/** The page of `limit` hits after `offset`, best first (equal scores by patient id). */
export function pageOf(found: Map<string, SearchHit>, offset: number, limit: number): SearchPage {
  const ranked = [...found.values()].sort((a, b) => b.score - a.score || (a.patientId < b.patientId ? -1 : 1));
  return { hits: ranked.slice(offset, offset + limit), more: ranked.length > offset + limit };
}

/**
 * The page of patients answering `text` (see PatientNameIndex.search), reading key ranges with `read`: the
 * database's rows of each range from its start, in key order, at most the range's limit.
 */
export async function searchKeys(
  text: string,
  options: { limit: number; offset?: number },
  read: (ranges: KeyRange[]) => Promise<Array<CandidateRow & { range: number }>>,
): Promise<SearchPage> {
  const offset = options.offset ?? 0;
  const wanted = offset + options.limit + 1;
  const query = text.trim();
  if (query.length === 0) return { hits: [], more: false };
  const scans = searchScans(query);
  // Two round trips at most: the most exact scans, then (when the page is not full) the others.
  // Each range reads a bounded number of rows, so the work stays bounded whatever the business's size.
  const chunk = Math.min(SCAN_BUDGET, Math.max(2 * wanted, 40));
  const found = new Map<string, SearchHit>();
  const groups = [scans.slice(0, 2), scans.slice(2)];
  for (const [i, group] of groups.entries()) {
    if (group.length === 0 || found.size >= wanted) continue;
    const limit = i === 0 ? chunk : Math.max(chunk, Math.floor(SCAN_BUDGET / group.length));
    const rows = await read(group.map((scan) => ({ from: scan.from, to: scan.to, limit })));
    addHits(found, group, rows);
  }
  return pageOf(found, offset, options.limit);
}

function toScan(range: [string, string], match: MatchKind): Scan {
  return { from: range[0], to: range[1], match };
}
