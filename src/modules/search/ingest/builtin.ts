/**
 * The built-in catalogue (catalogue/drugs.ndjson and catalogue/labs.ndjson at the repository root),
 * imported when it differs from what this database last imported (its hash is kept in
 * catalogue_meta), so a new database searches out of the box and a release with a newer catalogue
 * updates it.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Database } from '../../../db/schema.ts';
import * as repo from '../repo.ts';
import { CatalogueImporter } from './importer.ts';
import { openDrugSource, openLabSource } from './sources.ts';

export const BUILTIN_DIR = fileURLToPath(new URL('../../../../catalogue/', import.meta.url));

/** Imports the built-in catalogue when it changed; whether it did. Imports are idempotent, so processes racing here is harmless. */
export async function ensureBuiltinCatalogue(db: Kysely<Database>, logger: Logger, dir = BUILTIN_DIR): Promise<boolean> {
  let drugs: Buffer;
  let labs: Buffer;
  try {
    [drugs, labs] = await Promise.all([readFile(`${dir}/drugs.ndjson`), readFile(`${dir}/labs.ndjson`)]);
  } catch {
    logger.warn({ dir }, 'built-in catalogue not found; search serves only imported data');
    return false;
  }
  const hash = createHash('sha256').update(drugs).update('\0').update(labs).digest('hex');
  if ((await repo.builtinHash(db)) === hash) return false;
  const labSource = await openLabSource(`${dir}/labs.ndjson`);
  const labSummary = await new CatalogueImporter({ db }).importLabs(labSource.rows, labSource.layout);
  const drugSource = await openDrugSource(`${dir}/drugs.ndjson`);
  const drugSummary = await new CatalogueImporter({ db }).importDrugs(drugSource.rows, drugSource.layout);
  await repo.setBuiltinHash(db, hash);
  logger.info({ drugs: drugSummary, labs: labSummary }, 'built-in catalogue imported');
  return true;
}
