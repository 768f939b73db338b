/**
 * A process writing to the SQLite database of CPS_DATA_DIR without pause, for the backup tests: it
 * fills the database past a few thousand pages, writes `ready`, then inserts one business per
 * transaction and writes its id on stdout once committed. Stops on SIGTERM.
 */
import { openStorage } from '../src/db/index.ts';
import { migrateToLatest } from '../src/db/migrate.ts';

const storage = openStorage({ databaseUrl: null, dataDir: process.env.CPS_DATA_DIR! });
await migrateToLatest(storage.db);
let stopping = false;
process.on('SIGTERM', () => {
  stopping = true;
});
const filler = 'x'.repeat(400);
for (let chunk = 0; chunk < 5; chunk++) {
  await storage.db
    .insertInto('businesses')
    .values(Array.from({ length: 2000 }, (_, i) => ({ id: `fill-${process.pid}-${chunk}-${i}`, name: `${filler}${i}`, created_at: Date.now() })))
    .execute();
}
process.stdout.write('ready\n');
for (let i = 0; !stopping; i++) {
  const id = `w-${process.pid}-${i}`;
  await storage.db
    .insertInto('businesses')
    .values({ id, name: `${filler}${i}`, created_at: Date.now() })
    .execute();
  process.stdout.write(`${id}\n`);
  if (i % 50 === 0) await new Promise((resolve) => setImmediate(resolve));
}
await storage.destroy();
