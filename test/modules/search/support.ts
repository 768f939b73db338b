/** Shared setup of the search tests: a test app whose catalogue also holds the fixture files. */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestApp, createTestClient, type TestApp, type TestClient } from '../../support.ts';
import { CatalogueImporter } from '../../../src/modules/search/ingest/importer.ts';
import { openDrugSource, openLabSource } from '../../../src/modules/search/ingest/sources.ts';

export const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The real catalogues (never copied into the project): beside the clone, as on CI. */
export const SHARED_DATA = path.resolve(REPO_ROOT, '../shared/data');
export const HAS_SHARED_DATA = existsSync(path.join(SHARED_DATA, 'az_medicines_india_sample500.csv'));
export const shared = (file: string) => path.join(SHARED_DATA, file);

export async function importFile(t: TestApp, kind: 'drugs' | 'labs', file: string) {
  if (kind === 'drugs') {
    const source = await openDrugSource(file);
    return new CatalogueImporter({ db: t.ctx.storage.db }).importDrugs(source.rows, source.layout);
  }
  const source = await openLabSource(file);
  return new CatalogueImporter({ db: t.ctx.storage.db }).importLabs(source.rows, source.layout);
}

export interface SearchApp extends TestApp {
  client: TestClient;
  search(query: Record<string, string | number>, token?: string): Promise<{ status: number; body: any; headers: Record<string, unknown> }>;
}

/** A test app with the fixture catalogue imported (on top of the built-in one) and loaded. */
export async function createSearchApp(options: { env?: Record<string, string>; files?: Array<['drugs' | 'labs', string]> } = {}): Promise<SearchApp> {
  const t = await createTestApp({ env: options.env });
  const files = options.files ?? [
    ['labs', path.join(FIXTURES, 'labs.ndjson')],
    ['drugs', path.join(FIXTURES, 'drugs.ndjson')],
  ];
  await t.modules.search.catalogue.start();
  for (const [kind, file] of files) await importFile(t, kind, file);
  await t.modules.search.catalogue.refresh();
  const client = await createTestClient(t.ctx, { scopes: ['search'] });
  return {
    ...t,
    client,
    async search(query, token = client.token) {
      const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
      const response = await t.app.inject({
        method: 'GET',
        url: `/medical-db/v1/drugs-and-labs?${qs}`,
        headers: { authorization: `Bearer ${token}` },
      });
      return { status: response.statusCode, body: response.json(), headers: response.headers };
    },
  };
}
