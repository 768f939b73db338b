/**
 * The record of `cps backup` and `cps restore` runs: the command writes one row a run, the admin API's
 * operations (and the console's health page) read the last ones. A row holds no secret and no directory:
 * the file's name only, and a failure's reason with every path in it cut to its file name.
 */
import path from 'node:path';
import type { Db } from '../../db/index.ts';
import { newId } from '../../db/ids.ts';
import type { BackupRunsTable } from '../../db/schema.ts';

export type BackupRun = Omit<BackupRunsTable, 'id'>;

/** How many runs the operations answer lists. */
export const BACKUP_RUNS_LISTED = 10;
const ERROR_LENGTH = 500;

export async function recordBackupRun(db: Db, run: BackupRun): Promise<void> {
  await db
    .insertInto('backup_runs')
    .values({
      id: newId('bkr'),
      ...run,
      file: run.file === null ? null : path.basename(run.file),
      error: run.error === null ? null : withoutDirectories(run.error),
    })
    .execute();
}

/** A message with each absolute path in it cut to its last part (a file or directory name). */
export function withoutDirectories(message: string): string {
  return message.replace(/(?<![\w.~-])\/(?:[^\s/'"`]+\/)*([^\s/'"`]*)/g, (_path, last: string) => last || '/').slice(0, ERROR_LENGTH);
}

/** The last runs, newest first, and the last backup that succeeded (which may be older than all of them). */
export async function lastBackupRuns(db: Db): Promise<{ runs: BackupRun[]; last_succeeded: BackupRun | null }> {
  const columns = ['command', 'started_at', 'finished_at', 'outcome', 'bytes', 'file', 'error'] as const;
  const [runs, succeeded] = await Promise.all([
    db.selectFrom('backup_runs').select(columns).orderBy('started_at', 'desc').orderBy('id', 'desc').limit(BACKUP_RUNS_LISTED).execute(),
    db
      .selectFrom('backup_runs')
      .select(columns)
      .where('command', '=', 'backup')
      .where('outcome', '=', 'succeeded')
      .orderBy('started_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst(),
  ]);
  return { runs, last_succeeded: succeeded ?? null };
}
