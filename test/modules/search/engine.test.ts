/**
 * The index on its own: incremental updates on top of a built index (postings added after the build,
 * typo lookups kept per word until the vocabulary changes, the rebuild once tombstones pile up).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FIELD_GENERIC, FIELD_NAME, parseQuery, SearchIndex, type IndexedFields } from '../../../src/modules/search/engine.ts';

interface Doc {
  id: string;
  name: string;
  generic: string;
}

const describeDoc = (doc: Doc): IndexedFields => ({
  names: [doc.name],
  fields: [[FIELD_NAME, doc.name], [FIELD_GENERIC, doc.generic]],
  demoted: false,
  nameLength: doc.name.length,
  parts: 1,
});

const names = (index: SearchIndex<Doc>, q: string) => index.search(parseQuery(q), 10).map((hit) => hit.record.name);

describe('search index: incremental updates', () => {
  it('finds words added after the build by exact word, prefix and typo, also after an earlier typo lookup', () => {
    const index = new SearchIndex<Doc>(describeDoc);
    index.build([
      { id: 'a', name: 'Dolo 650 Tablet', generic: 'Paracetamol (650mg)' },
      { id: 'b', name: 'Crocin Advance Tablet', generic: 'Paracetamol (500mg)' },
    ]);
    // The typo lookup of "zerodoll" runs (and is kept) while the vocabulary has no "zerodol".
    assert.deepEqual(names(index, 'zerodoll'), []);
    index.upsert([{ id: 'c', name: 'Zerodol SP Tablet', generic: 'Aceclofenac (100mg) + Paracetamol (325mg) + Serratiopeptidase (15mg)' }]);
    assert.deepEqual(names(index, 'zerodol'), ['Zerodol SP Tablet']);
    assert.deepEqual(names(index, 'zerod'), ['Zerodol SP Tablet']);
    assert.deepEqual(names(index, 'zerodoll'), ['Zerodol SP Tablet']);
    assert.deepEqual(names(index, 'serratio'), ['Zerodol SP Tablet']);
    // A word known at build time gains a posting after it.
    assert.deepEqual(new Set(names(index, 'paracetamol')), new Set(['Dolo 650 Tablet', 'Crocin Advance Tablet', 'Zerodol SP Tablet']));
  });

  it('replaces a record by id and keeps answering the same after the tombstone rebuild', () => {
    const index = new SearchIndex<Doc>(describeDoc);
    const docs = Array.from({ length: 1200 }, (_, i) => ({ id: `d${i}`, name: `Brand${i} Tablet`, generic: 'Metformin (500mg)' }));
    index.build(docs);
    index.upsert([{ id: 'd1', name: 'Glycomet 500 Tablet', generic: 'Metformin (500mg)' }]);
    assert.deepEqual(names(index, 'glycomet'), ['Glycomet 500 Tablet']);
    assert.ok(!names(index, 'brand1 tablet').includes('Brand1 Tablet'));
    // Replacing every record leaves more than a quarter tombstoned: the index rebuilds itself.
    index.upsert(docs.map((doc) => ({ ...doc, name: doc.name.replace('Brand', 'Mark') })));
    assert.equal(index.size, 1200);
    assert.equal(names(index, 'mark7 tablet')[0], 'Mark7 Tablet');
    assert.ok(!names(index, 'brand7 tablet').includes('Brand7 Tablet'));
    assert.deepEqual(names(index, 'glycomet'), []);
    assert.deepEqual(names(index, 'glycomt'), []);
    assert.equal(index.search(parseQuery('metformin'), 5).length, 5);
  });
});
