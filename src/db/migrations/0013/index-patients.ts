/**
 * The patient search rows and keys of migration 0013, frozen as it shipped (then
 * src/modules/patients/name-index.ts and name-repo.ts): only what building the index from existing
 * patients needs.
 */
import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../../dialect.ts';
import { nameTokens, tokensToText, type NameToken } from './names.ts';

/** Name words per patient that get keys (pairs grow with their square). */
const MAX_TOKENS = 5;
const MAX_KEY_TOKEN = 40;

export interface IndexedPatient {
  id: string;
  business_id: string;
  first_name: string | null;
  middle_name: string | null;
  last_name: string | null;
  mobile: string | null;
  partner_patient_id: string | null;
  archived: boolean;
}

interface IndexedNameRow {
  patient_id: string;
  business_id: string;
  tokens: string;
  mobile: string | null;
  partner_id: string | null;
  archived: number;
}

/** The ten digits of an Indian mobile number written any way (+91, 0, spaces), or null. */
function normaliseMobile(mobile: string | null | undefined): string | null {
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
function keysOf(tokens: NameToken[], mobile: string | null, partnerId: string | null): string[] {
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

/** Indexes patients none of which is indexed yet. */
export async function indexMany(db: Kysely<any>, patients: IndexedPatient[]): Promise<void> {
  const prepared = patients.map((patient) => {
    const tokens = indexedTokens(patient);
    const mobile = normaliseMobile(patient.mobile);
    return { patient, tokens, mobile, partnerId: patient.partner_patient_id ?? null };
  });
  const seqs = await insertNames(
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
  for (const [businessId, keys] of byBusiness) await insertKeys(db, businessId, keys);
}

/** Name rows of many patients at once; their seqs by patient id. */
async function insertNames(db: Kysely<any>, rows: IndexedNameRow[]): Promise<Map<string, number>> {
  const seqs = new Map<string, number>();
  if (rows.length === 0) return seqs;
  if (isPostgres(db)) {
    const inserted = await sql<{ seq: string; patient_id: string }>`
      insert into patient_search_names (patient_id, business_id, tokens, mobile, partner_id, archived)
      select * from unnest(${rows.map((r) => r.patient_id)}::text[], ${rows.map((r) => r.business_id)}::text[],
        ${rows.map((r) => r.tokens)}::text[], ${rows.map((r) => r.mobile)}::text[], ${rows.map((r) => r.partner_id)}::text[],
        ${rows.map((r) => r.archived)}::int[])
      returning seq, patient_id`.execute(db);
    for (const row of inserted.rows) seqs.set(row.patient_id, Number(row.seq));
    return seqs;
  }
  // SQLite binds at most 32766 values per statement.
  for (let from = 0; from < rows.length; from += 4000) {
    const inserted = await db
      .insertInto('patient_search_names')
      .values(rows.slice(from, from + 4000))
      .returning(['seq', 'patient_id'])
      .execute();
    for (const row of inserted) seqs.set(row.patient_id, Number(row.seq));
  }
  return seqs;
}

async function insertKeys(db: Kysely<any>, businessId: string, keys: Array<{ key: string; seq: number }>): Promise<void> {
  if (keys.length === 0) return;
  if (isPostgres(db)) {
    await sql`insert into patient_search_keys (business_id, key, seq)
      select ${businessId}, k, s from unnest(${keys.map((k) => k.key)}::text[], ${keys.map((k) => k.seq)}::bigint[]) as t(k, s)
      on conflict do nothing`.execute(db);
    return;
  }
  for (let from = 0; from < keys.length; from += 10000) {
    await db
      .insertInto('patient_search_keys')
      .values(keys.slice(from, from + 10000).map((k) => ({ business_id: businessId, key: k.key, seq: k.seq })))
      .onConflict((oc) => oc.doNothing())
      .execute();
  }
}
