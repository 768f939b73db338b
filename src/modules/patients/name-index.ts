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
import { indexedTokens, keysOf, mobileKey, searchKeys, type SearchPage } from './name-keys.ts';
import { tokensFromText, tokensToText } from './names.ts';

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

export type { MatchKind, SearchHit, SearchPage } from './name-keys.ts';

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
    const includeArchived = options.includeArchived ?? false;
    return searchKeys(text, options, (ranges) => repo.scanRanges(this.#deps.db, businessId, ranges, includeArchived));
  }
}
