/**
 * Where a document's bytes live. A backend stores a stream under a key, streams it back and removes
 * it; the documents service keeps which backend and key hold each file (document_files), so files
 * stored by one backend stay readable after another becomes the default.
 *
 * The database backend, `DatabaseFileStore` (PostgreSQL's default), keeps the bytes in the database
 * itself (document_file_chunks): `npm start` needs no other service, and several server processes on
 * one PostgreSQL share the files with no shared disk. With SQLite the default is its sibling,
 * file-system-store.ts, which seals the same chunks (the functions below) into a file. Each file has a random key of its own, kept sealed
 * under the master key (document_file_keys: a master key rotation re-seals these, not the bytes).
 * Each chunk of CHUNK_BYTES is one row, sealed with AES-256-GCM under the file's key, a fresh nonce
 * per chunk and, as associated data, the storage key, the chunk's number and whether it is the last:
 * a chunk moved to another file or position, a chunk altered, or a file cut short fails to open.
 * A file ends with an empty chunk sealed as the last (format 2), so that each full chunk is written
 * as soon as it fills; files of format 1 (their sealed key without the "2:" prefix) marked their last
 * data chunk instead, which meant holding a full chunk back until the next arrived. A write holds at
 * most one chunk's ciphertext; a read one chunk batch (streamed, never the whole file).
 */
import { type CipherGCM, createCipheriv, createDecipheriv, createSecretKey, type KeyObject, randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import { isPostgres } from '../../db/dialect.ts';
import type { Db } from '../../db/index.ts';
import type { Database } from '../../db/schema.ts';
import { AppError } from '../../errors.ts';
import { decrypt, encrypt } from '../../security/encryption.ts';

export interface FileStore {
  /** Its name, as document_files.store records it. */
  readonly name: string;
  /** Stores `source` under `key`; answers its size in bytes. A failure leaves nothing stored under `key`. */
  write(key: string, source: AsyncIterable<Buffer>): Promise<number>;
  /** The bytes stored under `key`; the iteration throws if they were altered or cut short. */
  read(key: string): AsyncIterable<Buffer>;
  /** Removes what is stored under each key (a key with nothing stored is no error). */
  remove(keys: readonly string[]): Promise<void>;
  /** A store clients upload to and download from themselves (object-store.ts); absent: through this service. */
  readonly direct?: DirectStore;
}

/** What a store that clients reach directly offers besides a FileStore's. */
export interface DirectStore {
  /** A presigned form that takes exactly one file of `contentType` and `size` bytes under `key`, then redirects to `redirect`. */
  uploadForm(
    key: string,
    form: { contentType: string; size: number; expiresInSeconds: number; redirect: string },
  ): Promise<{ url: string; fields: Record<string, string> }>;
  /** A presigned GET of a minute. */
  downloadUrl(key: string, file: { contentType: string; fileName: string }): Promise<string>;
  /** The size of what is stored under `key`, or null when nothing is. */
  size(key: string): Promise<number | null>;
  /** The `bytes` bytes stored under `key` from offset `start` (fewer past its end); `start` within what is stored. */
  range(key: string, start: number, bytes: number): Promise<Buffer>;
  copy(from: string, to: string): Promise<void>;
}

/** Bytes of plaintext per stored chunk. */
export const CHUNK_BYTES = 256 * 1024;
/** The chunk format new files are written in (see the top of this file). */
const FORMAT = 2;
const NONCE = 12;
const TAG = 16;
/** The largest sealed chunk. */
export const SEALED_CHUNK_BYTES = NONCE + CHUNK_BYTES + TAG;
/** Chunks fetched by one read statement. */
const READ_BATCH = 4;

export class DatabaseFileStore implements FileStore {
  readonly name = 'database';
  readonly #db: Kysely<Database>;
  readonly #masterKey: Buffer;

  readonly #postgres: boolean;

  constructor(db: Kysely<Database>, masterKey: Buffer) {
    this.#db = db;
    this.#masterKey = masterKey;
    this.#postgres = isPostgres(db);
  }

  async write(key: string, source: AsyncIterable<Buffer>): Promise<number> {
    const counted = { size: 0 };
    try {
      const fileKey = await storeNewFileKey(this.#db, this.#masterKey, key);
      let seq = 0;
      // One buffer joins every chunk's runs: each insert has taken its bytes (pg into its message,
      // SQLite bound them) before it resolves, so the next chunk may overwrite them.
      const joined = Buffer.allocUnsafe(SEALED_CHUNK_BYTES);
      let at = 0;
      for await (const run of sealedRuns(fileKey, key, source, counted)) {
        for (const part of run.parts) at += part.copy(joined, at);
        if (run.chunkLength === null) continue;
        const data = joined.subarray(0, at);
        at = 0;
        if (this.#postgres) {
          await sql`insert into document_file_chunks (storage_key, seq, data)
            select ${key}, ${seq}, ${data} from (select set_config('synchronous_commit', 'off', true)) as unflushed`.execute(this.#db);
        } else {
          await this.#db.insertInto('document_file_chunks').values({ storage_key: key, seq, data }).execute();
        }
        seq += 1;
      }
      return counted.size;
    } catch (error) {
      await this.remove([key]);
      throw error;
    }
  }

  async *read(key: string): AsyncIterable<Buffer> {
    const { fileKey, format } = await openFileKey(this.#db, this.#masterKey, key);
    let seq = 0;
    for (;;) {
      const rows = await this.#db
        .selectFrom('document_file_chunks')
        .select(['seq', 'data'])
        .where('storage_key', '=', key)
        .where('seq', '>=', seq)
        .orderBy('seq')
        .limit(READ_BATCH + 1)
        .execute();
      if (rows.length === 0) {
        await throwIfRemoved(this.#db, key);
        throw new Error(`stored file ${key} is missing or cut short`);
      }
      const now = rows.slice(0, READ_BATCH);
      for (const [index, row] of now.entries()) {
        if (Number(row.seq) !== seq) throw new Error(`stored file ${key} lacks chunk ${seq}`);
        const last = index === rows.length - 1;
        const plain = openChunk(fileKey, Buffer.isBuffer(row.data) ? row.data : Buffer.from(row.data), key, seq, last, format);
        if (plain.length > 0) yield plain;
        seq += 1;
        if (last) return;
      }
    }
  }

  async remove(keys: readonly string[]): Promise<void> {
    await removeStored(this.#db, keys);
  }
}

/** Deletes the embedded store's files (their keys and chunks) in `db`: the caller's transaction, or not. */
export async function removeStored(db: Db, keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 500) {
    const some = keys.slice(i, i + 500);
    await db.deleteFrom('document_file_keys').where('storage_key', 'in', some).execute();
    await db.deleteFrom('document_file_chunks').where('storage_key', 'in', some).execute();
  }
}

/**
 * A read of a file removed meanwhile (a delete's sweep or an erasure committed between the caller's
 * look at the file's row and the read): the file is not found, which is no failure of the store.
 */
const REMOVED = () => new AppError(404, 'No document found with the given ID.', { code: 'NOT_FOUND' });

/** Throws REMOVED if the file under `key` has no key any more: its removal deletes the key first. */
export async function throwIfRemoved(db: Db, key: string): Promise<void> {
  const row = await db.selectFrom('document_file_keys').select('storage_key').where('storage_key', '=', key).executeTakeFirst();
  if (!row) throw REMOVED();
}

function sealedUnder(key: string): string {
  return `document-file:${key}`;
}

/**
 * A new file's own key, stored sealed under the master key in document_file_keys. On PostgreSQL its
 * commit does not wait for the write-ahead log's flush: the commit that marks the file stored comes
 * later in the same log and waits for it.
 */
export async function storeNewFileKey(db: Db, masterKey: Buffer, key: string): Promise<Buffer> {
  const fileKey = randomBytes(32);
  const sealedKey = encrypt(masterKey, `${FORMAT}:${fileKey.toString('base64')}`, sealedUnder(key));
  if (isPostgres(db)) {
    await sql`insert into document_file_keys (storage_key, sealed_key)
      select ${key}, ${sealedKey} from (select set_config('synchronous_commit', 'off', true)) as unflushed`.execute(db);
  } else {
    await db.insertInto('document_file_keys').values({ storage_key: key, sealed_key: sealedKey }).execute();
  }
  return fileKey;
}

/** The key of the file stored under `key`, opened from document_file_keys, and the format its chunks were sealed in. */
export async function openFileKey(db: Db, masterKey: Buffer, key: string): Promise<{ fileKey: KeyObject; format: number }> {
  const sealed = await db.selectFrom('document_file_keys').select('sealed_key').where('storage_key', '=', key).executeTakeFirst();
  if (!sealed) throw REMOVED();
  const opened = decrypt(masterKey, sealed.sealed_key, sealedUnder(key));
  const format = opened.startsWith(`${FORMAT}:`) ? FORMAT : 1;
  return { fileKey: createSecretKey(Buffer.from(format === 1 ? opened : opened.slice(`${FORMAT}:`.length), 'base64')), format };
}

/**
 * A run of a sealed chunk's bytes, in order: the chunk's nonce comes first, its ciphertext as the
 * plaintext arrives, its tag last. `chunkLength` is set on the run that ends its chunk: the chunk's
 * whole sealed length, which the runs before it add up to with this one.
 */
export interface SealedRun {
  parts: Buffer[];
  bytes: number;
  chunkLength: number | null;
}

/** Ciphertext a run gathers before it is handed on, short of its chunk's end. */
const RUN_BYTES = 128 * 1024;

/**
 * `source` sealed chunk by chunk, in the current format: each full chunk as soon as it fills, then
 * the rest, then the empty last chunk. `counted.size` ends as the plaintext's size.
 *
 * Each piece of `source` is enciphered as it arrives (GCM is a stream cipher) and handed on in runs
 * of RUN_BYTES, not held until its chunk fills nor joined: a file write passes the runs to the disk
 * as they are. An upload's buffers are then garbage within moments, which a young collection frees
 * (young-collections.ts); held for a whole chunk they outlived two young collections, and what
 * outlives them waits for a full collection, which marks the whole heap.
 */
export async function* sealedRuns(fileKey: Buffer, key: string, source: AsyncIterable<Buffer>, counted: { size: number }): AsyncIterable<SealedRun> {
  const secret = createSecretKey(fileKey);
  let seq = 0;
  let chunk = new ChunkSealer(secret, key, seq, false);
  for await (const piece of source) {
    counted.size += piece.length;
    let at = 0;
    while (at < piece.length) {
      const taken = Math.min(piece.length - at, CHUNK_BYTES - chunk.plainBytes);
      chunk.add(at === 0 && taken === piece.length ? piece : piece.subarray(at, at + taken));
      at += taken;
      if (chunk.plainBytes === CHUNK_BYTES) {
        yield chunk.end();
        chunk = new ChunkSealer(secret, key, ++seq, false);
      } else if (chunk.heldBytes >= RUN_BYTES) {
        yield chunk.run();
      }
    }
  }
  if (chunk.plainBytes > 0) {
    yield chunk.end();
    seq += 1;
  }
  yield new ChunkSealer(secret, key, seq, true).end();
}

/** One chunk being sealed, in the current format: its nonce, then its ciphertext as the plaintext comes, then its tag. */
class ChunkSealer {
  plainBytes = 0;
  heldBytes = NONCE;
  readonly #cipher: CipherGCM;
  #held: Buffer[];

  constructor(secret: KeyObject, key: string, seq: number, last: boolean) {
    const nonce = randomBytes(NONCE);
    this.#cipher = createCipheriv('aes-256-gcm', secret, nonce);
    this.#cipher.setAAD(associatedData(key, seq, last, FORMAT));
    this.#held = [nonce];
  }

  add(plain: Buffer): void {
    this.#held.push(this.#cipher.update(plain));
    this.plainBytes += plain.length;
    this.heldBytes += plain.length;
  }

  /** The bytes held so far, handed on. */
  run(): SealedRun {
    const run = { parts: this.#held, bytes: this.heldBytes, chunkLength: null };
    this.#held = [];
    this.heldBytes = 0;
    return run;
  }

  /** The rest of the chunk, its tag last. */
  end(): SealedRun {
    // GCM adds no bytes at the end.
    this.#cipher.final();
    this.#held.push(this.#cipher.getAuthTag());
    return { parts: this.#held, bytes: this.heldBytes + TAG, chunkLength: NONCE + this.plainBytes + TAG };
  }
}

/** The plaintext of chunk `seq` of the file under `key`; throws if it was altered, moved or is not the last it claims. */
export function openChunk(fileKey: KeyObject, data: Buffer, key: string, seq: number, last: boolean, format: number): Buffer {
  if (data.length < NONCE + TAG) throw new Error(`stored file ${key}: chunk ${seq} is malformed`);
  const decipher = createDecipheriv('aes-256-gcm', fileKey, data.subarray(0, NONCE));
  decipher.setAAD(associatedData(key, seq, last, format));
  decipher.setAuthTag(data.subarray(data.length - TAG));
  try {
    return Buffer.concat([decipher.update(data.subarray(NONCE, data.length - TAG)), decipher.final()]);
  } catch {
    throw new Error(`stored file ${key}: chunk ${seq} does not open (altered, moved or cut short)`);
  }
}

function associatedData(key: string, seq: number, last: boolean, format: number): Buffer {
  return Buffer.from(JSON.stringify(['document-file', format, key, seq, last]), 'utf8');
}
