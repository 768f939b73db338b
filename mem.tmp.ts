import { realDrugs, syntheticCorpus } from './bench/search-corpus.ts';
import { describeDrug } from './src/modules/search/catalogue.ts';
import { SearchIndex } from './src/modules/search/engine.ts';
import { drugRecordFromRow, Interner } from './src/modules/search/model.ts';
import { newDrugRow } from './src/modules/search/service.ts';
const g = (globalThis as any).gc;
const mb = () => { g(); g(); return Math.round(process.memoryUsage().heapUsed / 1e6); };
let records;
{
  const corpus = syntheticCorpus(await realDrugs(), 250000);
  const i = new Interner();
  records = corpus.map((input) => drugRecordFromRow(newDrugRow(input, 1, Date.now()), i));
}
const base = mb(); console.log('records', base);
const idx: any = new SearchIndex(describeDrug); idx.build(records);
console.log('index total', mb() - base);
idx.vocab = null; console.log('without vocab tree', mb() - base);
idx.postings = null; console.log('without postings', mb() - base);
idx.keys = null; idx.keyDocs = null; idx.keyBounds = null; console.log('without keys', mb() - base);
idx.termIds = null; idx.termText = null; console.log('without termIds', mb() - base);
console.log('rss', Math.round(process.memoryUsage().rss / 1e6));
