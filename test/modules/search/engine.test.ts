/**
 * The index on its own: incremental updates on top of a built index (postings added after the build,
 * typo lookups kept per word until the vocabulary changes, a rebuild due once tombstones pile up), and
 * the early stop of a ranking pass checked against walking every posting.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import path from 'node:path';
import { BUILTIN_DIR } from '../../../src/modules/search/ingest/builtin.ts';
import { describeDrug } from '../../../src/modules/search/index/fields.ts';
import { FIELD_GENERIC, FIELD_NAME, SearchIndex, type IndexedFields } from '../../../src/modules/search/index/engine.ts';
import { highlight, highlightRanges } from '../../../src/modules/search/index/highlight.ts';
import { parseQuery } from '../../../src/modules/search/index/query.ts';
import { drugRecordFromRow, Interner, type DrugRecord } from '../../../src/modules/search/index/model.ts';
import { newDrugRow } from '../../../src/modules/search/ingest/importer.ts';
import { openDrugSource } from '../../../src/modules/search/ingest/sources.ts';
import { ArrayStore, DrugStore } from '../../../src/modules/search/index/store.ts';
import { QUERIES } from './queries.ts';
import { HAS_SHARED_DATA, shared } from './support.ts';

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

  it('finds names added in several batches by prefix, as an index built with all of them does', () => {
    const base = Array.from({ length: 50 }, (_, i) => ({ id: `b${i}`, name: `Basepril ${i} Tablet`, generic: 'Ramipril (5mg)' }));
    const added = Array.from({ length: 300 }, (_, i) => ({
      id: `n${i}`,
      name: `${['Zolfen', 'Zolmit', 'Zolpid'][i % 3]} ${i} Tablet`,
      generic: 'Zolpidem (10mg)',
    }));
    const updated = new SearchIndex<Doc>(describeDoc);
    updated.build(base);
    updated.upsert(added.slice(0, 120));
    updated.upsert(added.slice(120));
    const built = new SearchIndex<Doc>(describeDoc);
    built.build([...base, ...added]);
    for (const q of ['zol', 'zolm', 'zolpid 1', 'zolfen 29', 'basepril']) {
      const found = (index: SearchIndex<Doc>) => new Set(index.search(parseQuery(q), 400).map((hit) => hit.record.id));
      assert.deepEqual(found(updated), found(built), q);
    }
  });

  it('replaces a record by id, says when a rebuild is due and answers the same after it', () => {
    const index = new SearchIndex<Doc>(describeDoc);
    const docs = Array.from({ length: 1200 }, (_, i) => ({ id: `d${i}`, name: `Brand${i} Tablet`, generic: 'Metformin (500mg)' }));
    index.build(docs);
    index.upsert([{ id: 'd1', name: 'Glycomet 500 Tablet', generic: 'Metformin (500mg)' }]);
    assert.deepEqual(names(index, 'glycomet'), ['Glycomet 500 Tablet']);
    assert.ok(!names(index, 'brand1 tablet').includes('Brand1 Tablet'));
    assert.equal(index.rebuildDue, false);
    assert.equal(index.wouldRebuildWith(1200), true);
    // Replacing every record leaves more than a quarter tombstoned: a rebuild is due (its owner runs it).
    index.upsert(docs.map((doc) => ({ ...doc, name: doc.name.replace('Brand', 'Mark') })));
    assert.equal(index.rebuildDue, true);
    assert.equal(index.size, 1200);
    assert.equal(names(index, 'mark7 tablet')[0], 'Mark7 Tablet', 'before the rebuild');
    index.build(index.all());
    assert.equal(index.rebuildDue, false);
    assert.equal(index.size, 1200);
    assert.equal(names(index, 'mark7 tablet')[0], 'Mark7 Tablet');
    assert.ok(!names(index, 'brand7 tablet').includes('Brand7 Tablet'));
    assert.deepEqual(names(index, 'glycomet'), []);
    assert.deepEqual(names(index, 'glycomt'), []);
    assert.equal(index.search(parseQuery('metformin'), 5).length, 5);
  });
});

describe('search index: what matched', () => {
  it('returns the words a typo matched with the hits, leaving the parsed query as it was, and highlighting reads them', () => {
    const index = new SearchIndex<Doc>(describeDoc);
    index.build([
      { id: 'a', name: 'Dolo 650 Tablet', generic: 'Paracetamol (650mg)' },
      { id: 'b', name: 'Pan 40 Tablet', generic: 'Pantoprazole (40mg)' },
    ]);
    const query = parseQuery('paracetmol 650');
    const parsed = structuredClone(query);
    const hits = index.search(query, 10);
    assert.deepEqual(
      hits.map((hit) => hit.record.name),
      ['Dolo 650 Tablet'],
    );
    assert.deepEqual(
      hits[0]!.typoMatches.map((words) => [...words]),
      [['paracetamol'], []],
    );
    assert.deepEqual(query, parsed, 'the search writes nothing into its input');
    const generic = hits[0]!.record.generic;
    assert.equal(highlight(generic, highlightRanges(generic, query, hits[0]!.typoMatches, false)), '<em>Paracetamol</em> (<em>650</em>mg)');
    // Without what the search matched, the typo is not highlighted.
    assert.equal(highlight(generic, highlightRanges(generic, query, [], false)), 'Paracetamol (<em>650</em>mg)');
  });
});

describe('search index: snapshots', () => {
  it('holds the index as built, whatever was upserted after the snapshot was taken', () => {
    const docs = [
      { id: 'a', name: 'Dolo 650 Tablet', generic: 'Paracetamol (650mg)' },
      { id: 'b', name: 'Crocin Advance Tablet', generic: 'Paracetamol (500mg)' },
    ];
    const index = new SearchIndex<Doc>(describeDoc);
    index.build(docs);
    const taken = index.snapshot();
    // The catalogue writes the snapshot in the background: upserts may come before it is encoded.
    index.upsert([
      { id: 'a', name: 'Dolo 500 Tablet', generic: 'Paracetamol (500mg)' },
      { id: 'c', name: 'Calpol Tablet', generic: 'Paracetamol (500mg)' },
    ]);
    const restored = new SearchIndex<Doc>(describeDoc);
    restored.restore(taken.index, ArrayStore.restore<Doc>(taken.records));
    assert.equal(restored.size, 2);
    assert.deepEqual(restored.all(), docs);
    assert.deepEqual(names(restored, 'dolo'), ['Dolo 650 Tablet']);
    // The same upserts then give the same index as the one that took them.
    restored.upsert([
      { id: 'a', name: 'Dolo 500 Tablet', generic: 'Paracetamol (500mg)' },
      { id: 'c', name: 'Calpol Tablet', generic: 'Paracetamol (500mg)' },
    ]);
    assert.equal(restored.size, index.size);
    assert.deepEqual(new Set(names(restored, 'paracetamol')), new Set(names(index, 'paracetamol')));
  });
});

describe('search index: early stop', () => {
  it('returns what walking every posting returns, for every query of the relevance set, some with slips, and their prefixes', async () => {
    const files = [
      path.join(BUILTIN_DIR, 'drugs.ndjson'),
      ...(HAS_SHARED_DATA ? [shared('medicine_details_1mg_11k.csv'), shared('onemg_drugs_2k.csv')] : []),
    ];
    const interner = new Interner();
    const records: DrugRecord[] = [];
    for (const file of files) {
      const source = await openDrugSource(file);
      for await (const input of source.rows)
        if (input) records.push(drugRecordFromRow({ ...newDrugRow(input, 1, 0), id: `d${records.length}` }, interner));
    }
    const fast = new SearchIndex<DrugRecord>(describeDrug, () => new DrugStore());
    const exhaustive = new SearchIndex<DrugRecord>(describeDrug, () => new DrugStore(), { exhaustive: true });
    fast.build(records);
    exhaustive.build(records);
    const queries = new Set(
      Object.values(QUERIES)
        .flat()
        .filter((c) => !c.lab)
        .map((c) => c.q),
    );
    // Slips, whose runs hold the names that begin with the slipped word (ranked first among equal slips),
    // and three typed letters with a slip, whose beginnings' leaders are scored before the walk.
    for (const q of [
      'lubroc',
      'rabidd',
      'angypl',
      'paracetmol 650',
      'metformn',
      'azithromicin 500',
      'tlema 40',
      'prasuok 10',
      'nekstop',
      'crs',
      'tle',
      'mxi',
      'azp',
    ])
      queries.add(q);
    for (const q of [...queries]) for (let i = 1; i < q.length; i++) queries.add(q.slice(0, i));
    const differences: string[] = [];
    for (const q of queries) {
      for (const limit of [1, 3, 10, 40]) {
        const a = fast
          .search(parseQuery(q), limit)
          .map((hit) => hit.record.id)
          .join();
        const b = exhaustive
          .search(parseQuery(q), limit)
          .map((hit) => hit.record.id)
          .join();
        if (a !== b) differences.push(`${q} (limit ${limit})`);
      }
    }
    assert.deepEqual(differences, []);
  });
});
