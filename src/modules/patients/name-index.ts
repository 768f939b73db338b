/**
 * The patient search: by name (tolerating spelling variants and initials, names.ts), by mobile
 * number prefix, and by partner id, over one key table that every database answers by range scans
 * of its primary key, with no extension.
 *
 * Keys of a patient (each a row of patient_search_keys, with the business first):
 * - `1<skeleton> <spelling>` per name word: one spelling is a point, every spelling of one skeleton a
 *   range, a word being typed a prefix range;
 * - `2<skeleton A>|<skeleton B> <spelling A> <spelling B>` per ordered pair of name tokens (A a
 *   word, B a word or an initial): two words of a query, in either order, or a word and an initial,
 *   find the few patients having both without reading everyone having one;
 * - `m<mobile, 10 digits>` (prefix search), `u<partner id>` (exact).
 *
 * A search reads its scans in order, most exact first, until it has enough candidates or has read
 * its budget of rows; it scores every candidate's name (names.ts) and ranks them. A page is a slice
 * of that ranking, so the budget bounds the work whatever the business's size.
 */
import type { Db } from '../../db/index.ts';
import * as repo from './name-repo.ts';
import { nameTokens, scoreName, tokensFromText, tokensToText, initialClasses, type NameToken } from './names.ts';

/** What the index needs of a patient. */
export interface IndexedPatient {
  id: string;
  business_id: string;
  first_name?: string | null;
  middle_name?: string | null;
  last_name?: string | null;
  mobile?: string | null;
  partner_patient_id?: string | null;
  archived?: boolean;
}

export interface SearchOptions {
  limit: number;
  /** Hits skipped before the page. */
  offset?: number;
  includeArchived?: boolean;
}

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
function mobileKey(mobile: string | null | undefined): string | null {
  if (!mobile) return null;
  let digits = mobile.replace(/\D/g, '');
  if (digits.length === 12 && digits.startsWith('91')) digits = digits.slice(2);
  else if (digits.length === 11 && digits.startsWith('0')) digits = digits.slice(1);
  return digits.length > 0 ? digits : null;
}

function indexedTokens(patient: IndexedPatient): NameToken[] {
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

interface Scan {
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
  const anchorTyping = anchor === last;
  const others = query.filter((t) => t !== anchor);
  const partner = [...others].sort((a, b) => Number(a.initial) - Number(b.initial) || b.skeleton.length - a.skeleton.length)[0];
  const scans: Scan[] = [];
  const add = (range: [string, string]) => scans.push({ from: range[0], to: range[1], match: 'name' });
  if (partner && !anchorTyping) {
    if (partner.initial) {
      for (const c of initialClasses(partner.text)) add(prefixRange(`2${anchor.skeleton}|${c}`));
    } else if (partner === last) {
      add(prefixRange(`2${anchor.skeleton}|${partner.skeleton} ${anchor.text} ${partner.text}`));
      add(prefixRange(`2${anchor.skeleton}|${partner.skeleton}`));
    } else {
      add(pointRange(`2${anchor.skeleton}|${partner.skeleton} ${anchor.text} ${partner.text}`));
      add(prefixRange(`2${anchor.skeleton}|${partner.skeleton} `));
    }
    // A typo in either word: pairs of each word with the other's first sound.
    if (!partner.initial) {
      add(prefixRange(`2${partner.skeleton}|${anchor.skeleton[0]}`));
      add(prefixRange(`2${anchor.skeleton}|${partner.skeleton[0]}`));
    }
    return scans;
  }
  // One word (and initials): its spelling, its sounds, then (while typed) longer words, and endings
  // that vary (Subramanian, Subramaniam; Krishnan, Krishna).
  const typing = anchor === last;
  const spelled = `1${anchor.skeleton} ${anchor.text}`;
  add(typing ? prefixRange(spelled) : pointRange(spelled));
  add(prefixRange(`1${anchor.skeleton} `));
  if (typing) add([`1${anchor.skeleton}!`, `1${anchor.skeleton}\u007f`]);
  if (anchor.skeleton.length >= 4) add(prefixRange(`1${anchor.skeleton.slice(0, -1)}`));
  return scans;
}

export interface PatientNameIndexDeps {
  db: Db;
}

export class PatientNameIndex {
  readonly #deps: PatientNameIndexDeps;

  constructor(deps: PatientNameIndexDeps) {
    this.#deps = deps;
  }

  /** Indexes (or re-indexes) a patient in the caller's transaction; `fresh`: it was never indexed (one read fewer). */
  async index(trx: Db, patient: IndexedPatient, { fresh = false } = {}): Promise<void> {
    const tokens = indexedTokens(patient);
    const mobile = mobileKey(patient.mobile);
    const partnerId = patient.partner_patient_id ?? null;
    const next = keysOf(tokens, mobile, partnerId);
    const row = {
      patient_id: patient.id,
      business_id: patient.business_id,
      tokens: tokensToText(tokens),
      mobile,
      partner_id: partnerId,
      archived: patient.archived ? 1 : 0,
    };
    if (fresh) return repo.insertNameAndKeys(trx, row, next);
    const previous = await repo.findName(trx, patient.id);
    const seq = await repo.upsertName(trx, row);
    let current: string[] = [];
    if (previous) {
      current = keysOf(tokensFromText(previous.tokens), previous.mobile, previous.partner_id);
      await repo.deleteKeys(
        trx,
        previous.business_id,
        seq,
        current.filter((k) => !next.includes(k)),
      );
    }
    await repo.insertKeys(
      trx,
      patient.business_id,
      next.filter((k) => !current.includes(k)).map((key) => ({ key, seq })),
    );
  }

  /** Patients not indexed yet, many at once (a migration's backfill, a bulk load). */
  async indexMany(patients: IndexedPatient[], db: Db = this.#deps.db): Promise<void> {
    const prepared = patients.map((patient) => {
      const tokens = indexedTokens(patient);
      const mobile = mobileKey(patient.mobile);
      return { patient, tokens, mobile, partnerId: patient.partner_patient_id ?? null };
    });
    const seqs = await repo.insertNames(
      db,
      prepared.map((p) => ({
        patient_id: p.patient.id,
        business_id: p.patient.business_id,
        tokens: tokensToText(p.tokens),
        mobile: p.mobile,
        partner_id: p.partnerId,
        archived: p.patient.archived ? 1 : 0,
      })),
    );
    const byBusiness = new Map<string, Array<{ key: string; seq: number }>>();
    for (const p of prepared) {
      const seq = seqs.get(p.patient.id)!;
      let keys = byBusiness.get(p.patient.business_id);
      if (!keys) byBusiness.set(p.patient.business_id, (keys = []));
      for (const key of keysOf(p.tokens, p.mobile, p.partnerId)) keys.push({ key, seq });
    }
    for (const [businessId, keys] of byBusiness) await repo.insertKeys(db, businessId, keys);
  }

  /** Forgets a patient (deleted, or merged away and no longer to be found). */
  async remove(trx: Db, patientId: string): Promise<void> {
    const previous = await repo.findName(trx, patientId);
    if (!previous) return;
    await repo.deleteKeys(trx, previous.business_id, previous.seq, keysOf(tokensFromText(previous.tokens), previous.mobile, previous.partner_id));
    await repo.deleteName(trx, previous.seq);
  }

  /**
   * The business's patients answering `text`: its partner id exactly, a mobile number by prefix
   * (three digits or more), or a name, best first.
   */
  async search(businessId: string, text: string, options: SearchOptions): Promise<SearchPage> {
    const db = this.#deps.db;
    const offset = options.offset ?? 0;
    const wanted = offset + options.limit + 1;
    const includeArchived = options.includeArchived ?? false;
    const query = text.trim();
    if (query.length === 0) return { hits: [], more: false };
    const scans: Array<Scan & { score: (row: repo.CandidateRow) => number }> = [
      { ...toScan(pointRange(`u${query}`), 'partner_id'), score: () => 1000 },
    ];
    const digits = query.replace(/[\s()+-]/g, '');
    if (/^\d{3,}$/.test(digits)) {
      const mobile = mobileKey(query.startsWith('+') || digits.length > 10 ? query : digits)!;
      scans.push({ ...toScan(prefixRange(`m${mobile}`), 'mobile'), score: (row) => (row.key === `m${mobile}` ? 500 : 400) });
    } else if (!/\d/.test(query)) {
      const tokens = nameTokens(query);
      const words = new Map<string, NameToken>();
      const score = (row: repo.CandidateRow) => scoreName(tokens, tokensFromText(row.tokens, words));
      for (const scan of nameScans(tokens)) scans.push({ ...scan, score });
    }
    // Two round trips at most: the most exact scans, then (when the page is not full) the others.
    // Each range reads a bounded number of rows, so the work stays bounded whatever the business's size.
    const chunk = Math.min(SCAN_BUDGET, Math.max(2 * wanted, 40));
    const found = new Map<string, SearchHit>();
    const groups = [scans.slice(0, 2), scans.slice(2)];
    for (const [i, group] of groups.entries()) {
      if (group.length === 0 || found.size >= wanted) continue;
      const limit = i === 0 ? chunk : Math.max(chunk, Math.floor(SCAN_BUDGET / group.length));
      const rows = await repo.scanRanges(
        db,
        businessId,
        group.map((scan) => ({ from: scan.from, to: scan.to, limit })),
        includeArchived,
      );
      for (const row of rows) {
        if (found.has(row.patient_id)) continue;
        const scan = group[row.range]!;
        const value = scan.score(row);
        if (value > 0) found.set(row.patient_id, { patientId: row.patient_id, score: value, match: scan.match });
      }
    }
    const ranked = [...found.values()].sort((a, b) => b.score - a.score || (a.patientId < b.patientId ? -1 : 1));
    return { hits: ranked.slice(offset, offset + options.limit), more: ranked.length > offset + options.limit };
  }
}

function toScan(range: [string, string], match: MatchKind): Scan {
  return { from: range[0], to: range[1], match };
}
