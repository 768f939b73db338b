/**
 * Index snapshots: a built search index and its record store, written as they are in memory (long
 * strings and typed arrays), so a restarting process reads a quarter of a million products in a few
 * hundred milliseconds instead of building the index again. The same bytes go to a file in the data
 * directory and, for large catalogues, to the database (see catalogue/snapshots.ts).
 *
 * Layout: "CPSSNAP1", the header's length (uint32 LE) and four zero bytes, the header (JSON: the
 * caller's fields and where each section's pieces are), padding to 8 bytes, then the pieces, each
 * starting on an 8-byte boundary. A file is written under a temporary name and renamed into place,
 * so readers never see half of one; the header's total size catches bytes cut short.
 */
import { randomBytes } from 'node:crypto';
import { type FileHandle, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Column, SnapshotParts } from './store.ts';

const MAGIC = 'CPSSNAP1';
const ARRAY_TYPES = { Uint8Array, Int8Array, Uint16Array, Uint32Array } as const;
type ArrayType = keyof typeof ARRAY_TYPES;

interface PieceAt {
  offset: number;
  bytes: number;
}

interface SectionHeader {
  meta: Record<string, unknown>;
  texts: Record<string, PieceAt & { encoding: 'latin1' | 'utf16le' }>;
  arrays: Record<string, PieceAt & { type: ArrayType }>;
}

interface FileHeader {
  fields: Record<string, unknown>;
  sections: Record<string, SectionHeader>;
  size: number;
}

const align = (n: number) => Math.ceil(n / 8) * 8;

function arrayType(array: Column): ArrayType {
  for (const [name, type] of Object.entries(ARRAY_TYPES)) if (array instanceof type) return name as ArrayType;
  throw new Error('unsupported array type');
}

/** A snapshot's bytes, in pieces (the caller writes them to a file or joins them for the database). */
export function encodeSnapshot(fields: Record<string, unknown>, sections: Record<string, SnapshotParts>): Buffer[] {
  const pieces: Buffer[] = [];
  let size = 0;
  const place = (buffer: Buffer): PieceAt => {
    const at = { offset: size, bytes: buffer.length };
    pieces.push(buffer);
    const padded = align(buffer.length);
    if (padded > buffer.length) pieces.push(Buffer.alloc(padded - buffer.length));
    size += padded;
    return at;
  };
  const header: FileHeader = { fields, sections: {}, size: 0 };
  for (const [name, parts] of Object.entries(sections)) {
    const section: SectionHeader = { meta: parts.meta, texts: {}, arrays: {} };
    for (const [key, text] of Object.entries(parts.texts)) {
      // One byte a character when it can (names are mostly ASCII), which is also how V8 holds them.
      const encoding = /[^\x00-\xff]/.test(text) ? 'utf16le' : 'latin1';
      section.texts[key] = { ...place(Buffer.from(text, encoding)), encoding };
    }
    for (const [key, array] of Object.entries(parts.arrays)) {
      section.arrays[key] = { ...place(Buffer.from(array.buffer, array.byteOffset, array.byteLength)), type: arrayType(array) };
    }
    header.sections[name] = section;
  }
  header.size = size;
  const json = Buffer.from(JSON.stringify(header));
  const start = Buffer.alloc(align(16 + json.length) - json.length);
  start.write(MAGIC, 0, 'latin1');
  start.writeUInt32LE(json.length, 8);
  // The JSON sits between the fixed start and its padding.
  return [start.subarray(0, 16), json, start.subarray(16), ...pieces];
}

/**
 * Writes a snapshot's bytes under a temporary name, then renames the file into place. The pieces may
 * come one at a time (a snapshot stored in the database, a part at a time); if they fail, so does the
 * write, and no file replaces the one in place.
 */
export async function writeSnapshotFile(file: string, pieces: Iterable<Buffer> | AsyncIterable<Buffer>): Promise<void> {
  await removeStaleTemporaries(file);
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temporary, 'w', 0o600);
  try {
    // Whatever the process umask made of the mode given to open.
    await handle.chmod(0o600);
    // writeFile, on a handle, writes each piece whole from the current position.
    for await (const piece of pieces) await handle.writeFile(piece);
    await handle.close();
    await rename(temporary, file);
  } catch (error) {
    await handle.close().catch(() => {});
    await rm(temporary, { force: true });
    throw error;
  }
}

/** A temporary file this old was left by a writer that died (killed while writing), not one at work. */
const STALE_TEMPORARY_MS = 10 * 60_000;

async function removeStaleTemporaries(file: string): Promise<void> {
  const prefix = `${path.basename(file)}.`;
  const dir = path.dirname(file);
  for (const name of await readdir(dir).catch(() => [])) {
    if (!name.startsWith(prefix) || !name.endsWith('.tmp')) continue;
    const stale = await stat(path.join(dir, name)).then(
      (s) => Date.now() - s.mtimeMs > STALE_TEMPORARY_MS,
      () => false,
    );
    if (stale) await rm(path.join(dir, name), { force: true });
  }
}

/**
 * Frees bytes now that nothing needs them (a stored snapshot's part once written to the file, a text
 * once read): the garbage collector may leave them for minutes. Only a buffer that owns its whole
 * memory is freed (a small one may share Node's pool with other buffers).
 */
export function releaseBytes(bytes: Buffer): void {
  const memory = bytes.buffer;
  if (memory instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === memory.byteLength && memory.byteLength > 0 && !memory.detached)
    // Detaching drops the memory at once; the bytes read as empty after.
    memory.transfer(0);
}

export interface Snapshot {
  fields: Record<string, unknown>;
  sections: Record<string, SnapshotParts>;
}

/** Reads exactly `into.byteLength` bytes at `position`; false when the file ends first. */
async function readExactly(handle: FileHandle, into: Uint8Array, position: number): Promise<boolean> {
  for (let done = 0; done < into.byteLength; ) {
    const { bytesRead } = await handle.read(into, done, into.byteLength - done, position + done);
    if (bytesRead === 0) return false;
    done += bytesRead;
  }
  return true;
}

/**
 * The caller's fields and the sections of a snapshot file; null when it is not a whole snapshot.
 * Each piece is read into the array or string that keeps it, not the whole file into one buffer
 * first: the 53 MB of a quarter of a million products' file stayed in memory until the garbage
 * collector came to it, minutes later at times, and a server whose index the builder process built
 * measured 384 MB resident instead of 316. `room` gives an array that many elements of room after it
 * (see grow). Fails when the file cannot be read.
 */
export async function readSnapshot(file: string, room: (section: string, key: string, length: number) => number = () => 0): Promise<Snapshot | null> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const start = Buffer.alloc(16);
    if (size < 16 || !(await readExactly(handle, start, 0)) || start.toString('latin1', 0, 8) !== MAGIC) return null;
    const length = start.readUInt32LE(8);
    if (16 + length > size) return null;
    const json = Buffer.alloc(length);
    if (!(await readExactly(handle, json, 16))) return null;
    let header: FileHeader;
    try {
      header = JSON.parse(json.toString('utf8')) as FileHeader;
    } catch {
      return null;
    }
    const base = align(16 + length);
    if (size !== base + header.size) return null;
    const within = (at: PieceAt) =>
      Number.isSafeInteger(at.offset) && Number.isSafeInteger(at.bytes) && at.offset >= 0 && at.bytes >= 0 && at.offset + at.bytes <= header.size;
    const sections: Record<string, SnapshotParts> = {};
    for (const [name, section] of Object.entries(header.sections)) {
      const parts: SnapshotParts = { meta: section.meta, texts: {}, arrays: {} };
      for (const [key, at] of Object.entries(section.texts)) {
        if (!within(at)) return null;
        const bytes = Buffer.allocUnsafeSlow(at.bytes);
        if (!(await readExactly(handle, bytes, base + at.offset))) return null;
        parts.texts[key] = bytes.toString(at.encoding);
        releaseBytes(bytes);
      }
      for (const [key, at] of Object.entries(section.arrays)) {
        const type = ARRAY_TYPES[at.type];
        if (!within(at) || !type || at.bytes % type.BYTES_PER_ELEMENT !== 0) return null;
        const length = at.bytes / type.BYTES_PER_ELEMENT;
        // Room after the array, for the caller's columns that grow in place (store.ts, grow).
        const array = new type(length + room(name, key, length)).subarray(0, length);
        if (!(await readExactly(handle, new Uint8Array(array.buffer, 0, at.bytes), base + at.offset))) return null;
        parts.arrays[key] = array;
      }
      sections[name] = parts;
    }
    return { fields: header.fields, sections };
  } finally {
    await handle.close();
  }
}
