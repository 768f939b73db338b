/**
 * The embedded store with SQLite (`files`): each file's bytes in a file of its own in the data
 * directory, `documents/<2 hex>/<SHA-256 of the storage key>`, rather than as rows of the database,
 * whose writes all queue on one lock and the event loop. The name comes from the storage key the
 * service made (service.ts, storageKeyOf), hashed, so no client input reaches a path.
 *
 * The bytes are sealed as the database store seals them (file-store.ts: the file's own key in
 * document_file_keys, each chunk under it with the same associated data), and each sealed chunk is
 * written after its length (4 bytes, big-endian): a file's chunks, in order, are the rows
 * document_file_chunks would hold, which is how `cps backup` puts them into its copy (backup.ts).
 * A write goes to a temporary file in `documents/incoming/` (same disk, so the rename is atomic), is
 * flushed to the disk (fsync, on libuv's pool) and renamed into place, and the folder flushed, before
 * the caller commits the file; a failed write removes its temporary file, and `removeAbandoned`
 * removes those a process that died left behind (reading that one folder, not every file's).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.ts';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../../security/data-dir.ts';
import {
  type FileStore,
  openChunk,
  openFileKey,
  removeStored,
  SEALED_CHUNK_BYTES,
  sealedRuns,
  storeNewFileKey,
  throwIfRemoved,
} from './file-store.ts';

/** The folder of the data directory the store keeps its files in. */
export const FILES_FOLDER = 'documents';
/** Where writes under way keep their temporary files (no hash's 2-hex folder has this name). */
const INCOMING = 'incoming';
const LENGTH = 4;

export class FileSystemStore implements FileStore {
  readonly name = 'files';
  readonly #db: Kysely<Database>;
  readonly #masterKey: Buffer;
  readonly #root: string;
  readonly #dataDir: string;
  /** Folders known to exist and flushed into their parents, so that a write makes its folder once. */
  readonly #made = new Set<string>();
  /** Temporary files of this process's writes under way, which `removeAbandoned` leaves whatever their age. */
  readonly #writing = new Set<string>();

  constructor(db: Kysely<Database>, masterKey: Buffer, dataDir: string) {
    this.#db = db;
    this.#masterKey = masterKey;
    this.#dataDir = dataDir;
    this.#root = path.join(dataDir, FILES_FOLDER);
  }

  async write(key: string, source: AsyncIterable<Buffer>): Promise<number> {
    const target = this.pathOf(key);
    const temporary = path.join(this.#root, INCOMING, `${path.basename(target)}.${randomBytes(6).toString('hex')}`);
    const counted = { size: 0 };
    let handle: FileHandle | null = null;
    this.#writing.add(path.basename(temporary));
    try {
      const fileKey = await storeNewFileKey(this.#db, this.#masterKey, key);
      await this.#folder(path.dirname(target));
      await this.#folder(path.dirname(temporary));
      handle = await open(temporary, 'wx', PRIVATE_FILE_MODE);
      // Each chunk's length goes before it, as a full chunk's until the chunk ends shorter (only a
      // file's last data chunk can), when it is put right.
      let chunkAt = 0;
      let lengthWritten: number | null = null;
      let position = 0;
      for await (const run of sealedRuns(fileKey, key, source, counted)) {
        const parts = run.parts;
        let bytes = run.bytes;
        if (lengthWritten === null) {
          chunkAt = position;
          lengthWritten = run.chunkLength ?? SEALED_CHUNK_BYTES;
          parts.unshift(lengthOf(lengthWritten));
          bytes += LENGTH;
        }
        await writeFully(key, bytes, handle.writev(parts));
        position += bytes;
        if (run.chunkLength === null) continue;
        if (run.chunkLength !== lengthWritten) await writeFully(key, LENGTH, handle.write(lengthOf(run.chunkLength), 0, LENGTH, chunkAt));
        lengthWritten = null;
      }
      await handle.sync();
      await handle.close();
      handle = null;
      await rename(temporary, target);
      await syncFolder(path.dirname(target));
      return counted.size;
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await rm(temporary, { force: true });
      await this.remove([key]);
      throw error;
    } finally {
      this.#writing.delete(path.basename(temporary));
    }
  }

  async *read(key: string): AsyncIterable<Buffer> {
    const { fileKey, format } = await openFileKey(this.#db, this.#masterKey, key);
    let handle: FileHandle;
    try {
      handle = await open(this.pathOf(key), 'r');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        await throwIfRemoved(this.#db, key);
        throw new Error(`stored file ${key} is missing`);
      }
      throw error;
    }
    try {
      const { size } = await handle.stat();
      let at = 0;
      for (let seq = 0; ; seq += 1) {
        const data = await readChunk(handle, at, size, key, seq);
        at += LENGTH + data.length;
        // The last chunk is the one the file ends with: a file cut short at a chunk's end fails to open too.
        const last = at === size;
        const plain = openChunk(fileKey, data, key, seq, last, format);
        if (plain.length > 0) yield plain;
        if (last) return;
      }
    } finally {
      await handle.close();
    }
  }

  async remove(keys: readonly string[]): Promise<void> {
    await removeStored(this.#db, keys);
    await this.unlink(keys);
  }

  /** Deletes the files of `keys` from the disk only: the erasure deletes their keys in its own transaction. */
  async unlink(keys: readonly string[]): Promise<void> {
    for (const key of keys) await rm(this.pathOf(key), { force: true });
  }

  /**
   * Removes the temporary files of writes older than `olderThanMs` that never finished (a process died
   * meanwhile). This process's writes under way are known and kept; another process's write is judged
   * by its file's last change, which a live upload renews within the request timeout (at most an hour).
   */
  async removeAbandoned(olderThanMs: number, now = Date.now()): Promise<number> {
    const incoming = path.join(this.#root, INCOMING);
    let removed = 0;
    for (const name of await readdir(incoming).catch(() => [] as string[])) {
      if (this.#writing.has(name)) continue;
      const file = path.join(incoming, name);
      const info = await stat(file).catch(() => null);
      if (info && info.mtimeMs < now - olderThanMs) {
        await unlink(file).catch(() => undefined);
        removed += 1;
      }
    }
    return removed;
  }

  /** Where the file under `key` is kept. */
  pathOf(key: string): string {
    return storedFilePath(this.#dataDir, key);
  }

  async #folder(dir: string): Promise<void> {
    if (this.#made.has(dir)) return;
    await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    // A file renamed into a folder whose own entry a crash loses is lost with it: each folder's entry
    // in its parent is flushed up to the data directory, once per process (another process, or a
    // write beside this one, may have made it and not flushed it yet).
    const dataDir = path.dirname(this.#root);
    for (let at = dir; at !== dataDir && at !== path.dirname(at); at = path.dirname(at)) await syncFolder(path.dirname(at));
    this.#made.add(dir);
  }
}

/** Where the files store of `dataDir` keeps the file under `key`: a name made from the key's hash, never from its text. */
export function storedFilePath(dataDir: string, key: string): string {
  const hash = createHash('sha256').update(key).digest('hex');
  return path.join(dataDir, FILES_FOLDER, hash.slice(0, 2), hash);
}

/** Each sealed chunk of the file under `key` at `file`, as it is stored (`cps backup` copies them as rows of document_file_chunks). */
export async function* sealedChunksIn(file: string, key: string): AsyncIterable<Buffer> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    for (let at = 0, seq = 0; at < size; seq += 1) {
      const data = await readChunk(handle, at, size, key, seq);
      at += LENGTH + data.length;
      yield data;
    }
  } finally {
    await handle.close();
  }
}

/** The sealed chunk that starts at `at`, after its length; throws when the file ends before it does. */
async function readChunk(handle: FileHandle, at: number, size: number, key: string, seq: number): Promise<Buffer> {
  if (at + LENGTH > size) throw new Error(`stored file ${key} is cut short before chunk ${seq}`);
  const head = Buffer.allocUnsafe(LENGTH);
  await handle.read(head, 0, LENGTH, at);
  const length = head.readUInt32BE(0);
  if (length > SEALED_CHUNK_BYTES || at + LENGTH + length > size) throw new Error(`stored file ${key}: chunk ${seq} is malformed or cut short`);
  const data = Buffer.allocUnsafe(length);
  const { bytesRead } = await handle.read(data, 0, length, at + LENGTH);
  if (bytesRead !== length) throw new Error(`stored file ${key}: chunk ${seq} is cut short`);
  return data;
}

/** A chunk's length as it is written before the chunk. */
function lengthOf(chunkLength: number): Buffer {
  const length = Buffer.allocUnsafe(LENGTH);
  length.writeUInt32BE(chunkLength);
  return length;
}

/** Fails when a write lands short without failing (a disk filling up): a file cut so would fail to open later. */
async function writeFully(key: string, bytes: number, write: Promise<{ bytesWritten: number }>): Promise<void> {
  const { bytesWritten } = await write;
  if (bytesWritten !== bytes) throw new Error(`stored file ${key}: chunk written short (${bytesWritten} of ${bytes} bytes; is the disk full?)`);
}

/** Flushes a folder's entries (a rename in it) to the disk. */
async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
