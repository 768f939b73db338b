/**
 * The patient name index's keys and scans without a database: the keys of the query set's patients held
 * in memory, sorted, and read by range as the database reads them (name-repo.ts scanRanges), two round
 * trips as the index makes them. What a front desk sees: who a query finds, in what order, and who never.
 * The same query set runs against the database in name-search.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { indexedTokens, keysOf, mobileKey, searchKeys, type SearchPage } from '../../../src/modules/patients/name-keys.ts';
import type { CandidateRow, KeyRange } from '../../../src/modules/patients/name-repo.ts';
import { tokensToText } from '../../../src/modules/patients/names.ts';
import { NON_MATCHES, PATIENTS, problemsWith, QUERIES, type NameQuery } from './name-queries.ts';

interface Patient {
  id: string;
  first_name: string;
  middle_name?: string | null;
  last_name?: string | null;
  mobile?: string | null;
  partner_patient_id?: string | null;
}

/**
 * Keys in the database's order, each with the patient's stored name, read as name-repo.ts scanRanges reads
 * them: each range from its start, at most its limit of rows.
 */
function memoryIndex(patients: Patient[]): (text: string, limit?: number, offset?: number) => Promise<SearchPage> {
  const rows: CandidateRow[] = [];
  patients.forEach((patient, seq) => {
    const tokens = indexedTokens(patient);
    for (const key of keysOf(tokens, mobileKey(patient.mobile), patient.partner_patient_id ?? null))
      rows.push({ seq, patient_id: patient.id, tokens: tokensToText(tokens), key });
  });
  rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.seq - b.seq));
  const read = async (ranges: KeyRange[]) =>
    ranges.flatMap((range, i) =>
      rows
        .filter((row) => row.key >= range.from && row.key < range.to)
        .slice(0, range.limit)
        .map((row) => ({ ...row, range: i })),
    );
  return (text, limit = 20, offset = 0) => searchKeys(text, { limit, offset }, read);
}

const queryPatients: Patient[] = PATIENTS.map((p) => ({
  id: p.ref,
  first_name: p.first,
  middle_name: p.middle,
  last_name: p.last,
  mobile: p.mobile,
}));
const search = memoryIndex(queryPatients);
const refs = async (query: string, limit = 20) => (await search(query, limit)).hits.map((hit) => hit.patientId);

const problemsOf = async (q: NameQuery) => problemsWith(q, await refs(q.query));

describe('patient name keys', () => {
  it('finds every patient of the query set among the first hits of the queries naming them', async () => {
    assert.deepEqual((await Promise.all(QUERIES.map(problemsOf))).flat(), []);
  });

  it('finds nobody for the queries that must not match', async () => {
    assert.deepEqual((await Promise.all(NON_MATCHES.map(problemsOf))).flat(), []);
  });

  it('puts the patient named exactly as typed first', async () => {
    const cases: Array<[query: string, first: string]> = [
      ['Rajesh Sharma', 'rajesh-sharma'],
      ['Ramesh Sharma', 'ramesh-sharma'],
      ['Sharma Sunita', 'sunita-sharma'],
      ['Subramanian Iyer', 'subramanian-iyer'],
      ['Krishna', 'krishna-yadav'],
      ['Laxmi', 'lakshmi-devi'],
    ];
    for (const [query, first] of cases) assert.equal((await refs(query))[0], first, query);
  });

  it('finds a mobile number written any way, and the family sharing it, by its beginning', async () => {
    const cases: Array<[query: string, found: string[]]> = [
      ['+91 98110 00001', ['rajesh-sharma', 'ramesh-sharma']],
      ['+919811000001', ['rajesh-sharma', 'ramesh-sharma']],
      ['09811000001', ['rajesh-sharma', 'ramesh-sharma']],
      ['9811000001', ['rajesh-sharma', 'ramesh-sharma']],
      ['(981) 100-0001', ['rajesh-sharma', 'ramesh-sharma']],
      ['981100000', ['rajesh-sharma', 'ramesh-sharma', 'sunita-sharma']],
      ['98480', ['srinivasa-rao']],
      ['98', []],
      ['9811 Sharma', []],
    ];
    for (const [query, found] of cases) assert.deepEqual((await refs(query)).sort(), found, query);
  });

  it('finds a patient stored with a mobile number written any way', async () => {
    const written = ['+91 98450 12345', '+919845012345', '919845012345', '09845012345', '98450-12345'];
    const find = memoryIndex(written.map((mobile, i) => ({ id: `p${i}`, first_name: 'Asha', mobile })));
    assert.deepEqual(
      (await find('9845012345')).hits.map((hit) => hit.patientId),
      ['p0', 'p1', 'p2', 'p3', 'p4'],
    );
  });

  it('ranks a whole mobile number before a number it begins, and a partner id before both', async () => {
    const find = memoryIndex([
      { id: 'longer', first_name: 'Asha', mobile: '98450123456' },
      { id: 'whole', first_name: 'Usha', mobile: '9845012345' },
      { id: 'partner', first_name: 'Isha', partner_patient_id: '9845012345' },
    ]);
    assert.deepEqual(
      (await find('9845012345')).hits.map((hit) => [hit.patientId, hit.match]),
      [
        ['partner', 'partner_id'],
        ['whole', 'mobile'],
        ['longer', 'mobile'],
      ],
    );
  });

  it('finds a partner id exactly, never by its beginning or as a name', async () => {
    const find = memoryIndex([
      { id: 'gk', first_name: 'Gurpreet', last_name: 'Kaur', partner_patient_id: 'US0001' },
      { id: 'named', first_name: 'Usha', last_name: 'Kaur', partner_patient_id: 'kaur' },
    ]);
    const cases: Array<[query: string, found: string[]]> = [
      ['US0001', ['gk']],
      ['  US0001 ', ['gk']],
      ['US000', []],
      ['US00011', []],
      ['', []],
      ['   ', []],
    ];
    for (const [query, found] of cases)
      assert.deepEqual(
        (await find(query)).hits.map((hit) => hit.patientId),
        found,
        JSON.stringify(query),
      );
    assert.deepEqual(
      (await find('kaur')).hits.map((hit) => [hit.patientId, hit.match]),
      [
        ['named', 'partner_id'],
        ['gk', 'name'],
      ],
    );
  });

  it('keys the first five name words only, and no word longer than forty letters', async () => {
    const find = memoryIndex([
      { id: 'many', first_name: 'Anand Bala Chandra Dev Eshwar', last_name: 'Farooq' },
      { id: 'long', first_name: `Gopal${'a'.repeat(40)}`, last_name: 'Iyer' },
    ]);
    const cases: Array<[query: string, found: string[]]> = [
      ['Eshwar', ['many']],
      ['Farooq', []],
      ['Iyer', ['long']],
      [`Gopal${'a'.repeat(40)}`, []],
    ];
    for (const [query, found] of cases)
      assert.deepEqual(
        (await find(query)).hits.map((hit) => hit.patientId),
        found,
        query,
      );
  });

  it('finds a patient among many of the same surname, each query reading only its share of the keys', async () => {
    const letters = 'bdgklmnpt';
    const crowd: Patient[] = [];
    for (const a of letters)
      for (const b of letters) for (const v of 'ai') crowd.push({ id: `dev-${a}${v}${b}`, first_name: `Dev${a}${v}${b}`, last_name: 'Sharma' });
    const find = memoryIndex([...crowd, ...queryPatients]);
    const cases: Array<[query: string, first: string[]]> = [
      ['Rajesh Sharma', ['rajesh-sharma']],
      ['Sharma Rajesh', ['rajesh-sharma']],
      ['Rajesh Shar', ['rajesh-sharma']],
      ['Sharma Raj', ['rajesh-sharma']],
      ['Rajesh S', ['rajesh-sharma']],
      ['Rajesh K Sharma', ['rajesh-sharma']],
      ['Rjesh Sharma', ['rajesh-sharma']],
      ['Rajesh Shrma', ['rajesh-sharma']],
      ['Sharma Sunita', ['sunita-sharma']],
      ['Sharma R', ['rajesh-sharma', 'ramesh-sharma']],
    ];
    for (const [query, first] of cases) {
      const found = (await find(query)).hits.map((hit) => hit.patientId);
      assert.deepEqual(found.slice(0, first.length).sort(), first, `${query}: ${found.slice(0, 5).join(', ')}`);
    }
  });

  it('lists patients scoring alike by id, whatever order they were registered in', async () => {
    const find = memoryIndex([
      { id: 'c', first_name: 'Anita', last_name: 'Kumari' },
      { id: 'a', first_name: 'Anita', last_name: 'Kumari' },
      { id: 'b', first_name: 'Anitha', last_name: 'Kumari' },
      { id: 'd', first_name: 'Anita', last_name: 'Kumar' },
    ]);
    const found = (await find('Anita Kumari')).hits.map((hit) => hit.patientId);
    assert.deepEqual(found.slice(0, 2), ['a', 'c']);
    assert.deepEqual(new Set(found), new Set(['a', 'b', 'c', 'd']));
  });

  it('answers pages that are slices of one ranking, saying whether more follow', async () => {
    const all = (await search('sharma', 50)).hits.map((hit) => hit.patientId);
    assert.ok(all.length >= 4);
    const pages: Array<[limit: number, offset: number, more: boolean]> = [
      [2, 0, true],
      [2, 2, all.length > 4],
      [all.length, 0, false],
      [all.length - 1, 1, false],
      [1, all.length - 1, false],
      [1, all.length - 2, true],
    ];
    for (const [limit, offset, more] of pages) {
      const page = await search('sharma', limit, offset);
      assert.deepEqual(
        page.hits.map((hit) => hit.patientId),
        all.slice(offset, offset + limit),
        `${limit} after ${offset}`,
      );
      assert.equal(page.more, more, `more after ${limit} after ${offset}`);
    }
  });
});
