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
 * them: each range from its start, at most its limit of rows. `reads` gets the number of rows of each read.
 */
function memoryIndex(patients: Patient[], reads: number[] = []): (text: string, limit?: number, offset?: number) => Promise<SearchPage> {
  const rows: CandidateRow[] = [];
  patients.forEach((patient, seq) => {
    const tokens = indexedTokens(patient);
    for (const key of keysOf(tokens, mobileKey(patient.mobile), patient.partner_patient_id ?? null))
      rows.push({ seq, patient_id: patient.id, tokens: tokensToText(tokens), key });
  });
  rows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.seq - b.seq));
  const read = async (ranges: KeyRange[]) => {
    // The key column is text: a range whose bounds are not text is no range the database could read.
    for (const range of ranges)
      if (typeof range.from !== 'string' || typeof range.to !== 'string' || !(range.limit > 0))
        throw new TypeError(`no key range: ${JSON.stringify(range)}`);
    // As scanRanges: no ranges, no query.
    if (ranges.length === 0) return [];
    const found = ranges.flatMap((range, i) =>
      rows
        .filter((row) => row.key >= range.from && row.key < range.to)
        .slice(0, range.limit)
        .map((row) => ({ ...row, range: i })),
    );
    reads.push(found.length);
    return found;
  };
  return (text, limit = 20, offset = 0) => searchKeys(text, { limit, offset }, read);
}

/** Patients whose `field` is `stem` and two letters of `letters` around a or i (Devbab, Devbib, …): 2 × letters² of them. */
function crowd(
  stem: string,
  rest: Omit<Patient, 'id' | 'first_name'> & { first_name?: string },
  field: 'first_name' | 'last_name' = 'first_name',
  letters = 'bdgklmnpt',
): Patient[] {
  const patients: Patient[] = [];
  for (const a of letters)
    for (const b of letters)
      for (const v of 'ai') patients.push({ first_name: '', ...rest, [field]: `${stem}${a}${v}${b}`, id: `${stem.toLowerCase()}-${a}${v}${b}` });
  return patients;
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

/** The search's first hit for `query` is `first` (the first five named when it is not). */
async function assertFirst(find: ReturnType<typeof memoryIndex>, query: string, first: string): Promise<void> {
  const found = (await find(query)).hits.map((hit) => hit.patientId);
  assert.equal(found[0], first, `${query}: ${found.slice(0, 5).join(', ')}`);
}
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
      ['Sharma 98110', []],
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
    for (const [query, found] of cases) {
      const page = await find(query);
      assert.deepEqual(
        page.hits.map((hit) => hit.patientId),
        found,
        JSON.stringify(query),
      );
      assert.equal(page.more, false, JSON.stringify(query));
    }
    assert.deepEqual(
      (await find('kaur')).hits.map((hit) => [hit.patientId, hit.match]),
      [
        ['named', 'partner_id'],
        ['gk', 'name'],
      ],
    );
  });

  it('keys the first five name words only, and words of forty letters at most', async () => {
    const find = memoryIndex([
      { id: 'many', first_name: 'Anand Bala Chandra Dev Eshwar', last_name: 'Farooq' },
      { id: 'long', first_name: `Gopal${'a'.repeat(40)}`, last_name: 'Iyer' },
      { id: 'forty', first_name: `Mohan${'a'.repeat(35)}`, last_name: 'Nair' },
    ]);
    const cases: Array<[query: string, found: string[]]> = [
      ['Eshwar', ['many']],
      ['Farooq', []],
      ['Iyer', ['long']],
      [`Gopal${'a'.repeat(40)}`, []],
      ['Nair', ['forty']],
      [`Mohan${'a'.repeat(35)}`, ['forty']],
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
    const registeredLater: Patient[] = [
      { id: 'ram-sharma', first_name: 'Ram', last_name: 'Sharma' },
      { id: 'suresh-sharma', first_name: 'Suresh', last_name: 'Sharma' },
    ];
    const find = memoryIndex([...crowd, ...queryPatients, ...registeredLater]);
    const cases: Array<[query: string, first: string[]]> = [
      ['Ram Sharma', ['ram-sharma']],
      ['Sharma Sur', ['suresh-sharma']],
      ['R K Sharma', ['rajesh-sharma']],
      ['R Sharma', ['rajesh-sharma', 'ram-sharma', 'ramesh-sharma']],
      ['Sunita Sh', ['sunita-sharma']],
      ['Rajesh Sharma', ['rajesh-sharma']],
      ['Sharma Rajesh', ['rajesh-sharma']],
      ['Rajesh Shar', ['rajesh-sharma']],
      ['Sharma Raj', ['rajesh-sharma']],
      ['Rajesh S', ['rajesh-sharma']],
      ['Rajesh K Sharma', ['rajesh-sharma']],
      ['Rjesh Sharma', ['rajesh-sharma']],
      ['Rajesh Shrma', ['rajesh-sharma']],
      ['Sharma Sunita', ['sunita-sharma']],
      ['Sharma R', ['rajesh-sharma', 'ram-sharma', 'ramesh-sharma']],
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

  it('finds a mobile number by its own beginning, never by the digits after its first ones', async () => {
    const find = memoryIndex([
      { id: 'starts-91', first_name: 'Asha', mobile: '9123456789' },
      { id: 'landline', first_name: 'Usha', mobile: '0221234567' },
      { id: 'abroad', first_name: 'Isha', mobile: '+44 1234 567890' },
    ]);
    const cases: Array<[query: string, found: string[]]> = [
      ['9123', ['starts-91']],
      ['2345678', []],
      ['0221', ['landline']],
      ['2212', []],
      ['441234', ['abroad']],
      ['1234567890', []],
    ];
    for (const [query, found] of cases)
      assert.deepEqual(
        (await find(query)).hits.map((hit) => hit.patientId),
        found,
        query,
      );
  });

  it('stores a mobile number and a partner id under one key each, and no key for either when there is none', () => {
    const tokens = indexedTokens({ first_name: 'Asha', last_name: 'Rao' });
    const bare = keysOf(tokens, null, null);
    const reachable = keysOf(tokens, mobileKey('98450 12345'), 'US0001');
    assert.equal(reachable.length, bare.length + 2);
    assert.deepEqual(
      bare.filter((key) => !reachable.includes(key)),
      [],
    );
  });

  it('finds nobody by initials alone, and a one-word search finds no patient by an initial', async () => {
    const find = memoryIndex([...queryPatients, { id: 'kiran-rao', first_name: 'Kiran', last_name: 'Rao' }]);
    const cases: Array<[query: string, found: string[]]> = [
      ['R K', []],
      ['R. K.', []],
      ['Rao', ['aishwarya-rai', 'kavita-rao', 'kiran-rao', 'srinivasa-rao']],
    ];
    for (const [query, found] of cases) assert.deepEqual((await find(query)).hits.map((hit) => hit.patientId).sort(), found, query);
  });

  it('reads a last word of two or three consonants both as initials and as a word being typed', async () => {
    const find = memoryIndex([...queryPatients, { id: 'r-k-shetty', first_name: 'R. K.', last_name: 'Shetty' }]);
    const cases: Array<[query: string, first: string]> = [
      ['Sunita Sh', 'sunita-sharma'],
      ['Sharma Sh', 'shanti-sharma'],
      ['Shetty RK', 'r-k-shetty'],
      ['Sh', 'farooq-shaikh'],
    ];
    for (const [query, first] of cases) {
      await assertFirst(find, query, first);
    }
  });

  it('finds a surname and an initial, or a name being typed after an initial', async () => {
    const cases: Array<[query: string, found: string[]]> = [
      ['R Shar', ['rajesh-sharma', 'ramesh-sharma']],
      ['Sharma R', ['rajesh-sharma', 'ramesh-sharma']],
      ['S Sunit', ['sunita-sharma']],
    ];
    for (const [query, found] of cases) assert.deepEqual((await refs(query)).slice(0, found.length).sort(), found, query);
  });

  it('finds two names among many patients sharing a first and a middle name, by the rarer words', async () => {
    const find = memoryIndex([
      ...crowd('Var', { first_name: 'Ram', middle_name: 'Kumar' }, 'last_name'),
      { id: 'ram-kumar-sharma', first_name: 'Ram', middle_name: 'Kumar', last_name: 'Sharma' },
      { id: 'rajesh-kumar-sharma', first_name: 'Rajesh', middle_name: 'Kumar', last_name: 'Sharma' },
    ]);
    const cases: Array<[query: string, first: string]> = [
      ['Ram Kumar Sharma', 'ram-kumar-sharma'],
      ['Kumar Ram Sharma', 'ram-kumar-sharma'],
      ['Ram K Sharma', 'ram-kumar-sharma'],
      ['Sharma Ram K', 'ram-kumar-sharma'],
    ];
    for (const [query, first] of cases) {
      await assertFirst(find, query, first);
    }
  });

  it('finds a first name being typed, or misspelt, among many of the same surname whose first names begin alike', async () => {
    // Radbab … Radpit Sharma sort before Raj…; Rabab … Rapit Sharma around it.
    const rajesh = { id: 'rajesh-s', first_name: 'Rajesh', last_name: 'Sharma' };
    const beforeRaj = memoryIndex([...crowd('Rad', { last_name: 'Sharma' }), ...queryPatients]);
    const aroundRaj = memoryIndex([...queryPatients, ...crowd('Ra', { last_name: 'Sharma' }), rajesh]);
    const cases: Array<[find: typeof beforeRaj, query: string, first: string]> = [
      [beforeRaj, 'Sharma Raj', 'rajesh-sharma'],
      [beforeRaj, 'Sharma Rajesh', 'rajesh-sharma'],
      [beforeRaj, 'Rajesh Sharma', 'rajesh-sharma'],
      [beforeRaj, 'Sunita Sharma', 'sunita-sharma'],
      [aroundRaj, 'Rajeh Sharma', 'rajesh-s'],
      [aroundRaj, 'Rajesh K Sharma', 'rajesh-sharma'],
    ];
    for (const [find, query, first] of cases) {
      await assertFirst(find, query, first);
    }
  });

  it('finds a surname and a first name before an initial among many of that first name and of that surname', async () => {
    // Ram Kumar Sadbab …, and Radbab … and Ragbab … Sharma: both words' pairs with the other's first letter crowded.
    const find = memoryIndex([
      ...crowd('Sad', { first_name: 'Ram', middle_name: 'Kumar' }, 'last_name'),
      ...crowd('Rad', { last_name: 'Sharma' }),
      ...crowd('Rag', { last_name: 'Sharma' }),
      { id: 'ram-kumar-sharma', first_name: 'Ram', middle_name: 'Kumar', last_name: 'Sharma' },
    ]);
    for (const query of ['Sharma Ram K', 'Sharma Raam K']) {
      await assertFirst(find, query, 'ram-kumar-sharma');
    }
  });

  it('finds a long surname being typed among many of the same first name whose surnames begin alike', async () => {
    // Ram Kadbab … Ram Kadpit sort before Kulkarni.
    const find = memoryIndex([...crowd('Kad', { first_name: 'Ram' }, 'last_name'), { id: 'ram-kulkarni', first_name: 'Ram', last_name: 'Kulkarni' }]);
    for (const query of ['Ram Kulkar', 'Ram Kulkarni', 'Kulkarni Ram']) {
      await assertFirst(find, query, 'ram-kulkarni');
    }
  });

  it('finds a misspelt surname among many of the same first name whose surnames begin alike', async () => {
    // Rajesh Sadad … Rajesh Samim: 50 surnames of S and two consonants that sort before Sharma's.
    const find = memoryIndex([
      ...queryPatients,
      ...crowd('Sa', { first_name: 'Rajesh' }, 'last_name', 'dgklm'),
      { id: 'rajesh-s', first_name: 'Rajesh', last_name: 'Sharma' },
    ]);
    for (const query of ['Rajesh Sharna', 'Rajesh Sharm']) {
      await assertFirst(find, query, 'rajesh-s');
    }
  });

  it('finds one word spelled as typed first, and a spelling whose ending varies when the word is long', async () => {
    const find = memoryIndex([
      ...crowd('Dev', { last_name: 'Sarma' }),
      ...crowd('Ma', { last_name: 'Pillai' }, 'first_name', 'dgklmnp'),
      ...queryPatients,
      { id: 'vinod-sharma', first_name: 'Vinod', last_name: 'Sharma' },
      { id: 'vera-paul', first_name: 'Vera', last_name: 'Paul' },
    ]);
    const cases: Array<[query: string, first: string[]]> = [
      ['Sharma', ['rajesh-sharma', 'ramesh-sharma', 'sanjay-sharma', 'sunita-sharma', 'vinod-sharma']],
      ['Murugam', ['murugan-k']],
      ['Pandiyam', ['ramasamy-pandian']],
      ['Raghav', ['raghvendra-singh']],
      ['Verma', ['deepak-verma']],
    ];
    for (const [query, first] of cases) {
      const found = (await find(query)).hits.map((hit) => hit.patientId);
      assert.deepEqual(found.slice(0, first.length).sort(), first, `${query}: ${found.slice(0, 6).join(', ')}`);
    }
    // A short word is not a varied ending of a shorter one.
    assert.ok(!(await find('Verma')).hits.some((hit) => hit.patientId === 'vera-paul'));
  });

  it('reads more rows for a longer page, and no more however many other patients share or extend the name', async () => {
    const sharmas = crowd('Dev', { last_name: 'Sharma' });
    const moreSharmas = crowd('Jay', { last_name: 'Sharma' });
    const sharmilas = crowd('Sharmila', { last_name: 'Rao' }, 'first_name');
    const rajeshes = crowd('Sa', { first_name: 'Rajesh' }, 'last_name');
    const moreRajeshes = crowd('Si', { first_name: 'Rajesh' }, 'last_name');
    const rowsRead = async (patients: Patient[], query: string, limit: number) => {
      const reads: number[] = [];
      await memoryIndex([...patients, ...queryPatients], reads)(query, limit);
      return reads.reduce((a, b) => a + b, 0);
    };
    const pages = [await rowsRead(sharmas, 'Sharma', 10), await rowsRead(sharmas, 'Sharma', 30), await rowsRead(sharmas, 'Sharma', 60)];
    assert.ok(pages[0]! < pages[1]! && pages[1]! < pages[2]!, `rows read for pages of 10, 30, 60: ${pages}`);
    assert.ok(pages[2]! < sharmas.length * 2, `${pages[2]} rows read for 60 of ${sharmas.length} Sharmas`);
    const same: Array<[query: string, limit: number, some: Patient[], more: Patient[]]> = [
      ['Sharma', 10, sharmas, [...sharmas, ...moreSharmas]],
      ['Sharma', 10, sharmas, [...sharmas, ...sharmilas]],
      ['Sharma R', 10, [], sharmas],
      ['Rajesh Sharna', 10, rajeshes, [...rajeshes, ...moreRajeshes]],
    ];
    for (const [query, limit, some, more] of same)
      assert.equal(await rowsRead(more, query, limit), await rowsRead(some, query, limit), `${query}, ${limit} a page`);
  });

  it('answers in one read when the most exact keys fill the page, and in two when they do not', async () => {
    const reads: number[] = [];
    const find = memoryIndex(crowd('Dev', { last_name: 'Sharma' }).slice(0, 60), reads);
    const cases: Array<[query: string, limit: number, more: boolean, readsMade: number]> = [
      ['Sharma', 59, true, 1],
      ['Sharma', 60, false, 2],
      ['Sharma', 5, true, 1],
      ['Devbab Sharma', 5, false, 2],
      ['98110', 5, false, 1],
    ];
    for (const [query, limit, more, readsMade] of cases) {
      reads.length = 0;
      const page = await find(query, limit);
      assert.equal(page.more, more, `${query}, ${limit} a page`);
      assert.equal(reads.length, readsMade, `${query}, ${limit} a page`);
    }
  });
});
