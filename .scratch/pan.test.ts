import { it } from 'node:test';
import path from 'node:path';
import { createTestApp } from '../test/helpers.ts';
import { catalogueOf } from '../src/modules/search/routes.ts';
import { importFile, FIXTURES } from '../test/modules/search/support.ts';
it('pan', async () => {
  const t = await createTestApp();
  await catalogueOf(t.ctx).start();
  const before = await t.ctx.storage.db.selectFrom('drugs').select(['id', 'name', 'seq']).where('name', 'in', ['Pan 40 Tablet', 'PAN 40 Tablet']).execute();
  console.log(before, await importFile(t, 'drugs', path.join(FIXTURES, 'drugs.ndjson')));
  const after = await t.ctx.storage.db.selectFrom('drugs').select(['id', 'name', 'seq']).where('name', 'in', ['Pan 40 Tablet', 'PAN 40 Tablet']).execute();
  console.log(after);
  await t.close();
});
