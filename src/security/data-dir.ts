/**
 * CPS_DATA_DIR holds the SQLite database (patients' names and mobile numbers), the development keys,
 * the demo credentials, search index snapshots and the documents' files store (`documents/`, its
 * folders in it): the directory and its folders are created 0700 and each file 0600, whatever the
 * process umask. Existing modes are left as the operator set them; a start that finds one of them
 * wider says so in a warning.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** The files the service writes in the data directory. */
const SERVICE_FILES =
  /^(cps\.sqlite(-wal|-shm|-journal|\.before-restore-[0-9TZ-]+)?|jwt-signing-key\.pem|master\.key|demo-credentials\.json|search-index-[0-9a-f]+\.bin|erasures\.log)$/;

/**
 * The service's folders: the documents' files store (and one a restore kept aside) and the access
 * log's write-ahead files. Their folders (one level down: `incoming` and the hash prefixes) are
 * checked too; the files in them are reachable only through those folders.
 */
const SERVICE_DIRS = /^(documents(\.before-restore-[0-9TZ-]+)?|audit)$/;

/** Creates `dir` (and its parents) if missing; the directory itself is then 0700, whatever the umask. */
export function makePrivateDir(dir: string): void {
  if (existsSync(dir)) return;
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  chmodSync(dir, PRIVATE_DIR_MODE);
}

/**
 * Creates `file` empty and 0600 if it does not exist, so that whatever opens it next (SQLite, which
 * also gives its -wal, -shm and -journal files the database file's mode) finds a private file.
 */
export function createPrivateFile(file: string): void {
  try {
    closeSync(openSync(file, 'wx', PRIVATE_FILE_MODE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw error;
  }
  chmodSync(file, PRIVATE_FILE_MODE);
}

export interface WideMode {
  path: string;
  /** Octal, e.g. "0644". */
  mode: string;
  expected: string;
}

const octal = (mode: number) => `0${(mode & 0o777).toString(8)}`;

/** The data directory and the service's files in it that group or others may read, write or enter. */
export function findWideModes(dataDir: string): WideMode[] {
  let dirStat: Stats;
  try {
    dirStat = statSync(dataDir);
  } catch {
    return [];
  }
  const wide: WideMode[] = [];
  if (dirStat.mode & 0o077) wide.push({ path: dataDir, mode: octal(dirStat.mode), expected: octal(PRIVATE_DIR_MODE) });
  for (const name of readdirSync(dataDir)) {
    if (SERVICE_DIRS.test(name)) {
      const dir = path.join(dataDir, name);
      if (!checkDir(dir, wide)) continue;
      for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) checkDir(path.join(dir, entry.name), wide);
      continue;
    }
    if (!SERVICE_FILES.test(name)) continue;
    const file = path.join(dataDir, name);
    try {
      const mode = statSync(file).mode;
      if (mode & 0o077) wide.push({ path: file, mode: octal(mode), expected: octal(PRIVATE_FILE_MODE) });
    } catch {
      // Removed meanwhile (a -wal or -shm file at a checkpoint).
    }
  }
  return wide;
}

/** Adds `dir` to `wide` if it is wider than 0700; answers whether it is a directory. */
function checkDir(dir: string, wide: WideMode[]): boolean {
  const info = statSync(dir, { throwIfNoEntry: false });
  if (!info?.isDirectory()) return false;
  if (info.mode & 0o077) wide.push({ path: dir, mode: octal(info.mode), expected: octal(PRIVATE_DIR_MODE) });
  return true;
}

/** One warning for each path wider than it should be, naming the path, its mode and the mode expected. */
export function warnAboutWideModes(dataDir: string, logger: Logger): WideMode[] {
  const wide = findWideModes(dataDir);
  for (const entry of wide) {
    logger.warn(
      entry,
      `${entry.path} has mode ${entry.mode}: other users on this machine can reach it; expected ${entry.expected} (chmod ${entry.expected.slice(1)} '${entry.path}')`,
    );
  }
  return wide;
}
