import { openSqlite } from './src/db/index.ts';
import { openDrugSource } from './src/modules/search/sources.ts';
import { nameKey, makerKey, packKey } from './src/modules/search/derive.ts';
const src = await openDrugSource('../shared/data/onemg_drugs_2k.csv');
const m = new Map<string, any[]>();
for await (const r of src.rows) { if (!r) continue; const k = nameKey(r.name)+'|'+makerKey(r.manufacturer_name); (m.get(k) ?? m.set(k, []).get(k)!).push(r); }
let n=0;
for (const [k, rs] of m) { if (rs.length > 1 && new Set(rs.map(r => JSON.stringify(r))).size > 1) { if (n++ < 6) console.log(k, rs.map(r => [packKey(r.product_sku), JSON.stringify(r.composition), r.is_otc])); } }
console.log(n);
