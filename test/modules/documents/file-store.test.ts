/** The embedded file stores on their own: sizes around the chunk boundary, and stored bytes that were cut short, moved or altered. */
import assert from 'node:assert/strict';
import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fsPromises from 'node:fs/promises';
import { syncBuiltinESMExports } from 'node:module';
import { after, before, describe, it, mock } from 'node:test';
import { CHUNK_BYTES, DatabaseFileStore, type FileStore } from '../../../src/modules/documents/file-store.ts';
import { FileSystemStore, sealedChunksIn } from '../../../src/modules/documents/file-system-store.ts';
import { encrypt } from '../../../src/security/encryption.ts';
import { createTestApp, DIALECT, type TestApp } from '../../support.ts';
import { filesOnDisk } from './support.ts';

async function* pieces(bytes: Buffer, size = 65_536): AsyncIterable<Buffer> {
  for (let at = 0; at < bytes.length; at += size) yield bytes.subarray(at, at + size);
}

async function readAll(source: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of source) parts.push(part);
  return Buffer.concat(parts);
}

/** Stores a file and removes it, then sees a write whose source fails refused; the caller checks that it left nothing. */
async function removesAndFails(store: FileStore): Promise<void> {
  await store.write('gone', pieces(randomBytes(CHUNK_BYTES * 2)));
  await store.remove(['gone', 'never-stored']);
  await assert.rejects(readAll(store.read('gone')), { problem: { status: 404, message: 'No document found with the given ID.', code: 'NOT_FOUND' } });
  async function* failing(): AsyncIterable<Buffer> {
    yield randomBytes(CHUNK_BYTES + 10);
    throw new Error('the client went away');
  }
  await assert.rejects(store.write('failed', failing()), /went away/);
}

describe(`documents: the database file store (${DIALECT})`, () => {
  let t: TestApp;
  let store: DatabaseFileStore;
  const masterKey = randomBytes(32);

  before(async () => {
    t = await createTestApp();
    store = new DatabaseFileStore(t.ctx.storage.db, masterKey);
  });
  after(() => t.close());

  it('gives back what it stored, whatever the size around a chunk', async () => {
    for (const size of [0, 1, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 3 * CHUNK_BYTES + 17]) {
      const bytes = randomBytes(size);
      const key = `sizes/${size}`;
      assert.equal(await store.write(key, pieces(bytes, 100_003)), size);
      assert.ok((await readAll(store.read(key))).equals(bytes), `${size} bytes`);
    }
  });

  it('refuses to read a file cut short, a chunk moved or altered', async () => {
    const bytes = randomBytes(2 * CHUNK_BYTES + 5);
    const chunks = (key: string) =>
      t.ctx.storage.db.selectFrom('document_file_chunks').select(['seq', 'data']).where('storage_key', '=', key).orderBy('seq').execute();

    await store.write('cut', pieces(bytes));
    const last = (await chunks('cut')).at(-1)!;
    await t.ctx.storage.db.deleteFrom('document_file_chunks').where('storage_key', '=', 'cut').where('seq', '=', last.seq).execute();
    await assert.rejects(readAll(store.read('cut')), /does not open|cut short/);

    await store.write('moved', pieces(bytes));
    const [first, second] = await chunks('moved');
    await t.ctx.storage.db
      .updateTable('document_file_chunks')
      .set({ data: second!.data })
      .where('storage_key', '=', 'moved')
      .where('seq', '=', 0)
      .execute();
    await t.ctx.storage.db
      .updateTable('document_file_chunks')
      .set({ data: first!.data })
      .where('storage_key', '=', 'moved')
      .where('seq', '=', 1)
      .execute();
    await assert.rejects(readAll(store.read('moved')), /does not open/);

    await store.write('altered', pieces(bytes));
    const data = Buffer.from((await chunks('altered'))[0]!.data);
    data[40] = data[40]! ^ 1;
    await t.ctx.storage.db.updateTable('document_file_chunks').set({ data }).where('storage_key', '=', 'altered').where('seq', '=', 0).execute();
    await assert.rejects(readAll(store.read('altered')), /does not open/);
  });

  it('reads files of format 1, whose last data chunk is marked last', async () => {
    const bytes = randomBytes(CHUNK_BYTES + 1000);
    const key = 'format-1';
    const fileKey = randomBytes(32);
    const seal = (plain: Buffer, seq: number, last: boolean) => {
      const nonce = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', fileKey, nonce);
      cipher.setAAD(Buffer.from(JSON.stringify(['document-file', 1, key, seq, last])));
      return Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    };
    const db = t.ctx.storage.db;
    await db
      .insertInto('document_file_keys')
      .values({ storage_key: key, sealed_key: encrypt(masterKey, fileKey.toString('base64'), `document-file:${key}`) })
      .execute();
    await db
      .insertInto('document_file_chunks')
      .values({ storage_key: key, seq: 0, data: seal(bytes.subarray(0, CHUNK_BYTES), 0, false) })
      .execute();
    await db
      .insertInto('document_file_chunks')
      .values({ storage_key: key, seq: 1, data: seal(bytes.subarray(CHUNK_BYTES), 1, true) })
      .execute();
    assert.ok((await readAll(store.read(key))).equals(bytes));
  });

  it('removes what it stored, and a failed write leaves nothing', async () => {
    await removesAndFails(store);
    const left = await t.ctx.storage.db.selectFrom('document_file_chunks').select('seq').where('storage_key', '=', 'failed').execute();
    assert.equal(left.length, 0);
  });
});

describe(`documents: the files store (${DIALECT})`, () => {
  let t: TestApp;
  let store: FileSystemStore;
  const masterKey = randomBytes(32);

  before(async () => {
    t = await createTestApp();
    store = new FileSystemStore(t.ctx.storage.db, masterKey, t.ctx.config.dataDir);
  });
  after(() => t.close());

  it('gives back what it stored, whatever the size around a chunk, in a file named after no part of the key', async () => {
    for (const size of [0, 1, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 3 * CHUNK_BYTES + 17]) {
      const bytes = randomBytes(size);
      const key = `business/document/../${size}`;
      assert.equal(await store.write(key, pieces(bytes, 100_003)), size);
      assert.ok((await readAll(store.read(key))).equals(bytes), `${size} bytes`);
      assert.match(path.relative(t.ctx.config.dataDir, store.pathOf(key)), /^documents\/[0-9a-f]{2}\/[0-9a-f]{64}$/);
    }
    assert.equal(filesOnDisk(t.ctx.config.dataDir).length, 6);
  });

  it('keeps chunks a database store reads as they are', async () => {
    const bytes = randomBytes(2 * CHUNK_BYTES + 5);
    await store.write('as-rows', pieces(bytes));
    let seq = 0;
    for await (const data of sealedChunksIn(store.pathOf('as-rows'), 'as-rows')) {
      await t.ctx.storage.db.insertInto('document_file_chunks').values({ storage_key: 'as-rows', seq: seq++, data }).execute();
    }
    assert.equal(seq, 4, 'three chunks of bytes and the last, empty one');
    assert.ok((await readAll(new DatabaseFileStore(t.ctx.storage.db, masterKey).read('as-rows'))).equals(bytes));
  });

  it('writes a file arriving in small pieces with each chunk after its length, a short last chunk too', async () => {
    // The last data chunk (150,000 bytes) is longer than a run: its length, first written as a full
    // chunk's, is put right once it ends.
    const bytes = randomBytes(2 * CHUNK_BYTES + 150_000);
    await store.write('small-pieces', pieces(bytes, 999));
    const lengths: number[] = [];
    let seq = 0;
    for await (const data of sealedChunksIn(store.pathOf('small-pieces'), 'small-pieces')) {
      lengths.push(data.length);
      await t.ctx.storage.db.insertInto('document_file_chunks').values({ storage_key: 'small-pieces', seq: seq++, data }).execute();
    }
    assert.deepEqual(lengths, [12 + CHUNK_BYTES + 16, 12 + CHUNK_BYTES + 16, 12 + 150_000 + 16, 12 + 16]);
    assert.ok((await readAll(store.read('small-pieces'))).equals(bytes));
    assert.ok((await readAll(new DatabaseFileStore(t.ctx.storage.db, masterKey).read('small-pieces'))).equals(bytes));
  });

  it('refuses to read a file cut short, chunks swapped or a byte altered', async () => {
    const bytes = randomBytes(2 * CHUNK_BYTES + 5);
    const sealedLength = 12 + CHUNK_BYTES + 16;
    for (const [key, spoil] of [
      ['cut at a chunk', (file: Buffer) => file.subarray(0, 2 * (4 + sealedLength))],
      ['cut in a chunk', (file: Buffer) => file.subarray(0, file.length - 3)],
      ['cut in a length', (file: Buffer) => file.subarray(0, 4 + sealedLength + 2)],
      [
        'swapped',
        (file: Buffer) =>
          Buffer.concat([
            file.subarray(4 + sealedLength, 2 * (4 + sealedLength)),
            file.subarray(0, 4 + sealedLength),
            file.subarray(2 * (4 + sealedLength)),
          ]),
      ],
      ['altered', (file: Buffer) => Buffer.from(file).fill(0x41, 40, 41)],
      ['grown', (file: Buffer) => Buffer.concat([file, Buffer.alloc(1)])],
    ] as const) {
      await store.write(key, pieces(bytes));
      writeFileSync(store.pathOf(key), spoil(readFileSync(store.pathOf(key))));
      await assert.rejects(readAll(store.read(key)), /does not open|cut short|malformed/, key);
    }
    rmSync(store.pathOf('cut at a chunk'));
    await assert.rejects(readAll(store.read('cut at a chunk')), /missing/);
  });

  it('removes what it stored, and a failed write leaves nothing, not even its temporary file', async () => {
    const before = filesOnDisk(t.ctx.config.dataDir).length;
    await removesAndFails(store);
    assert.equal(
      (await t.ctx.storage.db.selectFrom('document_file_keys').select('storage_key').where('storage_key', '=', 'failed').execute()).length,
      0,
    );
    assert.equal(filesOnDisk(t.ctx.config.dataDir).length, before);
  });

  it('removes temporary files a process that died left behind, once they are old', async () => {
    const incoming = path.join(t.ctx.config.dataDir, 'documents', 'incoming');
    mkdirSync(incoming, { recursive: true });
    writeFileSync(path.join(incoming, 'abandoned.0123456789ab'), 'half a file');
    writeFileSync(path.join(incoming, 'under-way.ba9876543210'), 'a write under way');
    const old = new Date(Date.now() - 2 * 3600_000);
    utimesSync(path.join(incoming, 'abandoned.0123456789ab'), old, old);
    assert.equal(await store.removeAbandoned(3600_000), 1);
    assert.deepEqual(readdirSync(incoming), ['under-way.ba9876543210']);
    rmSync(path.join(incoming, 'under-way.ba9876543210'));
  });

  it("keeps the temporary file of this process's write under way, however long since it last grew", async () => {
    const bytes = randomBytes(CHUNK_BYTES + 5);
    let resume!: () => void;
    const paused = new Promise<void>((resolve) => {
      resume = resolve;
    });
    let wrote!: () => void;
    const firstChunkWritten = new Promise<void>((resolve) => {
      wrote = resolve;
    });
    async function* slow(): AsyncIterable<Buffer> {
      yield bytes.subarray(0, CHUNK_BYTES);
      // The first chunk is sealed and written once the next piece is asked for.
      setTimeout(wrote, 50);
      await paused;
      yield bytes.subarray(CHUNK_BYTES);
    }
    const writing = store.write('slow', slow());
    await firstChunkWritten;
    const incoming = path.join(t.ctx.config.dataDir, 'documents', 'incoming');
    const [temporary] = readdirSync(incoming);
    assert.ok(temporary, 'the write has its temporary file');
    const old = new Date(Date.now() - 2 * 3600_000);
    utimesSync(path.join(incoming, temporary), old, old);
    assert.equal(await store.removeAbandoned(3600_000), 0);
    resume();
    await writing;
    assert.ok((await readAll(store.read('slow'))).equals(bytes));
    await store.remove(['slow']);
  });

  it('fails a write that lands short on the disk, and leaves nothing', async () => {
    const before = filesOnDisk(t.ctx.config.dataDir).length;
    const probe = await fsPromises.open(path.join(t.ctx.config.dataDir, 'probe'), 'w');
    const handles = Object.getPrototypeOf(probe) as { writev: (buffers: Buffer[]) => Promise<{ bytesWritten: number; buffers: Buffer[] }> };
    await probe.close();
    rmSync(path.join(t.ctx.config.dataDir, 'probe'));
    const original = handles.writev;
    // As a filling disk does: the write returns having taken only part of what it was given.
    const short = mock.method(handles, 'writev', async function (this: unknown, buffers: Buffer[]) {
      const done = await original.call(this, [buffers[0]!, buffers[1]!.subarray(0, 10)]);
      return { bytesWritten: done.bytesWritten, buffers };
    });
    try {
      await assert.rejects(store.write('short', pieces(randomBytes(1000))), /written short/);
    } finally {
      short.mock.restore();
    }
    assert.equal(
      (await t.ctx.storage.db.selectFrom('document_file_keys').select('storage_key').where('storage_key', '=', 'short').execute()).length,
      0,
    );
    assert.equal(filesOnDisk(t.ctx.config.dataDir).length, before);
  });

  it('flushes each folder it makes into its parent, up to the data directory, before a file in it counts as written', async () => {
    const dataDir = path.join(t.ctx.config.dataDir, 'fresh');
    mkdirSync(dataDir);
    const fresh = new FileSystemStore(t.ctx.storage.db, masterKey, dataDir);
    const opened: string[] = [];
    const original = fsPromises.open;
    const open = mock.method(fsPromises, 'open', (file: string, ...rest: unknown[]) => {
      if (rest[0] === 'r') opened.push(String(file));
      return (original as (...args: unknown[]) => unknown)(file, ...rest);
    });
    syncBuiltinESMExports();
    try {
      await fresh.write('fresh', pieces(randomBytes(10)));
    } finally {
      open.mock.restore();
      syncBuiltinESMExports();
    }
    const documents = path.join(dataDir, 'documents');
    const folder = path.dirname(fresh.pathOf('fresh'));
    for (const dir of [dataDir, documents, folder]) assert.ok(opened.includes(dir), `${dir} flushed (flushed: ${opened.join(', ')})`);
    await fresh.remove(['fresh']);
  });
});
