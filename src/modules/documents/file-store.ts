/**
 * Where a document's bytes live. A backend stores a stream under a key, streams it back and removes
 * it; the documents service keeps which backend and key hold each file (document_files), so files
 * stored by one backend stay readable after another becomes the default.
 *
 * The embedded backend, `DatabaseFileStore`, keeps the bytes in the database itself
 * (document_file_chunks): `npm start` needs no other service, and several server processes on one
 * PostgreSQL share the files with no shared disk. Each file has a random key of its own, kept sealed
 * under the master key (document_file_keys: a master key rotation re-seals these, not the bytes).
 * Each chunk of CHUNK_BYTES is one row, sealed with AES-256-GCM under the file's key, a fresh nonce
 * per chunk and, as associated data, the storage key, the chunk's number and whether it is the last:
 * a chunk moved to another file or position, a chunk altered, or a file cut short fails to open.
 * Writes and reads hold one chunk at a time (streamed, never the whole file).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Db } from '../../db/index.ts';
import type { Database } from '../../db/schema.ts';
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
}

/** Bytes of plaintext per stored chunk. */
export const CHUNK_BYTES = 256 * 1024;
const NONCE = 12;
const TAG = 16;
/** Chunks fetched by one read statement. */
const READ_BATCH = 4;

export class DatabaseFileStore implements FileStore {
  readonly name = 'database';
  readonly #db: Kysely<Database>;
  readonly #masterKey: Buffer;

  constructor(db: Kysely<Database>, masterKey: Buffer) {
    this.#db = db;
    this.#masterKey = masterKey;
  }

  async write(key: string, source: AsyncIterable<Buffer>): Promise<number> {
    const fileKey = randomBytes(32);
    let size = 0;
    let seq = 0;
    // The chunk being filled, and the full one held back until we know whether it is the last.
    let filling: Buffer[] = [];
    let filled = 0;
    let held: Buffer | null = null;
    const put = async (plain: Buffer, last: boolean) => {
      await this.#db
        .insertInto('document_file_chunks')
        .values({ storage_key: key, seq, data: seal(fileKey, plain, key, seq, last) })
        .execute();
      seq += 1;
    };
    try {
      await this.#db
        .insertInto('document_file_keys')
        .values({ storage_key: key, sealed_key: encrypt(this.#masterKey, fileKey.toString('base64'), sealedUnder(key)) })
        .execute();
      for await (const piece of source) {
        size += piece.length;
        let rest = piece;
        while (rest.length > 0) {
          const take = Math.min(rest.length, CHUNK_BYTES - filled);
          filling.push(rest.subarray(0, take));
          filled += take;
          rest = rest.subarray(take);
          if (filled === CHUNK_BYTES) {
            if (held) await put(held, false);
            held = Buffer.concat(filling, filled);
            filling = [];
            filled = 0;
          }
        }
      }
      if (filled > 0) {
        if (held) await put(held, false);
        await put(Buffer.concat(filling, filled), true);
      } else {
        await put(held ?? Buffer.alloc(0), true);
      }
      return size;
    } catch (error) {
      await this.remove([key]);
      throw error;
    }
  }

  async *read(key: string): AsyncIterable<Buffer> {
    const sealed = await this.#db.selectFrom('document_file_keys').select('sealed_key').where('storage_key', '=', key).executeTakeFirst();
    if (!sealed) throw new Error(`stored file ${key} has no key`);
    const fileKey = Buffer.from(decrypt(this.#masterKey, sealed.sealed_key, sealedUnder(key)), 'base64');
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
      if (rows.length === 0) throw new Error(`stored file ${key} is missing or cut short`);
      const now = rows.slice(0, READ_BATCH);
      for (const [index, row] of now.entries()) {
        if (Number(row.seq) !== seq) throw new Error(`stored file ${key} lacks chunk ${seq}`);
        const last = index === rows.length - 1;
        yield open(fileKey, Buffer.from(row.data), key, seq, last);
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

function sealedUnder(key: string): string {
  return `document-file:${key}`;
}

function seal(fileKey: Buffer, plain: Buffer, key: string, seq: number, last: boolean): Buffer {
  const nonce = randomBytes(NONCE);
  const cipher = createCipheriv('aes-256-gcm', fileKey, nonce);
  cipher.setAAD(associatedData(key, seq, last));
  const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([nonce, sealed, cipher.getAuthTag()]);
}

function open(fileKey: Buffer, data: Buffer, key: string, seq: number, last: boolean): Buffer {
  if (data.length < NONCE + TAG) throw new Error(`stored file ${key}: chunk ${seq} is malformed`);
  const decipher = createDecipheriv('aes-256-gcm', fileKey, data.subarray(0, NONCE));
  decipher.setAAD(associatedData(key, seq, last));
  decipher.setAuthTag(data.subarray(data.length - TAG));
  try {
    return Buffer.concat([decipher.update(data.subarray(NONCE, data.length - TAG)), decipher.final()]);
  } catch {
    throw new Error(`stored file ${key}: chunk ${seq} does not open (altered, moved or cut short)`);
  }
}

function associatedData(key: string, seq: number, last: boolean): Buffer {
  return Buffer.from(JSON.stringify(['document-file', 1, key, seq, last]), 'utf8');
}
