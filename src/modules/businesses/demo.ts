/**
 * Development only: an empty database gets a demo business whose credentials go to a 0600 file.
 * Its fixed id makes the insert a claim, so of several processes starting together one creates it.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AppContext } from '../../context.ts';
import { inTransaction } from '../../db/index.ts';
import { claimBusiness, countBusinesses } from './repo.ts';
import { createClient } from './service.ts';

const DEMO_BUSINESS_ID = 'biz_demo';

export async function createDemoBusiness(ctx: AppContext): Promise<void> {
  if (ctx.config.env !== 'development' || (await countBusinesses(ctx.storage.db)) > 0) return;
  const created = await inTransaction(ctx.storage.db, async (trx) => {
    if (!(await claimBusiness(trx, { id: DEMO_BUSINESS_ID, name: 'Demo Clinic', created_at: Date.now() }))) return null;
    const { scopes: _all, ...client } = await createClient(trx, DEMO_BUSINESS_ID);
    return client;
  });
  if (!created) return;
  const file = path.join(ctx.config.dataDir, 'demo-credentials.json');
  writeFileSync(file, `${JSON.stringify(created, null, 2)}\n`, { mode: 0o600 });
  ctx.logger.info({ file }, 'created the "Demo Clinic" business; its API client credentials are in this file');
}
