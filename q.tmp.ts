import { openSqlite } from './src/db/index.ts';
import { Catalogue } from './src/modules/search/catalogue.ts';
import { parseQuery } from './src/modules/search/engine.ts';
import { createLogger } from './src/logger.ts';
const s = openSqlite('/tmp/cpsd/cps.sqlite');
const c = new Catalogue(s.db, createLogger('silent'), { builtin: false });
let t = performance.now(); await c.start(); console.log('load ms', performance.now() - t, c.drugs.size, c.labs.size); await c.stop();
const qs = process.argv.slice(2);
for (const arg of qs) {
  const [type, q] = arg.includes(':') ? arg.split(':') : ['drug', arg];
  const idx: any = type === 'lab' ? c.labs : c.drugs;
  const t0 = performance.now();
  const hits = idx.search(parseQuery(q!), 6);
  const ms = performance.now() - t0;
  console.log(`${q} (${ms.toFixed(2)}ms):`, hits.map((h: any) => `${h.record.name}${h.exact ? '*' : ''}${h.record.discontinued ? '[D]' : ''}`).join(' | '));
}
await s.destroy();
