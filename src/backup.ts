/**
 * `cps backup` and `cps restore` of the embedded SQLite database (PostgreSQL has its own tools: see
 * docs/4-operations.md). A backup is `VACUUM INTO` the copy, which is one read transaction: in WAL mode it sees
 * the database as of its start and blocks no writer. It writes the rows afresh, not the pages, so the
 * copy holds no free page and no deleted bytes (an erased patient's). The copy is a single
 * self-contained file (rollback journal mode), 0600, checked before it takes its name: the files of the
 * documents' files store (the data directory's documents folder) are put into it as rows of the
 * database store (embedDocumentFiles).
 * A restore checks the file (integrity, our schema, no migration this release does not know, the
 * master key opens its stored secrets), takes SQLite's exclusive lock on the database in place (which
 * any open connection, a server's or another command's, prevents), keeps that database (and the files
 * store's folder) aside and renames the checked copy into place.
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { parseMasterKey, type Config } from './config.ts';
import { migrations } from './db/migrate.ts';
import { FILES_FOLDER, sealedChunksIn, storedFilePath } from './modules/documents/index.ts';
import { keyAssociatedData } from './modules/webhooks/index.ts';
import { createPrivateFile, makePrivateDir, PRIVATE_FILE_MODE } from './security/data-dir.ts';
import { decrypt } from './security/encryption.ts';

/** A refusal to explain to the operator (exit code 1, no stack). */
export class BackupError extends Error {}

export const DATABASE_FILE = 'cps.sqlite';
const MASTER_KEY_FILE = 'master.key';
const JWT_KEY_FILE = 'jwt-signing-key.pem';

/** Tables every OpenCPS database has since its first migration. */
const CORE_TABLES = ['cps_migrations', 'businesses', 'api_clients', 'refresh_tokens'];

export interface BackupResult {
  file: string;
  bytes: number;
  /** The newest migration in the copy and how many it holds. */
  migrations: number;
  latest_migration: string | null;
  took_ms: number;
  /** Files of the files store the copy took in as rows; those already gone when it read them (their removal committed after the copy began). */
  document_files: { copied: number; gone: number };
  /** Where the master key the copy's encrypted columns need comes from: it is not in the copy. */
  master_key: string;
  signing_key: string;
}

export interface RestoreResult {
  restored: string;
  from: string;
  /** The database that was in place, kept under this name (null: there was none). */
  previous: string | null;
  /** The files store's folder that was in place, kept aside beside it (null: there was none). */
  previous_documents: string | null;
  migrations: number;
  /** Migrations of this release the copy lacks: the next start applies them. */
  pending_migrations: string[];
  /** Access log write-ahead segments a stopped process left: the next start writes them into the restored database. */
  audit_segments_left: number;
}

export function postgresRefusal(command: 'backup' | 'restore'): BackupError {
  return new BackupError(
    command === 'backup'
      ? 'cps backup copies the embedded SQLite database; with DATABASE_URL (PostgreSQL) use pg_dump -Fc (or pg_basebackup with WAL archiving for point-in-time recovery), see docs/4-operations.md "Backups"'
      : 'cps restore restores the embedded SQLite database; with DATABASE_URL (PostgreSQL) use pg_restore (or your base backup and WAL archive), see docs/4-operations.md "Backups"',
  );
}

export async function backupDatabase(
  config: Pick<Config, 'dataDir' | 'masterKey' | 'jwtPrivateKey'>,
  destination: string,
  force: boolean,
): Promise<BackupResult> {
  const started = Date.now();
  const source = path.join(config.dataDir, DATABASE_FILE);
  if (!existsSync(source)) throw new BackupError(`no database at ${source} (CPS_DATA_DIR)`);
  const target = path.resolve(destination);
  if (sameFile(target, source)) throw new BackupError(`${target} is the database itself`);
  if (!existsSync(path.dirname(target))) throw new BackupError(`the directory ${path.dirname(target)} does not exist`);
  if (existsSync(target) && !force) throw new BackupError(`${target} exists; pass --force to replace it`);

  const temporary = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  // Created 0600 before SQLite writes into it: the copy holds patients' data.
  createPrivateFile(temporary);
  try {
    const database = new SQLite(source, { fileMustExist: true, timeout: 5000 });
    try {
      database.prepare('VACUUM INTO ?').run(temporary);
    } finally {
      database.close();
    }
    const documents = await embedDocumentFiles(temporary, config.dataDir);
    const applied = checkCopy(temporary, 'the copy');
    syncFile(temporary);
    if (force) {
      renameSync(temporary, target);
    } else {
      // A link fails when the name was taken meanwhile: nothing the operator did not ask for is replaced.
      try {
        linkSync(temporary, target);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new BackupError(`${target} exists; pass --force to replace it`);
        throw error;
      }
    }
    syncDirectory(path.dirname(target));
    return {
      file: target,
      bytes: statSync(target).size,
      migrations: applied.length,
      latest_migration: applied.toSorted().at(-1) ?? null,
      took_ms: Date.now() - started,
      document_files: documents,
      master_key: config.masterKey
        ? 'CPS_MASTER_KEY (environment): not in the backup, keep it'
        : `${path.join(config.dataDir, MASTER_KEY_FILE)}: not in the backup, keep a copy`,
      signing_key: config.jwtPrivateKey ? 'CPS_JWT_PRIVATE_KEY (environment)' : `${path.join(config.dataDir, JWT_KEY_FILE)}: not in the backup`,
    };
  } finally {
    rmSync(temporary, { force: true });
  }
}

/**
 * Puts every file the copy references in the files store (documents and thumbnails: the data
 * directory's documents folder) into the copy's document_file_chunks, its sealed chunks as they are,
 * and relabels those files as the database store's: the copy needs nothing else to be restored. A
 * file is renamed into place before the row that names it commits, so every file the copy knows as
 * stored is there, unless its removal (an erasure, or a deleted document's sweep) committed after the
 * copy began: such a file is marked removed in the copy (forgetGoneFiles), and an erasure is applied
 * again after a restore anyway (erasures.log).
 */
async function embedDocumentFiles(file: string, dataDir: string): Promise<{ copied: number; gone: number }> {
  const copy = new SQLite(file, { fileMustExist: true });
  try {
    // The copy is flushed to the disk once, whole, after it is checked.
    copy.pragma('synchronous = OFF');
    if (!mayNameFilesStore(copy)) return { copied: 0, gone: 0 };
    const keys = (
      copy
        .prepare(
          `select storage_key as key from document_files where store = 'files' and storage_key is not null
           union select thumbnail_key from document_files where thumbnail_store = 'files' and thumbnail_key is not null`,
        )
        .all() as Array<{ key: string }>
    ).map((row) => row.key);
    const insert = copy.prepare('insert into document_file_chunks (storage_key, seq, data) values (?, ?, ?)');
    let copied = 0;
    const gone: string[] = [];
    for (const key of keys) {
      copy.exec('BEGIN');
      try {
        let seq = 0;
        for await (const data of sealedChunksIn(storedFilePath(dataDir, key), key)) insert.run(key, seq++, data);
        copy.exec('COMMIT');
        copied += 1;
      } catch (error) {
        copy.exec('ROLLBACK');
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
          throw new BackupError(`the document file ${storedFilePath(dataDir, key)} (storage key ${key}) cannot be read: ${(error as Error).message}`);
        }
        gone.push(key);
      }
    }
    forgetGoneFiles(copy, gone);
    copy.exec("update document_files set store = 'database' where store = 'files'");
    copy.exec("update document_files set thumbnail_store = 'database' where thumbnail_store = 'files'");
    return { copied, gone: gone.length };
  } finally {
    copy.close();
  }
}

/** Whether the database's rows may name files of the files store: a release before 0038 (thumbnails) stored none there. */
function mayNameFilesStore(database: SQLite.Database): boolean {
  const columns = database.prepare('select name from pragma_table_info(?)').all('document_files') as Array<{ name: string }>;
  return columns.some((column) => column.name === 'thumbnail_store');
}

/**
 * Refuses a copy whose rows name files of the files store: `cps backup` puts those into its copy, so
 * this one was made otherwise (a copy of the database file), and the restore keeps the files store's
 * folder aside: its documents would be rows without bytes.
 */
function checkHoldsItsFiles(copy: SQLite.Database, source: string): void {
  if (!mayNameFilesStore(copy)) return;
  const { n } = copy.prepare("select count(*) as n from document_files where store = 'files' or thumbnail_store = 'files'").get() as { n: number };
  if (n > 0) {
    throw new BackupError(
      `${source} names ${n} document files kept in the files store (the data directory's documents folder), which it does not hold: it was not made by cps backup; restore a copy cps backup made`,
    );
  }
}

/**
 * Leaves no row in the copy that promises bytes it lacks: a stored file gone goes to 'removing', as a
 * delete leaves it (a download answers 404 and the restored service's sweep deletes the row), a
 * thumbnail gone is forgotten (the file is served without one), and their keys go. A file still being
 * received when the copy began keeps its row: the sweep gives its form back, as after a crash.
 */
function forgetGoneFiles(copy: SQLite.Database, gone: readonly string[]): void {
  const stored = copy.prepare("update document_files set state = 'removing' where store = 'files' and storage_key = ? and state = 'stored'");
  const thumbnail = copy.prepare(
    "update document_files set thumbnail_store = null, thumbnail_key = null, thumbnail_size = null where thumbnail_store = 'files' and thumbnail_key = ?",
  );
  const key = copy.prepare('delete from document_file_keys where storage_key = ?');
  copy.transaction(() => {
    for (const storageKey of gone) {
      stored.run(storageKey);
      thumbnail.run(storageKey);
      key.run(storageKey);
    }
  })();
}

export async function restoreDatabase(config: Pick<Config, 'dataDir' | 'masterKey'>, from: string, force: boolean): Promise<RestoreResult> {
  const source = path.resolve(from);
  const live = path.join(config.dataDir, DATABASE_FILE);
  if (!existsSync(source)) throw new BackupError(`${source} does not exist`);
  if (sameFile(source, live)) throw new BackupError(`${source} is the database itself`);
  makePrivateDir(config.dataDir);

  // The copy is made and checked in the data directory, so that the last step is a rename.
  const temporary = path.join(config.dataDir, `${DATABASE_FILE}.restore-${process.pid}-${randomBytes(4).toString('hex')}.tmp`);
  createPrivateFile(temporary);
  let lock: SQLite.Database | null = null;
  try {
    copyFileSync(source, temporary);
    chmodSync(temporary, PRIVATE_FILE_MODE);
    const applied = checkCopy(temporary, source, (copy) => {
      checkHoldsItsFiles(copy, source);
      checkMasterKey(copy, masterKeyOf(config), force);
    });
    syncFile(temporary);

    let previous: string | null = null;
    let previousDocuments: string | null = null;
    if (existsSync(live)) {
      lock = lockDatabase(live, config.dataDir);
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      previous = path.join(config.dataDir, `${DATABASE_FILE}.before-restore-${stamp}`);
      renameSync(live, previous);
      // The files store's files belong with the database kept aside: the copy holds its own files as rows.
      const documents = path.join(config.dataDir, FILES_FOLDER);
      if (existsSync(documents)) {
        previousDocuments = `${documents}.before-restore-${stamp}`;
        renameSync(documents, previousDocuments);
      }
    }
    // A -wal or -shm file left beside the name would be read as part of the restored database.
    for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${live}${suffix}`, { force: true });
    try {
      renameSync(temporary, live);
    } catch (error) {
      if (previous !== null) renameSync(previous, live);
      if (previousDocuments !== null) renameSync(previousDocuments, path.join(config.dataDir, FILES_FOLDER));
      throw error;
    }
    syncDirectory(config.dataDir);
    const known = Object.keys(migrations);
    return {
      restored: live,
      from: source,
      previous,
      previous_documents: previousDocuments,
      migrations: applied.length,
      pending_migrations: known.filter((name) => !applied.includes(name)).sort(),
      audit_segments_left: auditSegments(config.dataDir),
    };
  } finally {
    lock?.close();
    rmSync(temporary, { force: true });
  }
}

/**
 * Takes SQLite's exclusive lock on the database in place, or refuses: every connection open on it
 * (the server's, a worker's, a cps command's) holds a lock that prevents it. Held, it folds the
 * write-ahead log into the file (so the file kept aside is whole) and stays held until the swap is done.
 */
function lockDatabase(live: string, dataDir: string): SQLite.Database {
  const lock = new SQLite(live, { fileMustExist: true, timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE');
    lock.exec('COMMIT');
    lock.pragma('journal_mode = DELETE');
    return lock;
  } catch (error) {
    lock.close();
    if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) {
      throw new BackupError(`the database in ${dataDir} is in use: stop the server (and every cps command) using this data directory first`);
    }
    throw error;
  }
}

/** Checks a copy of the database and puts it in rollback journal mode; returns the migrations it holds. */
function checkCopy(file: string, name: string, extra?: (copy: SQLite.Database) => void): string[] {
  let copy: SQLite.Database;
  try {
    copy = new SQLite(file, { fileMustExist: true });
  } catch (error) {
    throw new BackupError(`${name} cannot be opened: ${(error as Error).message}`);
  }
  try {
    let problems: string[];
    try {
      problems = (copy.pragma('integrity_check') as Array<{ integrity_check: string }>).map((row) => row.integrity_check);
    } catch (error) {
      throw new BackupError(`${name} cannot be read as a SQLite database: ${(error as Error).message}`);
    }
    if (problems.length !== 1 || problems[0] !== 'ok')
      throw new BackupError(`${name} fails PRAGMA integrity_check: ${problems.slice(0, 5).join('; ')}`);
    const tables = new Set(
      (copy.prepare("select name from sqlite_master where type = 'table'").all() as Array<{ name: string }>).map((row) => row.name),
    );
    const missing = CORE_TABLES.filter((table) => !tables.has(table));
    if (missing.length > 0) throw new BackupError(`${name} is not an OpenCPS database (no ${missing.join(', ')} table)`);
    const applied = (copy.prepare('select name from cps_migrations').all() as Array<{ name: string }>).map((row) => row.name);
    const unknown = applied.filter((migration) => !(migration in migrations));
    if (unknown.length > 0) {
      throw new BackupError(
        `${name} was made by a newer release (migrations ${unknown.sort().join(', ')} are unknown to this one): restore it with that release`,
      );
    }
    extra?.(copy);
    copy.pragma('journal_mode = DELETE');
    return applied;
  } finally {
    copy.close();
  }
}

/** The master key a server on this data directory would use, without creating one. */
function masterKeyOf(config: Pick<Config, 'dataDir' | 'masterKey'>): Buffer | null {
  if (config.masterKey) return config.masterKey;
  const file = path.join(config.dataDir, MASTER_KEY_FILE);
  return existsSync(file) ? parseMasterKey(readFileSync(file, 'utf8').trim(), `CPS_MASTER_KEY (from ${file})`) : null;
}

/**
 * Webhook signing keys, push credentials and stored idempotent responses are encrypted under the
 * master key, which no backup holds: a copy restored beside another key has them all unreadable.
 */
function checkMasterKey(copy: SQLite.Database, masterKey: Buffer | null, force: boolean): void {
  if (force) return;
  const sample =
    (copy.prepare('select id, signing_key as sealed from webhook_subscriptions limit 1').get() as { id: string; sealed: string } | undefined) ?? null;
  if (sample === null) return;
  const advice = `restore the master key the backup was made with (CPS_MASTER_KEY, or ${MASTER_KEY_FILE} in the data directory), or pass --force to restore with its secrets unreadable`;
  if (masterKey === null) throw new BackupError(`the backup holds encrypted secrets and no master key is set: ${advice}`);
  try {
    decrypt(masterKey, sample.sealed, keyAssociatedData(sample.id));
  } catch {
    throw new BackupError(`the master key in use does not open the backup's encrypted secrets: ${advice}`);
  }
}

function auditSegments(dataDir: string): number {
  try {
    return readdirSync(path.join(dataDir, 'audit')).filter((name) => name.endsWith('.wal')).length;
  } catch {
    return 0;
  }
}

function sameFile(a: string, b: string): boolean {
  if (path.resolve(a) === path.resolve(b)) return true;
  try {
    const [x, y] = [statSync(a), statSync(b)];
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

function syncFile(file: string): void {
  const fd = openSync(file, 'r+');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
