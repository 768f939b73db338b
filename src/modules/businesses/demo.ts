/** Development only: an empty database gets a demo business whose credentials go to a 0600 file. */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AppContext } from '../../context.ts';
import { makePrivateDir } from '../../security/data-dir.ts';
import { BusinessService } from './service.ts';

const DEMO_BUSINESS_ID = 'biz_demo';

export async function createDemoBusiness(ctx: AppContext): Promise<void> {
  if (ctx.config.env !== 'development') return;
  // Before the business exists: with keys from the environment and PostgreSQL nothing else creates the
  // directory, and credentials that cannot be written once the business is stored are lost for good.
  makePrivateDir(ctx.config.dataDir);
  const created = await new BusinessService({ db: ctx.storage.db, chainSeal: ctx.audit.chainSeal }).createDemoBusiness(
    DEMO_BUSINESS_ID,
    'Demo Clinic',
  );
  if (!created) return;
  const file = path.join(ctx.config.dataDir, 'demo-credentials.json');
  writeFileSync(file, `${JSON.stringify(created, null, 2)}\n`, { mode: 0o600 });
  ctx.logger.info({ file }, 'created the "Demo Clinic" business; its API client credentials are in this file');
}
