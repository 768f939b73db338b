/**
 * The key of index snapshots: a hash of the contents of the code that shapes them. A snapshot made by
 * other code is ignored rather than trusted; a release that changes only the rest of the module (the
 * route, the importers) keeps using it.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MODULE_DIR = fileURLToPath(new URL('../', import.meta.url));
/**
 * What shapes a snapshot, under the module's folder: the pure index (records, tokenising, fields, the
 * index's and the store's layout, the file format), the catalogue (records from rows, the snapshot's
 * fields and sections) and the rows read (repo.ts). Folders are taken whole, whatever files they hold.
 */
export const SHAPERS = ['index', 'catalogue', 'repo.ts'];
/** And, in the built-in catalogue's folder, the official names the index joins into words (synonyms.ts). */
export const CATALOGUE_DIR = fileURLToPath(new URL('../../../../catalogue/', import.meta.url));
export const CATALOGUE_SHAPERS = ['synonyms.json'];

/** The files of `entries` (files or folders, under `root`), as sorted paths relative to `root` with forward slashes. */
function filesOf(root: string, entries: string[]): string[] {
  const files: string[] = [];
  for (const entry of entries) {
    const full = path.join(root, entry);
    if (!statSync(full).isDirectory()) {
      files.push(entry);
      continue;
    }
    for (const name of readdirSync(full, { recursive: true, encoding: 'utf8' })) {
      if (statSync(path.join(full, name)).isFile()) files.push(path.posix.join(entry, name.split(path.sep).join('/')));
    }
  }
  return files.sort();
}

/** A hash of the names and contents of the files of `entries` (files or folders) under `root`. */
export function contentHash(root: string, entries: string[]): string {
  const hash = createHash('sha256');
  for (const file of filesOf(root, entries))
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(path.join(root, file)))
      .update('\0');
  return hash.digest('hex');
}

let key: string | null = null;

/** This code's snapshot key (computed once per process). */
export function snapshotKey(): string {
  key ??= createHash('sha256').update(contentHash(MODULE_DIR, SHAPERS)).update(contentHash(CATALOGUE_DIR, CATALOGUE_SHAPERS)).digest('hex');
  return key;
}
