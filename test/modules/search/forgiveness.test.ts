/**
 * What search forgives (issue 36): two slips in a long word, a slip in a half-typed word, sound-alike
 * spellings, other official names of a molecule; and what it never does: put a look-alike twin before
 * the exact name. The look-alike warning of a known confusable name, through the endpoint.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FIELD_GENERIC, FIELD_NAME, SearchIndex, type IndexedFields } from '../../../src/modules/search/index/engine.ts';
import { parseQuery, soundAlikes } from '../../../src/modules/search/index/query.ts';
import { halfTypedSlipCost, slipCost } from '../../../src/modules/search/index/slips.ts';
import { synonymsOf } from '../../../src/modules/search/index/synonyms.ts';
import { createSearchApp, type SearchApp } from './support.ts';

interface Doc {
  id: string;
  name: string;
  generic: string;
}

const describeDoc = (doc: Doc): IndexedFields => ({
  names: [doc.name],
  fields: [
    [FIELD_NAME, doc.name],
    [FIELD_GENERIC, doc.generic],
  ],
  demoted: false,
  nameLength: doc.name.length,
  parts: 1,
});

function indexOf(docs: Array<[name: string, generic: string]>): SearchIndex<Doc> {
  const index = new SearchIndex<Doc>(describeDoc);
  index.build(docs.map(([name, generic], i) => ({ id: `d${i}`, name, generic })));
  return index;
}

const names = (index: SearchIndex<Doc>, q: string, limit = 5) => index.search(parseQuery(q), limit).map((hit) => hit.record.name);

const CATALOGUE: Array<[string, string]> = [
  ['Prasudoc 10 Tablet', 'Prasugrel (10mg)'],
  ['Subsyde Tablet', 'Ondansetron (4mg)'],
  ['Rabidoc 20 Tablet', 'Rabeprazole (20mg)'],
  ['Rabium 20 Tablet', 'Rabeprazole (20mg)'],
  ['Angiplat 75 Tablet', 'Clopidogrel (75mg)'],
  ['Troxip Tablet', 'Trypsin (48mg)'],
  ['Nextop Tablet', 'Tolperisone (150mg)'],
  ['Ofron 200 Tablet', 'Ofloxacin (200mg)'],
  ['Telma 40 Tablet', 'Telmisartan (40mg)'],
  ['Hydroxyzine 25 mg Tablet', 'Hydroxyzine (25mg)'],
  ['Hydralazine 25 mg Tablet', 'Hydralazine (25mg)'],
  ['Prednisolone 10 mg Tablet', 'Prednisolone (10mg)'],
  ['Prednisone 10 mg Tablet', 'Prednisone (10mg)'],
  ['Adrenaline 1 mg/ml Injection', 'Adrenaline (1mg/ml)'],
];

describe('search index: slips', () => {
  const index = indexOf(CATALOGUE);

  it('finds a brand of six letters or more typed with two slips', () => {
    assert.equal(names(index, 'prasuok 10')[0], 'Prasudoc 10 Tablet');
    assert.equal(names(index, 'sabside')[0], 'Subsyde Tablet');
  });

  it('finds the brands a half-typed word with one slip starts', () => {
    assert.ok(names(index, 'rabidd').includes('Rabidoc 20 Tablet'), names(index, 'rabidd').join(' | '));
    assert.equal(names(index, 'angypl')[0], 'Angiplat 75 Tablet');
  });

  it('finds the names a half-typed word of three letters begins with one slip after the first letter', () => {
    assert.ok(names(index, 'tlm').includes('Telma 40 Tablet'), names(index, 'tlm').join(' | '));
    assert.ok(names(index, 'nxt').includes('Nextop Tablet'), names(index, 'nxt').join(' | '));
    // Two letters swapped, a neighbouring key (w for e), a vowel for a vowel, a far key (x for e).
    for (const q of ['tle', 'twl', 'tal', 'txl']) assert.ok(names(index, q).includes('Telma 40 Tablet'), `${q}: ${names(index, q).join(' | ')}`);
    // The last word only: a finished word of three letters is not forgiven.
    assert.deepEqual(names(index, 'nxt 40'), []);
    assert.deepEqual(names(index, 'tle 40'), []);
    // Nor a slip in the first letter, the one most rarely wrong.
    assert.ok(!names(index, 'rel').includes('Telma 40 Tablet'));
  });

  it('shows the best product of each beginning three slipped letters may stand for, the commoner slips first, before more of one beginning', () => {
    const typed = indexOf([
      ['Telma 20 Tablet', 'Telmisartan (20mg)'],
      ['Telma 40 Tablet', 'Telmisartan (40mg)'],
      ['Telma 80 Tablet', 'Telmisartan (80mg)'],
      ['Telma H Tablet', 'Telmisartan (40mg) + Hydrochlorothiazide (12.5mg)'],
      ['Telma AM Tablet', 'Telmisartan (40mg) + Amlodipine (5mg)'],
      ['Telma CT Tablet', 'Telmisartan (40mg) + Chlorthalidone (12.5mg)'],
      ['Toeflex Gel', 'Diclofenac (1%)'],
      ['Tolexa 10 Tablet', 'Tolterodine (1mg)'],
      ['Thecort Cream', 'Hydrocortisone (1%)'],
    ]);
    const found = names(typed, 'tle', 5);
    // Telma (two letters swapped) and Tolexa (a letter dropped) are the likeliest, then Toeflex (o is next
    // to l), then Thecort (h is not), before a second Telma.
    assert.deepEqual(new Set(found.slice(0, 2)), new Set(['Telma H Tablet', 'Tolexa 10 Tablet']), found.join(' | '));
    assert.deepEqual(found.slice(2), ['Toeflex Gel', 'Thecort Cream', 'Telma 20 Tablet']);
    // Without a slip to choose among, the usual order: every Telma, shorter names first.
    assert.deepEqual(names(typed, 'telma', 3), ['Telma H Tablet', 'Telma 20 Tablet', 'Telma 40 Tablet']);
    // A product added since (of words already known) that ranks before the others leads its beginning.
    typed.upsert([{ id: 'new', name: 'Telma Tablet', generic: 'Telmisartan (40mg)' }]);
    assert.deepEqual(new Set(names(typed, 'tle', 2)), new Set(['Telma Tablet', 'Tolexa 10 Tablet']));
    // And one of a new word.
    typed.upsert([{ id: 'newer', name: 'Tkerol Tablet', generic: 'Telmisartan (40mg)' }]);
    assert.ok(names(typed, 'tle', 4).includes('Tkerol Tablet'), names(typed, 'tle', 4).join(' | '));
  });

  it('puts a name that begins with the typed letters before every slip, whatever the slips would find', () => {
    const typed = indexOf([
      ['Telma 40 Tablet', 'Telmisartan (40mg)'],
      ['Tolexa 10 Tablet', 'Tolterodine (1mg)'],
      ['Tlevo 5 Tablet', 'Levocetirizine (5mg)'],
    ]);
    assert.equal(names(typed, 'tle')[0], 'Tlevo 5 Tablet');
    assert.deepEqual(new Set(names(typed, 'tle').slice(1)), new Set(['Telma 40 Tablet', 'Tolexa 10 Tablet']));
  });

  it('puts the names that begin with the slipped word before those holding it further on or in their composition', () => {
    const lubricants = indexOf([
      ['Eye Lubricant', 'Carbomer (0.3%)'],
      ['Tears Gel', 'Lubricant base'],
      ['Lubricart Forte Soft Gelatin Capsule', 'Glucosamine (500mg)'],
    ]);
    assert.equal(names(lubricants, 'lubroc')[0], 'Lubricart Forte Soft Gelatin Capsule');
  });

  it('finds a brand spelt with letters that sound the same', () => {
    assert.equal(names(index, 'troksip')[0], 'Troxip Tablet');
    assert.equal(names(index, 'nekstop')[0], 'Nextop Tablet');
    assert.equal(names(index, 'ophron 200')[0], 'Ofron 200 Tablet');
    assert.ok(soundAlikes('troksip').includes('troxip'));
  });

  it('orders candidates by how common their slips are: a neighbouring key, a swap or a dropped letter before a rare substitution', () => {
    assert.ok(slipCost('tlema', 'telma') < slipCost('tqlma', 'telma'));
    assert.ok(slipCost('paracetmol', 'paracetamol') < slipCost('paracetzmol', 'paracetamol'));
    assert.ok(slipCost('rantsc', 'rantac') < slipCost('rantpc', 'rantac'));
    assert.equal(slipCost('telma', 'telma'), 0);
    // In three typed letters, each slip as likely as that one outcome: a swap or a dropped letter, then a
    // neighbouring key, a vowel for a vowel, any other key; never the first letter, nor letters not typed yet.
    assert.equal(halfTypedSlipCost('tle', 'tel'), halfTypedSlipCost('tle', 'tole'));
    assert.ok(halfTypedSlipCost('tle', 'tel') < halfTypedSlipCost('tle', 'toe'));
    assert.ok(halfTypedSlipCost('tle', 'toe') < halfTypedSlipCost('tal', 'tel'));
    assert.ok(halfTypedSlipCost('tal', 'tel') < halfTypedSlipCost('txl', 'tel'));
    assert.equal(halfTypedSlipCost('rel', 'tel'), Number.POSITIVE_INFINITY);
    assert.equal(halfTypedSlipCost('tel', 'telm'), Number.POSITIVE_INFINITY);
    assert.equal(halfTypedSlipCost('tel', 'tel'), Number.POSITIVE_INFINITY);
    assert.equal(names(index, 'tlema 40')[0], 'Telma 40 Tablet');
  });

  it('never puts a look-alike twin before the exact name, and the exact name first whatever its twin', () => {
    for (const [q, first, twin] of [
      ['hydroxyzine', 'Hydroxyzine 25 mg Tablet', 'Hydralazine 25 mg Tablet'],
      ['hydralazine', 'Hydralazine 25 mg Tablet', 'Hydroxyzine 25 mg Tablet'],
      ['prednisone', 'Prednisone 10 mg Tablet', 'Prednisolone 10 mg Tablet'],
      ['prednisolone', 'Prednisolone 10 mg Tablet', 'Prednisone 10 mg Tablet'],
    ] as const) {
      const found = names(index, q);
      assert.equal(found[0], first, q);
      const at = found.indexOf(twin);
      assert.ok(at < 0 || at > found.indexOf(first), `${q}: ${found.join(' | ')}`);
    }
  });

  it('finds a molecule by its other official names, both ways', () => {
    assert.equal(names(index, 'epinephrine')[0], 'Adrenaline 1 mg/ml Injection');
    assert.deepEqual(synonymsOf('nicoumalone'), ['acenocoumarol']);
    assert.ok(synonymsOf('dicycloverine').includes('dicyclomine'));
    assert.ok(synonymsOf('benzhexol').includes('trihexyphenidyl'));
    assert.deepEqual(synonymsOf('hydroxycarbamide'), ['hydroxyurea']);
    assert.deepEqual(synonymsOf('leuprolide'), ['leuprorelin']);
    assert.deepEqual(synonymsOf('hypromellose'), ['hydroxypropylmethylcellulose']);
  });

  it('finds a molecule by an official name of several words, and by its other names where it is stored under one, also after an upsert', () => {
    const molecules = indexOf([
      ['Ecosprin 75 Tablet', 'Aspirin (75mg)'],
      ['Angised 0.5 Tablet', 'Glyceryl Trinitrate (0.5mg)'],
      ['Ovral L Tablet', 'Levonorgestrel (0.15mg) + Ethinyl Estradiol (0.03mg)'],
      ['Progynova 2 Tablet', 'Estradiol Valerate (2mg)'],
      ['Folvite 5 Tablet', 'Folic Acid (5mg)'],
    ]);
    assert.deepEqual(names(molecules, 'acetylsalicylic acid'), ['Ecosprin 75 Tablet']);
    assert.deepEqual(names(molecules, 'acetyl salicylic acid 75'), ['Ecosprin 75 Tablet']);
    assert.deepEqual(names(molecules, 'nitroglycerin'), ['Angised 0.5 Tablet']);
    assert.deepEqual(names(molecules, 'glyceryl trinitrate'), ['Angised 0.5 Tablet']);
    // The rINN in one word and the old BAN find the USAN's two words, and not estradiol alone (another substance).
    assert.deepEqual(names(molecules, 'ethinylestradiol'), ['Ovral L Tablet']);
    assert.deepEqual(names(molecules, 'ethinyloestradiol levonorgestrel'), ['Ovral L Tablet']);
    // An acid with no other official name is two words as ever.
    assert.deepEqual(names(molecules, 'folic acid'), ['Folvite 5 Tablet']);
    molecules.upsert([
      { id: 'late', name: 'Nitrocontin 2.6 Tablet', generic: 'Nitroglycerin (2.6mg)' },
      { id: 'later', name: 'Loprin 75 Tablet', generic: 'Acetylsalicylic Acid (75mg)' },
    ]);
    assert.deepEqual(names(molecules, 'glyceryl trinitrate'), ['Angised 0.5 Tablet', 'Nitrocontin 2.6 Tablet']);
    assert.deepEqual(names(molecules, 'aspirin').sort(), ['Ecosprin 75 Tablet', 'Loprin 75 Tablet']);
  });

  it('gives nothing for a word too far from every name', () => {
    assert.deepEqual(names(index, 'qqqqzzzz'), []);
  });
});

describe('search endpoint: other names and look-alike warnings', () => {
  let t: SearchApp;
  before(async () => {
    t = await createSearchApp();
  });
  after(() => t.close());

  it('finds products stored under another official name of the molecule', async () => {
    for (const [q, stored] of [
      ['epinephrine', /^Adrenaline /],
      ['nicoumalone', /^Acenocoumarol /],
      ['dicycloverine', /Dicyclomine/],
      ['acetaminophen 500', /^Paracetamol 500 mg Tablet$/],
      ['acetylsalicylic acid 75', /^Aspirin 75 mg Gastro-resistant Tablet$/],
      ['acetyl salicylic acid', /^Aspirin /],
      ['nitroglycerin', /^Glyceryl Trinitrate 2.6 mg CR Tablet$/],
      ['ethinyloestradiol', /Ethinyl Estradiol|^Ovral L/],
    ] as const) {
      const { status, body } = await t.search({ q });
      assert.equal(status, 200, q);
      assert.match(body.drugs[0].name, stored, q);
    }
  });

  it('highlights the words of an official name of several words found under another name', async () => {
    const { status, body } = await t.search({ q: 'nitroglycerin' });
    assert.equal(status, 200);
    assert.equal(body.drugs[0].highlighted_fields.name, '<em>Glyceryl Trinitrate</em> 2.6 mg CR Tablet');
  });

  it('warns, in highlighted_fields.look_alike, about a drug whose name ISMP lists as confused with another in the catalogue', async () => {
    const { status, body } = await t.search({ q: 'metformin 500 mg tablet' });
    assert.equal(status, 200);
    assert.equal(body.drugs[0].name, 'Metformin 500 mg Tablet');
    assert.equal(body.drugs[0].highlighted_fields.look_alike, 'metFORMIN: may be confused with metroNIDAZOLE (ISMP)');
    assert.match(body.drugs[0].highlighted_fields.name, /<em>/);
    // Its twin under another official name counts: glyBURIDE is in the catalogue as glibenclamide.
    const glipizide = await t.search({ q: 'glipizide' });
    assert.equal(glipizide.body.drugs[0].highlighted_fields.look_alike, 'glipiZIDE: may be confused with glyBURIDE (ISMP)');
  });

  it('keeps the warning on a drug found through three typed letters with a slip', async () => {
    const { status, body } = await t.search({ q: 'mte', limit: 5 });
    assert.equal(status, 200);
    const flagged = body.drugs.filter((d: { name: string }) => /^(Metformin|Metronidazole) /.test(d.name));
    assert.ok(flagged.length > 0, body.drugs.map((d: { name: string }) => d.name).join(' | '));
    for (const drug of flagged) assert.match(drug.highlighted_fields.look_alike, /^(metFORMIN|metroNIDAZOLE): may be confused with /);
  });

  it('sends no warning for a drug that is no known confusable', async () => {
    const { body } = await t.search({ q: 'dolo 650' });
    assert.equal(body.drugs[0].name, 'Dolo 650 Tablet');
    assert.equal(body.drugs[0].highlighted_fields.look_alike, undefined);
  });
});
