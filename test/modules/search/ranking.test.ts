/**
 * The order of a search's answers, one ranking rule per test, on indexes of a handful of products built
 * in memory (no catalogue): which product comes first, and why. Each case pits a product the rule puts
 * first against one every later rule would put first (a shorter name, fewer salts), so only the rule
 * under test can order them as expected.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FIELD_ALT, FIELD_FORM, FIELD_GENERIC, FIELD_NAME, SearchIndex, type IndexedFields } from '../../../src/modules/search/index/engine.ts';
import { parseQuery } from '../../../src/modules/search/index/query.ts';

interface Product {
  name: string;
  /** Other names it is sold or known under. */
  alt?: string;
  /** Other names it answers to as a whole, as a lab test's abbreviations: exact and prefix lookups find it by them. */
  aka?: string[];
  /** Its salts, as the composition reads. */
  generic?: string;
  form?: string;
  discontinued?: boolean;
  /** Salts it is made of; one unless given. */
  parts?: number;
}

const describeProduct = (product: Product & { id: string }): IndexedFields => {
  const fields: IndexedFields['fields'] = [[FIELD_NAME, product.name]];
  if (product.alt) fields.push([FIELD_ALT, product.alt]);
  if (product.generic) fields.push([FIELD_GENERIC, product.generic]);
  if (product.form) fields.push([FIELD_FORM, product.form]);
  if (product.aka) fields.push([FIELD_ALT, product.aka.join(' ')]);
  return {
    names: [product.name, ...(product.aka ?? [])],
    fields,
    demoted: product.discontinued ?? false,
    nameLength: product.name.length,
    parts: product.parts ?? 1,
  };
};

function indexOf(products: Product[]): SearchIndex<Product & { id: string }> {
  const index = new SearchIndex<Product & { id: string }>(describeProduct);
  index.build(products.map((product, i) => ({ ...product, id: `p${i}` })));
  return index;
}

/** The names answering `query`, best first. */
function answers(products: Product[], query: string, limit = 10): string[] {
  return indexOf(products)
    .search(parseQuery(query), limit)
    .map((hit) => hit.record.name);
}

interface Case {
  rule: string;
  query: string;
  products: Product[];
  /** Every answer, best first. */
  expected: string[];
}

/** Runs each case with its products in both orders, so neither the order given nor the layout decides. */
function check(cases: Case[]): void {
  for (const { rule, query, products, expected } of cases) {
    assert.deepEqual(answers(products, query), expected, `${rule} (${query})`);
    assert.deepEqual(answers([...products].reverse(), query), expected, `${rule} (${query}), products the other way round`);
  }
}

describe('search ranking', () => {
  it('puts the product named exactly as typed first, even discontinued and longer-named than one merely starting so', () => {
    check([
      {
        rule: 'exact name, discontinued, before an active name starting with it',
        query: 'dolo',
        products: [{ name: 'Dolo', discontinued: true }, { name: 'Dolo1' }],
        expected: ['Dolo', 'Dolo1'],
      },
      {
        rule: 'exact name, spaces and hyphens aside',
        query: 'zerodol sp',
        products: [{ name: 'Zerodol-SP', parts: 3 }, { name: 'Zerodol SPX' }],
        expected: ['Zerodol-SP', 'Zerodol SPX'],
      },
      {
        rule: 'an exact name outranks a shorter one whose words all match',
        query: 'pan 40',
        products: [{ name: 'Pan 40', parts: 2 }, { name: 'Pan 40 D' }],
        expected: ['Pan 40', 'Pan 40 D'],
      },
    ]);
  });

  it('lists active products before discontinued ones that match as well', () => {
    check([
      {
        rule: 'names starting with the query',
        query: 'dolo',
        products: [{ name: 'Dolo 6', discontinued: true }, { name: 'Dolo 650 Tablet' }],
        expected: ['Dolo 650 Tablet', 'Dolo 6'],
      },
      {
        rule: 'a salt in the composition',
        query: 'paracetamol',
        products: [
          { name: 'Calpol', generic: 'Paracetamol', discontinued: true },
          { name: 'Crocin Advance', generic: 'Paracetamol', parts: 2 },
        ],
        expected: ['Crocin Advance', 'Calpol'],
      },
    ]);
  });

  it('puts names starting with the query before products matching it elsewhere, and those before slips', () => {
    check([
      {
        rule: 'a name starting with the query before a composition holding it',
        query: 'paracetamol',
        products: [
          { name: 'Crocin', generic: 'Paracetamol' },
          { name: 'Paracetamol Tablet IP', generic: 'Paracetamol', parts: 2 },
        ],
        expected: ['Paracetamol Tablet IP', 'Crocin'],
      },
      {
        rule: 'the word itself before a slip of it',
        query: 'paracetamol',
        products: [
          { name: 'Pcm', generic: 'Paracetamo' },
          { name: 'Crocin Advance', generic: 'Paracetamol', parts: 3 },
        ],
        expected: ['Crocin Advance', 'Pcm'],
      },
      {
        rule: 'every word matched before a slip in one, though the slipped product also has the form typed',
        query: 'paracetamol caffein tablet',
        products: [
          { name: 'Pcm Tablet', generic: 'Paracetamol Caffien' },
          { name: 'Crocin Plus', generic: 'Paracetamol Caffeine', parts: 2 },
        ],
        expected: ['Crocin Plus', 'Pcm Tablet'],
      },
      {
        rule: 'every word of the query before some of them',
        query: 'dolo tab',
        products: [{ name: 'Dolo Syrup' }, { name: 'Dolo 650 Tablet', parts: 2 }],
        expected: ['Dolo 650 Tablet', 'Dolo Syrup'],
      },
    ]);
  });

  it('puts a product whose own name starts with the query before one only another of its names starts so', () => {
    check([
      {
        rule: 'Thyroid Profile is named so; Anti-TPO Antibodies (the shorter name) only answers to Thyroid Peroxidase Antibody',
        query: 'thyroid',
        products: [{ name: 'Anti-TPO Antibodies', aka: ['Thyroid Peroxidase Antibody'] }, { name: 'Thyroid Profile (T3 T4 TSH)' }],
        expected: ['Thyroid Profile (T3 T4 TSH)', 'Anti-TPO Antibodies'],
      },
      {
        rule: 'Serum Iron Studies is named so; Prolactin only answers to Serum Prolactin',
        query: 'serum',
        products: [
          { name: 'Prolactin', aka: ['PRL', 'Serum Prolactin'] },
          { name: 'Serum Iron Studies', parts: 2 },
        ],
        expected: ['Serum Iron Studies', 'Prolactin'],
      },
      {
        rule: 'another name typed whole is still an exact name, and leads',
        query: 'tsh',
        products: [{ name: 'TSH Receptor Antibody' }, { name: 'Thyroid Stimulating Hormone (TSH)', aka: ['TSH'] }],
        expected: ['Thyroid Stimulating Hormone (TSH)', 'TSH Receptor Antibody'],
      },
    ]);
    // Added after the build, the same.
    const index = indexOf([{ name: 'Calpol 500' }]);
    index.upsert([
      { id: 'a', name: 'Anti-TPO Antibodies', aka: ['Thyroid Peroxidase Antibody'] },
      { id: 'b', name: 'Thyroid Profile (T3 T4 TSH)' },
    ]);
    assert.deepEqual(
      index.search(parseQuery('thyroid'), 10).map((hit) => hit.record.name),
      ['Thyroid Profile (T3 T4 TSH)', 'Anti-TPO Antibodies'],
    );
  });

  it('prefers a name where the whole query ends on a word to one where it ends inside a word', () => {
    check([
      {
        rule: 'zerodolsp ends a word in Zerodol-SP Tablet, inside one in Zerodol Spas',
        query: 'zerodolsp',
        products: [{ name: 'Zerodol Spas' }, { name: 'Zerodol-SP Tablet', parts: 3 }],
        expected: ['Zerodol-SP Tablet', 'Zerodol Spas'],
      },
    ]);
  });

  it('prefers more of the query matched as whole words', () => {
    check([
      {
        rule: 'the whole word before a word it begins, in the composition',
        query: 'atorva',
        products: [
          { name: 'Aztor', generic: 'Atorvastatin' },
          { name: 'Lipikind Forte', generic: 'Atorva', parts: 2 },
        ],
        expected: ['Lipikind Forte', 'Aztor'],
      },
      {
        rule: 'the whole word before a word it begins, though the other product also has the form typed',
        query: 'atorva tablet',
        products: [
          { name: 'Aztor Tablet', generic: 'Atorvastatin' },
          { name: 'Lipikind Forte', generic: 'Atorva', parts: 2 },
        ],
        expected: ['Lipikind Forte', 'Aztor Tablet'],
      },
      {
        rule: 'the whole word in the composition before a word it begins in another name',
        query: 'atorva',
        products: [
          { name: 'Aztor', alt: 'Atorvastatin' },
          { name: 'Lipikind Forte', generic: 'Atorva' },
        ],
        expected: ['Lipikind Forte', 'Aztor'],
      },
      {
        rule: 'two whole words before one and a beginning',
        query: 'telmisartan amlodipine',
        products: [
          { name: 'Telma AM', generic: 'Telmisartan Amlodipinebesylate' },
          { name: 'Tazloc AM Forte', generic: 'Telmisartan Amlodipine', parts: 3 },
        ],
        expected: ['Tazloc AM Forte', 'Telma AM'],
      },
    ]);
  });

  it('prefers a product whose form or strength the query names, though neither is required', () => {
    check([
      {
        rule: 'the form typed',
        query: 'dolo tablet',
        products: [{ name: 'Dolo 650 Syrup' }, { name: 'Dolo 650 Tablet', parts: 2 }],
        expected: ['Dolo 650 Tablet', 'Dolo 650 Syrup'],
      },
      {
        rule: 'the form typed, held in the form field',
        query: 'azithral tablet',
        products: [
          { name: 'Azithral', generic: 'Azithromycin', form: 'Syrup' },
          { name: 'Azithral XL', generic: 'Azithromycin', form: 'Tablet' },
        ],
        expected: ['Azithral XL', 'Azithral'],
      },
    ]);
  });

  it('puts the product the query covers best, with fewer salts, first among equal matches', () => {
    check([
      {
        rule: 'one salt before two',
        query: 'paracetamol',
        products: [
          { name: 'Zerodol P', generic: 'Aceclofenac Paracetamol', parts: 2 },
          { name: 'Calpol 500 Tablet', generic: 'Paracetamol', parts: 1 },
        ],
        expected: ['Calpol 500 Tablet', 'Zerodol P'],
      },
      {
        rule: 'two salts before three',
        query: 'paracetamol',
        products: [
          { name: 'Zerodol SP', generic: 'Aceclofenac Paracetamol Serratiopeptidase', parts: 3 },
          { name: 'Zerodol P Tablet', generic: 'Aceclofenac Paracetamol', parts: 2 },
        ],
        expected: ['Zerodol P Tablet', 'Zerodol SP'],
      },
    ]);
  });

  it('prefers the word in a name to the word in the composition, and that to the word in the form', () => {
    check([
      {
        rule: 'another name before the composition',
        query: 'paracetamol',
        products: [
          { name: 'Pcm', generic: 'Paracetamol' },
          { name: 'Crocin Advance', alt: 'Paracetamol' },
        ],
        expected: ['Crocin Advance', 'Pcm'],
      },
      {
        rule: 'the composition before the form',
        query: 'drops',
        products: [
          { name: 'Otek', form: 'Drops' },
          { name: 'Waxsol Ear', generic: 'Drops' },
        ],
        expected: ['Waxsol Ear', 'Otek'],
      },
    ]);
  });

  it('prefers the closer spelling: the word, a beginning of it, the same sound spelt otherwise, then slips, commoner slips first', () => {
    check([
      {
        rule: 'a word spelt as it sounds before a slip',
        query: 'zinetac',
        products: [
          { name: 'Rnt', generic: 'Zinetam' },
          { name: 'Ranitidine Forte', generic: 'Zinetak' },
        ],
        expected: ['Ranitidine Forte', 'Rnt'],
      },
      {
        rule: 'a neighbouring key before a far one',
        query: 'metformin',
        products: [
          { name: 'Gm', generic: 'Metformzn' },
          { name: 'Glycomet Forte', generic: 'Metfprmin' },
        ],
        expected: ['Glycomet Forte', 'Gm'],
      },
      {
        rule: 'one slip before two',
        query: 'metformin',
        products: [
          { name: 'Gm', generic: 'Metfxrmxn' },
          { name: 'Glycomet Forte', generic: 'Metfxrmin' },
        ],
        expected: ['Glycomet Forte', 'Gm'],
      },
    ]);
  });

  it('among products with the same slip, puts first the one whose name begins with the slipped word', () => {
    check([
      {
        rule: 'the brand being typed before a name holding it further on',
        query: 'crocim',
        products: [{ name: 'Cold Crocin' }, { name: 'Crocin Advance', parts: 2 }],
        expected: ['Crocin Advance', 'Cold Crocin'],
      },
      {
        rule: 'the brand being typed before a composition holding it',
        query: 'lubricamt',
        products: [
          { name: 'Tears', generic: 'Lubricant' },
          { name: 'Lubricant Eye Drop', parts: 2 },
        ],
        expected: ['Lubricant Eye Drop', 'Tears'],
      },
      // The same with the slipped word not the one being typed, where no leader of a beginning decides.
      {
        rule: 'the brand typed before a name holding it further on, the word being typed another',
        query: 'crocim 500',
        products: [{ name: 'Cold Crocin 500' }, { name: 'Crocin Advance 500', parts: 2 }],
        expected: ['Crocin Advance 500', 'Cold Crocin 500'],
      },
      {
        rule: 'the brand typed before a composition holding it, the word being typed another',
        query: 'lubricamt drop',
        products: [
          { name: 'Tears Drop', generic: 'Lubricant' },
          { name: 'Lubricant Eye Drop', parts: 2 },
        ],
        expected: ['Lubricant Eye Drop', 'Tears Drop'],
      },
    ]);
  });

  it('for a half-typed word that only its slips match, puts the first product of each word or beginning it may stand for before a second of any', () => {
    check([
      {
        rule: 'one Telma (two letters swapped), then Toeflex (a neighbouring key), then the next Telma',
        query: 'tle',
        products: [{ name: 'Telma 20 Tablet' }, { name: 'Telma 40 Tablet' }, { name: 'Toeflex Forte Gel', parts: 2 }],
        expected: ['Telma 20 Tablet', 'Toeflex Forte Gel', 'Telma 40 Tablet'],
      },
      {
        rule: 'the word one swap away, then a name beginning a vowel away, then the word again',
        query: 'alot',
        products: [{ name: 'Alto 10 Tablet' }, { name: 'Alto 20 Tablet' }, { name: 'Alatro Forte Tablet', parts: 2 }],
        expected: ['Alto 10 Tablet', 'Alatro Forte Tablet', 'Alto 20 Tablet'],
      },
      {
        rule: 'not when the typed word begins a word as it is (it may mean what it says): its slips in their usual order',
        query: 'tle',
        products: [
          { name: 'Telma 20 Tablet' },
          { name: 'Telma 40 Tablet' },
          { name: 'Toeflex Forte Gel', parts: 2 },
          { name: 'Otoclear Ear Drop', generic: 'Tlevoxin' },
        ],
        expected: ['Otoclear Ear Drop', 'Telma 20 Tablet', 'Telma 40 Tablet', 'Toeflex Forte Gel'],
      },
    ]);
  });

  it('puts the shorter name first when nothing else tells two products apart', () => {
    check([
      {
        rule: 'names starting with the query',
        query: 'dolo',
        products: [{ name: 'Dolo 650 Tablet' }, { name: 'Dolo 65 Tablet' }],
        expected: ['Dolo 65 Tablet', 'Dolo 650 Tablet'],
      },
      {
        rule: 'the salt in the composition',
        query: 'cetirizine',
        products: [
          { name: 'Okacet Tablet', generic: 'Cetirizine' },
          { name: 'Alerid', generic: 'Cetirizine' },
        ],
        expected: ['Alerid', 'Okacet Tablet'],
      },
    ]);
  });

  it('answers only products holding every word typed, or whose name starts with the whole query', () => {
    const paracetamols = (count: number): Product[] => Array.from({ length: count }, (_, i) => ({ name: `Pcm ${i + 1}`, generic: 'Paracetamol' }));
    const cases: Array<{ query: string; products: Product[]; expected: string[] }> = [
      {
        query: 'paracetamol crocin',
        products: [...paracetamols(12), { name: 'Crocin Cold', generic: 'Phenylephrine' }, { name: 'Crocin Advance', generic: 'Paracetamol' }],
        expected: ['Crocin Advance'],
      },
      { query: 'pan d', products: [{ name: 'Pandoz' }, { name: 'Pan 40' }], expected: ['Pandoz'] },
      { query: 'dolo 650', products: [{ name: 'Dolo 650 Tablet', generic: 'Paracetamol' }, { name: 'Dolo 500' }], expected: ['Dolo 650 Tablet'] },
      {
        // One word found in few names, the other in many.
        query: 'paracetamol sodium',
        products: [
          ...paracetamols(7),
          { name: 'Calpol Soluble', generic: 'Paracetamol Sodium' },
          ...Array.from({ length: 30 }, (_, i) => ({ name: `Saline ${i + 1}`, generic: 'Sodium Chloride' })),
          { name: 'Sodium Bicarbonate', generic: 'Sodium Bicarbonate' },
        ],
        expected: ['Calpol Soluble'],
      },
    ];
    for (const { query, products, expected } of cases) assert.deepEqual(answers(products, query), expected, query);
  });

  it('ranks products added after the build as if they had been built: shorter names first, equal ones in the order added', () => {
    const index = indexOf([{ name: 'Calpol 500' }]);
    index.upsert([
      { id: 'a', name: 'Dolo 650 Tablet' },
      { id: 'b', name: 'Dolo Tab B' },
      { id: 'c', name: 'Dolo Tab A' },
      { id: 'd', name: 'Dolo 65 Tablet' },
    ]);
    const page = (limit: number) => index.search(parseQuery('dolo'), limit).map((hit) => hit.record.name);
    const all = ['Dolo Tab B', 'Dolo Tab A', 'Dolo 65 Tablet', 'Dolo 650 Tablet'];
    assert.deepEqual(page(10), all);
    for (let limit = 1; limit < all.length; limit++) assert.deepEqual(page(limit), all.slice(0, limit), `a page of ${limit}`);
  });

  it('no longer answers a product by the name it had before it was replaced', () => {
    const index = indexOf([{ name: 'Dolo 650 Tablet' }, { name: 'Dolo 500 Tablet' }]);
    index.upsert([{ id: 'p0', name: 'Calpol 650 Tablet' }]);
    assert.deepEqual(
      index.search(parseQuery('dolo'), 10).map((hit) => hit.record.name),
      ['Dolo 500 Tablet'],
    );
    assert.deepEqual(
      index.search(parseQuery('650'), 10).map((hit) => hit.record.name),
      ['Calpol 650 Tablet'],
    );
  });

  it('answers a shorter page with the beginning of a longer one, products that tie included', () => {
    const cases: Array<{ products: Product[]; queries: string[]; all?: string[] }> = [
      {
        products: [
          { name: 'Paracip 500', generic: 'Paracetamol' },
          { name: 'Paracip 650', generic: 'Paracetamol' },
          { name: 'Pcm 650', generic: 'Paracetamol', form: 'Tablet' },
          { name: 'Pcm 500', generic: 'Paracetamol', form: 'Tablet' },
          { name: 'Fepanil 650', generic: 'Paracetamol', discontinued: true },
          { name: 'Calpol 650', alt: 'Paracetamol' },
          { name: 'Crocin Pain', generic: 'Paracetamol Caffeine', parts: 2 },
          { name: 'Crocin 650', generic: 'Paracetamoll' },
          { name: 'Paracetamol 650', generic: 'Paracetamol' },
        ],
        queries: ['paracetamol', 'paracetamol 650', 'paracetamol tablet', 'para', 'paracip'],
      },
      {
        products: [
          { name: 'Dolo 650 Tablet', generic: 'Paracetamol' },
          { name: 'Dolo', discontinued: true },
          { name: 'Dolo 500', generic: 'Paracetamol' },
          { name: 'Dolokind Plus', generic: 'Aceclofenac Paracetamol', parts: 2 },
          { name: 'Dolonex', generic: 'Piroxicam' },
          { name: 'Dolo 6', discontinued: true },
          { name: 'Calpol', generic: 'Dolo' },
          { name: 'Dolo 650 Syrup', generic: 'Paracetamol', form: 'Syrup' },
        ],
        queries: ['dolo'],
        all: ['Dolo', 'Dolo 500', 'Dolo 650 Syrup', 'Dolo 650 Tablet', 'Dolonex', 'Dolokind Plus', 'Calpol', 'Dolo 6'],
      },
    ];
    for (const { products, queries, all: expected } of cases) {
      const index = indexOf(products);
      for (const query of queries) {
        const all = index.search(parseQuery(query), 20).map((hit) => hit.record.name);
        if (expected) assert.deepEqual(all, expected, query);
        for (let limit = 1; limit < all.length; limit++) {
          assert.deepEqual(
            index.search(parseQuery(query), limit).map((hit) => hit.record.name),
            all.slice(0, limit),
            `${query}: a page of ${limit}`,
          );
        }
      }
    }
  });
});
