import Database from 'better-sqlite3';
const db = new Database('/work/scratch/db250/cps.sqlite', { readonly: true });
const rowsDb = db.prepare('select id, name from drugs order by id').all() as Array<{ id: string; name: string }>;
const names = rowsDb.map((r) => r.name); const ids = rowsDb.map((r) => r.id);
const n = names.length;
for (let round = 0; round < 3; round++) {
  const rows = Uint32Array.from({ length: n }, (_, i) => i);
  let t = performance.now();
  const run = Array.from(rows, (row) => ({ row, name: names[row]! }));
  run.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.row - b.row));
  const t1 = performance.now() - t;
  t = performance.now();
  const keyed: string[] = new Array(n);
  for (let i = 0; i < n; i++) { const row = rows[i]!; keyed[i] = `${names[row]!.toLowerCase()}\0${ids[row]}\0${String.fromCharCode(row >>> 16, row & 0xffff)}`; }
  keyed.sort();
  const b = keyed.map((s) => ((s.charCodeAt(s.length - 2) << 16) | s.charCodeAt(s.length - 1)) >>> 0);
  const t2 = performance.now() - t;
  console.log('comparator', Math.round(t1), 'default sort folded+id', Math.round(t2), b.length);
}
