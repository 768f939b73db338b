/** Helpers shared by the documents tests: requests, multipart bodies and sample files of each type. */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { createCanvas } from '@napi-rs/canvas';
import { sql } from 'kysely';
import S3rver from 's3rver';
import type { App } from '../../../src/http/app-type.ts';
import { DatabaseFileStore } from '../../../src/modules/documents/file-store.ts';
import { FileSystemStore, FILES_FOLDER, storedFilePath } from '../../../src/modules/documents/file-system-store.ts';
import { ObjectFileStore } from '../../../src/modules/documents/object-store.ts';
import { thumbnailKeyOf } from '../../../src/modules/documents/service.ts';
import { bearer, createTestApp, DIALECT, type TestApp } from '../../support.ts';

export const BASE = '/mr/api/v1/docs';

const PNG_1x1 = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082',
  'hex',
);

/** A box of ISO BMFF (HEIF): its size, its type, what it holds. */
export const box = (type: string, ...content: Buffer[]) => {
  const size = Buffer.alloc(4);
  size.writeUInt32BE(8 + content.reduce((sum, part) => sum + part.length, 0));
  return Buffer.concat([size, Buffer.from(type, 'latin1'), ...content]);
};
/** Unsigned 32-bit big-endian integers, as a box's fields are written. */
export const u32s = (...values: number[]) =>
  Buffer.from(values.flatMap((value) => [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255]));
const HEIC_FTYP = box('ftyp', Buffer.from('heic'), u32s(0), Buffer.from('mif1heic'));
/** A HEIC head: its file type, then the image's properties declaring 1 × 1 pixels (meta, iprp, ipco, ispe). */
const HEIC_1x1 = Buffer.concat([HEIC_FTYP, box('meta', u32s(0), box('iprp', box('ipco', box('ispe', u32s(0, 1, 1)))))]);

/**
 * A HEIC of `imageBytes` random bytes of image data (`mdat`) whose meta box declares an image of each of
 * `sizes` (width × height; null: no meta box). `imageDataFirst` puts the mdat before the meta, as some
 * cameras and converters write it; `largeSize` writes the mdat's size in 64 bits; `between` are boxes
 * put after the mdat, before a meta that follows it.
 */
export function heicOf(
  sizes: Array<[number, number]> | null,
  imageBytes: number,
  options: { imageDataFirst?: boolean; largeSize?: boolean; between?: Buffer[] } = {},
): Buffer {
  const data = randomBytes(imageBytes);
  const mdat = options.largeSize ? Buffer.concat([u32s(1), Buffer.from('mdat'), u32s(0, 16 + imageBytes), data]) : box('mdat', data);
  const meta = sizes === null ? [] : [box('meta', u32s(0), box('iprp', box('ipco', ...sizes.map(([w, h]) => box('ispe', u32s(0, w, h))))))];
  const between = options.between ?? [];
  return Buffer.concat(options.imageDataFirst ? [HEIC_FTYP, mdat, ...between, ...meta] : [HEIC_FTYP, ...meta, mdat, ...between]);
}

/**
 * A JPEG whose frame header declares `width` × `height` pixels, with a frame header of 1 × 1 written
 * inside an APP0 segment before it and one stray byte after that segment: image-size, finding no marker
 * right after the segment, moved on by one byte, read a length there and landed on the fake; libjpeg
 * skips the segment and the stray byte, and decodes the real frame. A real JPEG of 16 × 16 otherwise.
 */
export function jpegWithHiddenFrame(width: number, height: number): Buffer {
  const canvas = createCanvas(16, 16);
  canvas.getContext('2d').fillRect(0, 0, 16, 16);
  const jpeg = Buffer.from(canvas.encodeSync('jpeg', 80));
  let frame = 2;
  while (jpeg[frame + 1] !== 0xc0) frame += 2 + jpeg.readUInt16BE(frame + 2);
  jpeg.writeUInt16BE(height, frame + 5);
  jpeg.writeUInt16BE(width, frame + 7);
  // APP0 of 256 bytes (its length's high byte 0), its first byte 16: image-size's length read one byte on.
  const app = Buffer.alloc(256);
  app.writeUInt16BE(256, 0);
  app[2] = 16;
  Buffer.from('ffc000110800010001', 'hex').copy(app, 17);
  return Buffer.concat([jpeg.subarray(0, 2), Buffer.from([0xff, 0xe0]), app, Buffer.from([0x00]), jpeg.subarray(2)]);
}

/** A file of `type` with `size` bytes (padded after a valid head). */
export function sampleFile(type: 'pdf' | 'png' | 'jpeg' | 'heic' | 'dicom' | 'zip' | 'text', size = 2048): Buffer {
  const heads: Record<string, Buffer> = {
    pdf: Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n', 'latin1'),
    png: PNG_1x1,
    // JFIF, then a frame header declaring 1 × 1 pixels.
    jpeg: Buffer.from('ffd8ffe000104a46494600010100000100010000ffc00011080001000103012200021101031101', 'hex'),
    heic: HEIC_1x1,
    dicom: Buffer.concat([Buffer.alloc(128), Buffer.from('DICM')]),
    zip: Buffer.from('504b0304140000000800', 'hex'),
    text: Buffer.from('hello, this is plain text and nothing else\n'),
  };
  const head = heads[type]!;
  if (size <= head.length) return head.subarray(0, size);
  const fill = type === 'text' ? Buffer.alloc(size - head.length, 'a') : randomBytes(size - head.length);
  return Buffer.concat([head, fill]);
}

export const CONTENT_TYPES = {
  pdf: 'application/pdf',
  png: 'image/png',
  jpeg: 'image/jpeg',
  heic: 'image/heic',
  dicom: 'application/dicom',
} as const;

export interface Part {
  name: string;
  value: string | Buffer;
  fileName?: string;
  contentType?: string;
}

/** A multipart/form-data body of `parts`, in order. */
export function multipartBody(
  parts: Part[],
  boundary = `----cps${randomBytes(8).toString('hex')}`,
): { payload: Buffer; headers: Record<string, string> } {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`;
    if (part.fileName !== undefined) head += `; filename="${part.fileName}"`;
    head += '\r\n';
    if (part.contentType) head += `Content-Type: ${part.contentType}\r\n`;
    chunks.push(Buffer.from(`${head}\r\n`), Buffer.isBuffer(part.value) ? part.value : Buffer.from(part.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

export interface FormJson {
  url: string;
  fields: Record<string, string>;
}

/** Requests for one caller and one patient. */
export function documentsApi(app: App, token: string, patient: string) {
  const headers = { ...bearer(token), 'x-pt-id': patient };
  return {
    headers,
    prepare: (batch: unknown[], extra: Record<string, string> = {}) =>
      app.inject({ method: 'POST', url: BASE, headers: { ...headers, ...extra }, payload: { batch_request: batch } }),
    list: (query: Record<string, string | number> = {}) => {
      const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
      return app.inject({ method: 'GET', url: `${BASE}${qs ? `?${qs}` : ''}`, headers });
    },
    get: (id: string) => app.inject({ method: 'GET', url: `${BASE}/${encodeURIComponent(id)}`, headers }),
    result: (id: string) => app.inject({ method: 'GET', url: `${BASE}/${encodeURIComponent(id)}/result`, headers }),
    update: (id: string, body: unknown) =>
      app.inject({ method: 'PATCH', url: `${BASE}/${encodeURIComponent(id)}`, headers, payload: body as object }),
    remove: (id: string) => app.inject({ method: 'DELETE', url: `${BASE}/${encodeURIComponent(id)}`, headers }),
    /** POST /mr/api/v2/docs with `file`. */
    uploadV2: (file: Buffer, options: { fileName?: string; contentType?: string; query?: string; extra?: Record<string, string> } = {}) => {
      const body = multipartBody([
        { name: 'file', value: file, fileName: options.fileName ?? 'report.bin', contentType: options.contentType ?? 'application/octet-stream' },
      ]);
      return app.inject({
        method: 'POST',
        url: `/mr/api/v2/docs?${options.query ?? 'task=smart&dt=lr'}`,
        headers: { ...headers, ...body.headers, ...options.extra },
        payload: body.payload,
      });
    },
    /** A document through the forms: step 1, then each file to its form; answers the document id. */
    async create(files: Buffer[], types: string[], extra: Record<string, unknown> = {}): Promise<string> {
      const answer = await this.prepare([{ dt: 'lr', files: files.map((f, i) => ({ contentType: types[i], file_size: f.length })), ...extra }]);
      if (answer.statusCode !== 200) throw new Error(`prepare answered ${answer.statusCode}: ${answer.body}`);
      const doc = answer.json().batch_response[0] as { document_id: string; forms: FormJson[] };
      for (const [i, form] of doc.forms.entries()) {
        const sent = await postForm(app, form, files[i]!, types[i]!);
        if (sent.statusCode !== 204) throw new Error(`form answered ${sent.statusCode}: ${sent.body}`);
      }
      return doc.document_id;
    },
    /** Every page from `query` on, following next_token. */
    async all(query: Record<string, string | number> = {}) {
      const items: Array<{ record: { item: Record<string, unknown>; status: string; updated_at: number } }> = [];
      let offset: string | null = null;
      let pages = 0;
      do {
        const response = await this.list(offset ? { ...query, offset } : query);
        if (response.statusCode !== 200) throw new Error(`list answered ${response.statusCode}: ${response.body}`);
        const page = response.json();
        items.push(...page.items);
        offset = page.next_token;
        pages += 1;
      } while (offset !== null);
      return { items, pages };
    },
  };
}

/** What a form's POST answered, as app.inject answers. */
export interface Answer {
  statusCode: number;
  body: string;
  json(): any;
}

/**
 * POSTs a form's fields and then the file, as a browser or S3 client does (no bearer token). A form of
 * an object store goes to the store, and its redirect back to the app is followed, as clients do.
 */
export async function postForm(
  app: App,
  form: FormJson,
  file: Buffer,
  contentType: string,
  options: { fileName?: string; fields?: Record<string, string> } = {},
): Promise<Answer> {
  const fields = { ...form.fields, ...options.fields };
  if (fields.success_action_redirect === undefined) {
    const body = multipartBody([
      ...Object.entries(fields).map(([name, value]) => ({ name, value })),
      { name: 'file', value: file, fileName: options.fileName ?? 'scan.bin', contentType },
    ]);
    return app.inject({ method: 'POST', url: new URL(form.url).pathname, headers: body.headers, payload: body.payload });
  }
  const data = new FormData();
  for (const [name, value] of Object.entries(fields)) data.append(name, value);
  data.append('file', new Blob([new Uint8Array(file)], { type: contentType }), options.fileName ?? 'scan.bin');
  const stored = await fetch(form.url, { method: 'POST', body: data, redirect: 'manual' });
  const text = await stored.text();
  const location = stored.headers.get('location');
  if (stored.status !== 303 || location === null) return { statusCode: stored.status, body: text, json: () => JSON.parse(text) };
  const back = new URL(location);
  return app.inject({ method: 'GET', url: `${back.pathname}${back.search}` });
}

/** GETs a download link (absolute URL) on the app; a redirect to an object store is followed, as clients do. */
export async function download(app: App, assetUrl: string): Promise<Answer & { rawPayload: Buffer; headers: Record<string, unknown> }> {
  const url = new URL(assetUrl);
  const answer = await app.inject({ method: 'GET', url: `${url.pathname}${url.search}` });
  if (answer.statusCode !== 302) return answer;
  const stored = await fetch(String(answer.headers.location));
  const bytes = Buffer.from(await stored.arrayBuffer());
  return {
    statusCode: stored.status,
    body: bytes.toString('utf8'),
    json: () => JSON.parse(bytes.toString('utf8')),
    rawPayload: bytes,
    headers: Object.fromEntries(stored.headers),
  };
}

/**
 * The file store the documents tests run against: CPS_TEST_DOCUMENTS_STORE=files, =database or =s3
 * (an s3rver on loopback); unset, the service's default (files with SQLite, the database with PostgreSQL).
 */
export const STORE: 'files' | 'database' | 's3' = storeNamed(process.env.CPS_TEST_DOCUMENTS_STORE) ?? (DIALECT === 'sqlite' ? 'files' : 'database');

function storeNamed(name: string | undefined): 'files' | 'database' | 's3' | undefined {
  if (name === undefined || name === '') return undefined;
  if (name === 'files' || name === 'database' || name === 's3') return name;
  throw new Error(`CPS_TEST_DOCUMENTS_STORE must be files, database or s3, got ${name}`);
}

/**
 * The storage keys that hold bytes of `documentId`'s files (thumbnails included) in the test's store,
 * with what each holds, sealed: rows of document_file_chunks, a file of the data directory or an object
 * of the object store (its name then). With the files store it also fails on any file of the folder
 * that no stored key accounts for (a leftover of a removed or failed file, or a temporary one).
 */
export async function storedOf(t: TestApp & { objectsDir?: string | null }, documentId: string): Promise<Array<{ key: string; data: Buffer[] }>> {
  if (t.objectsDir) return objectsOf(t.objectsDir, documentId).map((key) => ({ key, data: [] }));
  const db = t.ctx.storage.db;
  const chunks = await db
    .selectFrom('document_file_chunks')
    .select(['storage_key', 'data'])
    .where('storage_key', 'like', `%/${documentId}/%`)
    .orderBy('seq')
    .execute();
  const stored = new Map<string, Buffer[]>();
  for (const chunk of chunks) stored.set(chunk.storage_key, [...(stored.get(chunk.storage_key) ?? []), Buffer.from(chunk.data)]);
  const known = new Map<string, string>();
  for (const { storage_key } of await db.selectFrom('document_file_keys').select('storage_key').execute()) {
    known.set(storedFilePath(t.ctx.config.dataDir, storage_key), storage_key);
  }
  for (const file of filesOnDisk(t.ctx.config.dataDir)) {
    const key = known.get(file);
    if (key === undefined) throw new Error(`the files store keeps ${file}, which no stored key accounts for`);
    if (key.includes(`/${documentId}/`)) stored.set(key, [readFileSync(file)]);
  }
  return [...stored].map(([key, data]) => ({ key, data }));
}

/**
 * Writes `bytes` where the thumbnail of `documentId`'s first file goes, unrecorded, through the
 * test's store as another process of the service opens it: what a thumbnail job that ended between
 * writing and recording leaves behind.
 */
export async function writeUnrecordedThumbnail(t: TestApp, documentId: string, bytes: Buffer): Promise<void> {
  const { db } = t.ctx.storage;
  const { masterKey } = t.ctx.keys;
  const file = await db
    .selectFrom('document_files')
    .select('storage_key')
    .where('document_id', '=', documentId)
    .where('idx', '=', 0)
    .executeTakeFirstOrThrow();
  const objects = STORE === 's3' ? new ObjectFileStore(t.ctx.config.documents.s3!) : null;
  const store = objects ?? (STORE === 'files' ? new FileSystemStore(db, masterKey, t.ctx.config.dataDir) : new DatabaseFileStore(db, masterKey));
  try {
    await store.write(
      thumbnailKeyOf(file.storage_key!),
      (async function* () {
        yield bytes;
      })(),
    );
  } finally {
    objects?.close();
  }
}

/** Every file under the files store's folder of `dataDir`. */
export function filesOnDisk(dataDir: string): string[] {
  const root = path.join(dataDir, FILES_FOLDER);
  if (!existsSync(root)) return [];
  return (readdirSync(root, { recursive: true }) as string[]).map((name) => path.join(root, name)).filter((file) => statSync(file).isFile());
}

const BUCKET = 'cps-test-documents';

/** A test app whose documents go to STORE; an object store is an s3rver of its own, in a scratch folder, closed with the app. */
export async function documentsTestApp(options: Parameters<typeof createTestApp>[0] = {}): Promise<TestApp & { objectsDir: string | null }> {
  if (STORE !== 's3')
    return checkingBytesAtClose({ ...(await createTestApp({ ...options, env: { CPS_DOCUMENTS_STORE: STORE, ...options.env } })), objectsDir: null });
  const objectsDir = mkdtempSync(path.join(tmpdir(), 'cps-s3rver-'));
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: objectsDir,
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  const { port } = (await server.run()) as unknown as { port: number };
  const t = await createTestApp({
    ...options,
    env: {
      CPS_DOCUMENTS_STORE: 's3',
      CPS_S3_ENDPOINT: `http://127.0.0.1:${port}`,
      CPS_S3_BUCKET: BUCKET,
      CPS_S3_ACCESS_KEY_ID: 'S3RVER',
      CPS_S3_SECRET_ACCESS_KEY: 'S3RVER',
      ...options.env,
    },
  });
  return checkingBytesAtClose({
    ...t,
    objectsDir,
    close: async () => {
      await t.close();
      await server.close();
      rmSync(objectsDir, { recursive: true, force: true });
    },
  });
}

/**
 * `t`, whose close first checks that every business's running count of its files' bytes (document_bytes,
 * kept by triggers) is what its files add up to, after whatever the tests did to them.
 */
function checkingBytesAtClose<T extends TestApp>(t: T): T {
  const close = t.close;
  t.close = async () => {
    // One statement: on PostgreSQL both sides are read in one snapshot, whatever a job commits meanwhile.
    const { rows } = await sql<{ business_id: string; counted: string; summed: string }>`
      select business_id, sum(counted) as counted, sum(summed) as summed from (
        select business_id, bytes as counted, 0 as summed from document_bytes
        union all
        select business_id, 0, case when state = 'removing' then 0 else coalesce(size, declared_size, 0) end from document_files
      ) as counts group by business_id having sum(counted) <> sum(summed)`.execute(t.ctx.storage.db);
    await close();
    assert.deepEqual(rows, [], "a business's counted bytes differ from its files' sum");
  };
  return t;
}

/** Objects of the object store whose key names `documentId` (s3rver keeps each as a file). */
export function objectsOf(objectsDir: string, documentId: string): string[] {
  return (readdirSync(objectsDir, { recursive: true }) as string[]).filter(
    (file) => file.endsWith('._S3rver_object') && file.split(path.sep).includes(documentId),
  );
}

/** The sealed form a form carries: its policy field here, its redirect's `form` parameter for an object store. */
export function sealedFormOf(form: FormJson): string {
  const redirect = form.fields.success_action_redirect;
  return redirect ? new URL(redirect).searchParams.get('form')! : form.fields.policy!;
}

/** The form with another sealed form in it, where sealedFormOf found it. */
export function withSealedForm(form: FormJson, sealed: string): FormJson {
  const redirect = form.fields.success_action_redirect;
  if (!redirect) return { ...form, fields: { ...form.fields, policy: sealed } };
  const url = new URL(redirect);
  url.searchParams.set('form', sealed);
  return { ...form, fields: { ...form.fields, success_action_redirect: url.toString() } };
}
