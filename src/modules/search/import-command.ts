/**
 * `cps import drugs FILE` and `cps import labs FILE`: stream a catalogue file into the database with a
 * progress bar on stderr and a JSON summary on stdout. Running servers pick the change up by polling.
 */
import { SingleBar } from 'cli-progress';
import type { Kysely } from 'kysely';
import type { Config } from '../../config.ts';
import type { Database } from '../../db/schema.ts';
import { createLogger } from '../../logger.ts';
import { refreshStoredSnapshot } from './catalogue/snapshot-from-database.ts';
import { snapshotFileFor } from './catalogue/snapshots.ts';
import { CatalogueImporter, type ImportOptions, type ImportSummary } from './ingest/importer.ts';
import { openDrugSource, openLabSource, type Source } from './ingest/sources.ts';

async function withProgress(kind: string, source: Source<unknown>, work: (options: ImportOptions) => Promise<ImportSummary>): Promise<ImportSummary> {
  const bar = new SingleBar({
    stream: process.stderr,
    format: `import ${kind} (${source.layout}) [{bar}] {percentage}% | {rows} rows | {duration}s`,
    // Without a terminal (CI, logs) print a line now and then instead of redrawing.
    noTTYOutput: true,
    notTTYSchedule: 2000,
    hideCursor: true,
  });
  const totalKb = Math.max(1, Math.ceil(source.totalBytes / 1024));
  bar.start(totalKb, 0, { rows: 0 });
  try {
    const summary = await work({ onProgress: (read) => bar.update(Math.min(totalKb, Math.ceil(source.bytesRead() / 1024)), { rows: read }) });
    bar.update(totalKb, { rows: summary.read });
    return summary;
  } finally {
    bar.stop();
  }
}

/**
 * Imports the file, then, for a large catalogue that changed enough, builds the index and stores its
 * snapshot (see refreshStoredSnapshot), so that a server started after the import reads it instead of
 * building. The summary says whether it did.
 */
export async function runImport(
  db: Kysely<Database>,
  kind: 'drugs' | 'labs',
  file: string,
  config: Pick<Config, 'dataDir' | 'databaseUrl' | 'logLevel'>,
): Promise<ImportSummary & { index_snapshot_stored: boolean }> {
  let summary: ImportSummary;
  if (kind === 'drugs') {
    const source = await openDrugSource(file);
    summary = await withProgress(kind, source, (options) => new CatalogueImporter({ db }).importDrugs(source.rows, source.layout, options));
  } else {
    const source = await openLabSource(file);
    summary = await withProgress(kind, source, (options) => new CatalogueImporter({ db }).importLabs(source.rows, source.layout, options));
  }
  return { ...summary, index_snapshot_stored: await refreshIndexSnapshot(db, config) };
}

/**
 * A command's last step after changing the catalogue (`cps import`) or the code that reads its
 * snapshot (`cps migrate`, on a release): refreshStoredSnapshot, for this configuration's database and
 * data directory. Log lines go to stderr: stdout holds the command's JSON alone.
 */
export function refreshIndexSnapshot(db: Kysely<Database>, config: Pick<Config, 'dataDir' | 'databaseUrl' | 'logLevel'>): Promise<boolean> {
  return refreshStoredSnapshot(db, createLogger(config.logLevel, process.stderr), snapshotFileFor(config.dataDir, config.databaseUrl));
}
